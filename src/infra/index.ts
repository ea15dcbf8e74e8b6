/**
 * The Pulumi program (`pulumi up -s <stack>`): reads and validates the stack, creates the
 * components, exports outputs. It only wires; each component is one file in this folder.
 * Pulumi runs the default export; the engine tests run it through the SDK's own run entry
 * (test/infra/engine), `svcops render` under the mock runtime.
 *
 * Every Kubernetes object goes through one explicit provider with mutable Secrets and ConfigMaps:
 * with the defaults, pulumi-kubernetes replaces a Secret or ConfigMap whose data changes, and
 * since ours have fixed names it deletes the old one before it creates the new one — a window in
 * which a pod that starts fails on a missing reference. With the flags they are updated in place.
 */
import * as k8s from '@pulumi/kubernetes'
import * as pulumi from '@pulumi/pulumi'
import * as random from '@pulumi/random'
import type { WorkloadConfig } from '../config/deploy.ts'
import { BadInputError } from '../core/errors.ts'
import { redact } from '../core/redact.ts'
import { authTokenLifetime } from '../releases/versions.ts'
import { labelsOf, PART_OF } from './kube.ts'
import { createDefaultDeny } from './networkPolicy.ts'
import { Manager } from './manager.ts'
import { MediaComponent, type MediaKind } from './mediaComponent.ts'
import { Psk } from './pskSecret.ts'
import { RecordingService } from './recordingService.ts'
import { ownStackFile, readStackSettings, type StackSettings } from './settings.ts'
import { SystemController } from './systemController.ts'
import { Tls } from './tls.ts'
import { isLoopbackUrl, ScheduledJobs } from './scheduledJobs.ts'
import { namespaceProviderArgs, providerArgs } from './clusterProvider.ts'
import { ObjectInventory } from './inventory.ts'
import { checkNoDowngrade } from './downgradeGuard.ts'
import type { WorkloadArgs } from './workload.ts'

/** Stack outputs: where things are and which versions run; never a secret value. */
export interface PlatformOutputs {
  namespace: pulumi.Output<string>
  endpoints: {
    manager: pulumi.Output<string>
    recording: pulumi.Output<string>
    systemController: pulumi.Output<string>
    renderingEngines?: pulumi.Output<string>
  }
  psk: { secretName: pulumi.Output<string>; secretKey: string; rotation: string; passesEntropyCheck: pulumi.Output<boolean> }
  versions: { manager: string; recording: string; live: string }
  tls: boolean
  upgradeSchedule?: { cronJob: pulumi.Output<string>; schedule: string; timeZone: string; to: string }
  liveUpgradeSchedule?: { cronJob: pulumi.Output<string>; schedule: string; timeZone: string; to: string }
  backupSchedule?: { cronJob: pulumi.Output<string>; schedule: string; timeZone: string }
}

function wire(s: StackSettings): PlatformOutputs {
  const { deploy, env } = s
  const { prefix, dir: productDir } = env.product
  const live = deploy.live
  const pull = deploy.imagePullSecret ? { imagePullSecret: deploy.imagePullSecret } : {}
  // Every object declared from here on, for the scheduled upgrades' Roles (what a refresh reads).
  const inventory = new ObjectInventory()

  // The explicit provider does not read the stack's kubernetes:* keys as the default one does.
  const context = new pulumi.Config('kubernetes').get('context')
  const provider = new k8s.Provider('kubernetes', providerArgs(s.stack, context))
  const inCluster: pulumi.ComponentResourceOptions = { providers: { kubernetes: provider } }

  // Restart annotations are HMACs under this key (kube.ts checksumOf), never plain hashes of secrets.
  const checksumKey = pulumi.secret(new random.RandomPassword('checksum-key', { length: 43, special: false }).result)

  // The fields every component's Args shares, from one workload's config.
  const workload = (cfg: WorkloadConfig, version: string): WorkloadArgs => ({
    namespace,
    version,
    image: cfg.image,
    ...(cfg.digest ? { digest: cfg.digest } : {}),
    replicas: cfg.replicas,
    resources: cfg.resources,
    nodeSelector: cfg.nodeSelector,
    tolerations: cfg.tolerations,
    checksumKey,
    ...pull,
  })

  const platformLabels = { 'app.kubernetes.io/part-of': PART_OF, 'app.kubernetes.io/managed-by': 'pulumi' }
  // Deleting a namespace deletes everything in it, the recordings' claim included: `pulumi destroy`
  // leaves it in the cluster (and the claim is protected besides; see docs/deploy.md).
  // The runbook creates the namespace before the first `pulumi up` (its Secrets and claims go in
  // first): the Namespace alone is declared through a provider that adopts an existing object.
  const ns = new k8s.core.v1.Namespace(
    'namespace',
    { metadata: { name: deploy.namespace, labels: { ...platformLabels, 'pod-security.kubernetes.io/enforce': 'restricted' } } },
    { provider: new k8s.Provider('kubernetes-namespace', namespaceProviderArgs(s.stack, context)), retainOnDelete: true },
  )
  const namespace: pulumi.Output<string> = ns.metadata.name

  const psk = new Psk(
    `${prefix}-psk`,
    {
      namespace,
      rotation: deploy.pskRotation,
      ...(s.secrets.psk !== undefined ? { supplied: s.secrets.psk } : {}),
      labels: labelsOf({ name: 'psk', instance: `${prefix}-psk`, component: 'live-production', version: live.version }),
      checksumKey,
    },
    inCluster,
  )
  const pskRef = { secretName: psk.secretName, secretKey: psk.secretKey, value: psk.value, checksum: psk.checksum }

  const scName = `${prefix}-system-controller`
  const managerName = `${prefix}-manager`
  const serviceNames = (svc: string) => [
    svc,
    `${svc}.${deploy.namespace}`,
    `${svc}.${deploy.namespace}.svc`,
    `${svc}.${deploy.namespace}.svc.cluster.local`,
  ]
  // The manager's external host (svcops:manager.url) when users reach it over https.
  const managerUrl = env.manager?.url ? new URL(env.manager.url) : undefined
  const managerHosts = managerUrl?.protocol === 'https:' ? [managerUrl.hostname] : []
  const tls = deploy.tls
    ? new Tls(
        `${prefix}-tls`,
        {
          namespace,
          dnsNames: serviceNames(scName),
          managerDnsNames: [...new Set([...serviceNames(managerName), ...managerHosts])],
          labels: labelsOf({ name: 'tls', instance: `${prefix}-tls`, component: 'live-production', version: live.version }),
          checksumKey,
        },
        inCluster,
      )
    : undefined

  const sc = live.systemController
  const controller = new SystemController(
    scName,
    {
      ...workload(sc, sc.version ?? live.version),
      port: sc.port,
      healthPath: sc.healthPath,
      prefix,
      productDir,
      psk: pskRef,
      settings: sc.settings,
      ...(sc.legacySettingsDir ? { legacySettingsDir: sc.legacySettingsDir } : {}),
      ...(tls ? { tls: { secretName: tls.secretName, checksum: tls.checksum } } : {}),
      allowNamespaces: sc.allowNamespaces,
    },
    inCluster,
  )

  // The pipeline before the control panel: control panels are given the engines' headless Service.
  const media: [MediaKind, typeof live.ingest, string[] | undefined][] = [
    ['ingest', live.ingest, undefined],
    ['pipeline', live.pipeline, live.pipeline.tcpEndpoints],
    ['control-panel', live.controlPanel, undefined],
  ]
  let renderingEngines: pulumi.Output<string> | undefined
  const components: pulumi.Resource[] = [controller]
  for (const [kind, cfg, tcpEndpoints] of media) {
    const component = new MediaComponent(
      `${prefix}-${kind}`,
      {
        ...workload(cfg, cfg.version ?? live.version),
        kind,
        prefix,
        productDir,
        psk: pskRef,
        controllerUrl: controller.url,
        controller: { port: sc.port, deployment: controller.deployment },
        ...(kind === 'control-panel' && renderingEngines ? { renderingEngines } : {}),
        ...(tcpEndpoints ? { tcpEndpoints } : {}),
        ...(tls ? { ca: { configMapName: tls.caConfigMapName, checksum: tls.caChecksum } } : {}),
        ...(live.metrics ? { metrics: live.metrics } : {}),
      },
      inCluster,
    )
    renderingEngines ??= component.enginesEndpoint
    components.push(component)
  }

  const m = deploy.manager
  const apiRevision = env.manager?.apiRevision ?? '1.6.2'
  const manager = new Manager(
    managerName,
    {
      ...workload(m, m.version),
      port: m.port,
      identityUrl: m.identityUrl,
      tokenLifetimeSeconds: m.tokenLifetimeSeconds ?? authTokenLifetime(apiRevision),
      apiRevision,
      prefix,
      productDir,
      ...(tls ? { tls: tls.manager } : {}),
    },
    inCluster,
  )

  const r = deploy.recording
  // What runs in the cluster is read before the recording service is declared: a stale checkout fails here.
  const versionChecked = checkNoDowngrade({
    declared: s.recordingVersion,
    file: s.file,
    stack: s.stack,
    namespace: deploy.namespace,
    deployment: `${prefix}-recording`,
    container: 'recording-service',
    provider,
    allowDowngrade: s.env.allowDowngrade === true,
  })
  const recording = new RecordingService(
    `${prefix}-recording`,
    {
      ...workload(r, s.recordingVersion),
      port: r.port,
      storage: r.storage,
      database: s.recordingDatabase,
      databasePassword: pulumi.secret(s.secrets.databasePassword),
      prefix,
      versionChecked,
      managerPort: m.port,
      ...(r.heldReplicas !== undefined ? { heldReplicas: r.heldReplicas } : {}),
    },
    inCluster,
  )

  const u = deploy.upgradeSchedule
  const l = deploy.liveUpgradeSchedule
  const b = deploy.backupSchedule
  const store = env.backup?.store
  // readStackSettings refused schedules without deploy.jobs and backup.
  const schedule =
    deploy.jobs && (u || l || b)
      ? new ScheduledJobs(
          `${prefix}-svcops`,
          {
            namespace,
            namespaceName: deploy.namespace,
            stack: s.stack,
            stackFile: ownStackFile(s.stack).text,
            jobs: deploy.jobs,
            ...(context ? { kubeContext: context } : {}),
            ...(store && !store.ssh ? { backupStorePath: store.path } : {}),
            objects: inventory.objects,
            prefix,
            metrics: live.metrics !== undefined,
            // The jobs run in the cluster: a manager.url of the operators' machine is the pod there.
            ...(env.manager?.url && isLoopbackUrl(env.manager.url) ? { managerUrl: manager.url } : {}),
            ...(u ? { upgrade: { schedule: u.schedule, timeZone: u.timeZone, to: u.to, ...(u.window ? { window: u.window } : {}) } } : {}),
            ...(l ? { liveUpgrade: { schedule: l.schedule, timeZone: l.timeZone, to: l.to, acks: l.acks } } : {}),
            ...(b
              ? {
                  backup: {
                    schedule: b.schedule,
                    timeZone: b.timeZone,
                    ...(b.keepLast !== undefined ? { keepLast: b.keepLast } : {}),
                    ...(b.keepDays !== undefined ? { keepDays: b.keepDays } : {}),
                  },
                }
              : {}),
            ...pull,
          },
          inCluster,
        )
      : undefined

  // Last: on a namespace that already runs the platform, closing it before every workload's own
  // policy exists would cut live traffic.
  createDefaultDeny(
    'default-deny',
    { namespace, labels: platformLabels },
    { provider, dependsOn: [...components, manager, recording, ...(schedule ? [schedule] : [])] },
  )
  inventory.seal()

  return {
    namespace,
    endpoints: {
      manager: manager.url,
      recording: recording.url,
      systemController: controller.url,
      ...(renderingEngines ? { renderingEngines } : {}),
    },
    psk: { secretName: psk.secretName, secretKey: psk.secretKey, rotation: deploy.pskRotation, passesEntropyCheck: psk.passesEntropyCheck },
    versions: { manager: m.version, recording: s.recordingVersion, live: live.version },
    tls: deploy.tls,
    ...(schedule?.upgradeCronJob && u
      ? { upgradeSchedule: { cronJob: schedule.upgradeCronJob, schedule: u.schedule, timeZone: u.timeZone, to: u.to } }
      : {}),
    ...(schedule?.liveUpgradeCronJob && l
      ? { liveUpgradeSchedule: { cronJob: schedule.liveUpgradeCronJob, schedule: l.schedule, timeZone: l.timeZone, to: l.to } }
      : {}),
    ...(schedule?.backupCronJob && b
      ? { backupSchedule: { cronJob: schedule.backupCronJob, schedule: b.schedule, timeZone: b.timeZone } }
      : {}),
  }
}

/** The program. Bad configuration becomes a RunError: Pulumi prints its one sentence without a stack trace. */
export default function program(): PlatformOutputs {
  try {
    return wire(readStackSettings())
  } catch (error) {
    if (error instanceof BadInputError) throw new pulumi.RunError(redact(error.hint ? `${error.message} ${error.hint}` : error.message))
    throw error
  }
}
