/**
 * svcops' own jobs in the cluster: the scheduled upgrades of the recording service
 * (`svcops upgrade recording --env <stack> --to <v> --yes --json`) and of the live production system
 * (`svcops upgrade live --env <stack> --to <v> [--ack ...] --yes --json`), each in its maintenance
 * window, and the nightly backup (`svcops backup run --env <stack> --json`: create, verify with a
 * test restore, prune). Each runs the svcops image (Containerfile) with what its steps need and
 * nothing more:
 * - the stack file exactly as Pulumi reads it (secure values as their ciphertexts), from a ConfigMap
 *   the program writes; an upgrade's init container copies it to a writable 0600 file next to the
 *   image's Pulumi.yaml, where `pulumi config set --path` rewrites it and `pulumi up` runs;
 * - the credentials and the backup keys from two existing Secrets, copied by an init container to
 *   0600 files in memory (Kubernetes mounts Secrets group-readable with an fsGroup, and svcops
 *   refuses a key file that others can read);
 * - the backup store (a PersistentVolumeClaim at `backup.store.path`, or the SSH store);
 * - a runs volume (`SVCOPS_RUNS_DIR`, `SVCOPS_STATE_DIR`, `TMPDIR`), so journals, reports and the
 *   private copy a restore makes live outside the pod and its small /tmp;
 * - a ServiceAccount each: an upgrade's is bound to a Role of exactly the rights its run uses,
 *   derived from the objects the stack renders (jobRights.ts); the backup's gets no API token.
 */
import * as k8s from '@pulumi/kubernetes'
import * as pulumi from '@pulumi/pulumi'
import { DEFAULT_SCHEDULED_KEEP_LAST, type JobsConfig } from '../config/deploy.ts'
import { BadInputError } from '../core/errors.ts'
import { svcopsCommand } from '../core/paths.ts'
import { jobRights, roleRules, type JobSystem, type StackObject } from './jobRights.ts'
import { JOB_PATHS } from './jobRules.ts'
import { containerSecurity, labelsOf, podSecurity, pullSecretsOf, selectorOf, TMP_MOUNT, TMP_VOLUME, type AppIdentity } from './kube.ts'
import { createNetworkPolicy } from './networkPolicy.ts'

/** Kept for the names the CronJob mounts; the stack file's folder. */
export const STACKS_DIR = JOB_PATHS.stacks

/** The Node of the svcops image: the base image's (node:24), its only one (the Containerfile installs no optional dependency). */
export const IMAGE_NODE = '/usr/local/bin/node'
/** The executable in the image (WORKDIR /opt/svcops, `COPY bin ./bin`). */
export const IMAGE_SVCOPS = '/opt/svcops/bin/svcops'

/**
 * How a job starts svcops: the image's Node named in full, so the CronJob says which Node runs it,
 * with the executable's own V8 flags (read from its `#!` line, as every other start of it does).
 */
export function imageSvcopsCommand(): string[] {
  const [, ...flagsAndBin] = svcopsCommand()
  return [IMAGE_NODE, ...flagsAndBin.slice(0, -1), IMAGE_SVCOPS]
}

/** The command of the scheduled upgrade; `window`: its maintenance window from the job's start (`--window`). */
export function upgradeCommand(stack: string, to: string, window?: string): string[] {
  return [
    ...imageSvcopsCommand(),
    'upgrade',
    'recording',
    '--env',
    stack,
    '--to',
    to,
    ...(window ? ['--window', window] : []),
    '--yes',
    '--json',
  ]
}

/** The command of the scheduled upgrade of the live production system; `acks` are the gates people have handled. */
export function liveUpgradeCommand(stack: string, to: string, acks: string[]): string[] {
  return ['svcops', 'upgrade', 'live', '--env', stack, '--to', to, ...(acks.length ? ['--ack', acks.join(',')] : []), '--yes', '--json']
}

/** The command of the scheduled backup: the nightly backup playbook, pruning by the schedule's retention (its default when it names none). */
export function backupCommand(stack: string, retention: { keepLast?: number; keepDays?: number } = {}): string[] {
  const { keepLast, keepDays } =
    retention.keepLast === undefined && retention.keepDays === undefined
      ? { keepLast: DEFAULT_SCHEDULED_KEEP_LAST, keepDays: undefined }
      : retention
  return [
    ...imageSvcopsCommand(),
    'backup',
    'run',
    '--env',
    stack,
    ...(keepLast !== undefined ? ['--keep-last', String(keepLast)] : []),
    ...(keepDays !== undefined ? ['--keep-days', String(keepDays)] : []),
    '--json',
  ]
}

/** Where the two Secrets are mounted as Kubernetes writes them, before the init container copies them. */
export const SECRET_SOURCES = '/var/run/svcops-secrets'

/**
 * The init container's script: owner-only copies of every file of both Secrets (Kubernetes mounts
 * them as symlinks into a `..data` folder, group-readable), and the folders of the runs volume;
 * for the upgrade (`stack`), an owner-only copy of the stack file into the project's writable
 * stacks folder. `root` prefixes every path, for a test to run the script in a temp dir.
 */
export function copySecretsScript(root = '', kube?: { context: string; namespace: string }, stack?: string): string {
  if (stack !== undefined && !/^[a-z0-9][a-z0-9_-]*$/.test(stack))
    throw new BadInputError(`stack: "${stack}" is not valid; expected lower-case letters, digits, '-' or '_'.`)
  return [
    'umask 077',
    `for dir in credentials backup-keys; do for f in ${root}${SECRET_SOURCES}/$dir/*; do if [ -f "$f" ]; then cp "$f" ${root}/etc/svcops/$dir/; fi; done; done`,
    `mkdir -p ${root}${JOB_PATHS.runs} ${root}${JOB_PATHS.state} ${root}${JOB_PATHS.data}/tmp`,
    ...(stack !== undefined ? [`cp ${root}${JOB_PATHS.stacks}/Pulumi.${stack}.yaml ${root}${JOB_PATHS.projectStacks}/`] : []),
    ...(kube
      ? [`cat > ${root}${KUBECONFIG} <<'EOF'\n${inClusterKubeconfig(kube.context, kube.namespace, `${root}${SERVICE_ACCOUNT}`)}EOF`]
      : []),
  ].join('\n')
}

/** Where the upgrade job's kubeconfig is written (the shared temp volume). */
export const KUBECONFIG = '/tmp/kubeconfig'

const SERVICE_ACCOUNT = '/var/run/secrets/kubernetes.io/serviceaccount'

/**
 * A kubeconfig for the pod's own ServiceAccount under the context name the stack gives
 * (`kubernetes:context`), so that the Pulumi program's provider and the client library find the
 * context they were configured with. It names the token and CA files; it holds neither. The token
 * file is named twice, once for each reader: @kubernetes/client-node (svcops' own API calls) reads
 * `token-file` (its dist/config_types.js knows `token` and `token-file` only), client-go (Pulumi's
 * provider) reads `tokenFile` (clientcmd/api/v1 AuthInfo); each ignores the other's key.
 */
export function inClusterKubeconfig(context: string, namespace: string, serviceAccount = SERVICE_ACCOUNT): string {
  if (!/^[A-Za-z0-9._@:/-]+$/.test(context) || !/^[a-z0-9-]+$/.test(namespace))
    throw new BadInputError(`kubernetes:context: "${context}" is not valid; expected letters, digits and . _ @ : / -.`)
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '  - name: in-cluster',
    '    cluster:',
    '      server: https://kubernetes.default.svc',
    `      certificate-authority: ${serviceAccount}/ca.crt`,
    'users:',
    '  - name: service-account',
    '    user:',
    `      token-file: ${serviceAccount}/token`,
    `      tokenFile: ${serviceAccount}/token`,
    'contexts:',
    `  - name: ${context}`,
    '    context:',
    '      cluster: in-cluster',
    '      user: service-account',
    `      namespace: ${namespace}`,
    `current-context: ${context}`,
    '',
  ].join('\n')
}

export interface ScheduledJobsArgs {
  namespace: pulumi.Input<string>
  /** The namespace's name as configured (for the kubeconfig's context). */
  namespaceName: string
  /** Stack (environment) name passed to `--env`. */
  stack: string
  /** The stack file as Pulumi reads it (its text from disk: secure values are ciphertexts). */
  stackFile: string
  jobs: JobsConfig
  /** `backup.store.path` when the store is a local directory (mounted from `jobs.backupStoreClaim`). */
  backupStorePath?: string
  upgrade?: { schedule: string; timeZone: string; to: string; window?: string }
  /** The live production system's scheduled upgrade; `acks`: gates people have handled. */
  liveUpgrade?: { schedule: string; timeZone: string; to: string; acks: string[] }
  backup?: { schedule: string; timeZone: string; keepLast?: number; keepDays?: number }
  /** Every object the stack declares (the program's inventory): what an upgrade's refresh reads back. */
  objects: pulumi.Input<StackObject[]>
  /** Product prefix (`svc`): the names the upgrades write. */
  prefix: string
  /** The media components serve metrics: the live upgrade reads them through the pod proxy. */
  metrics: boolean
  imagePullSecret?: string
  /** The stack's `kubernetes:context`: the upgrade job gets a kubeconfig of that name for its ServiceAccount. */
  kubeContext?: string
  /**
   * The manager's Service URL, given to the jobs (SVCOPS_MANAGER_URL, which replaces `manager.url`
   * where svcops loads the stack) when `manager.url` is a loopback address: one of the operators'
   * machine (a port-forward), which in a pod is the pod itself.
   */
  managerUrl?: pulumi.Input<string>
}

/** Whether `url`'s host is a loopback address (127.0.0.0/8, ::1, localhost): nothing another machine or a pod reaches. */
export function isLoopbackUrl(url: string): boolean {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '')
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host)
}

/** A job of this component: the two upgrades talk to the Kubernetes API and run Pulumi; the backup does neither. */
type JobKind = 'upgrade' | 'live-upgrade' | 'backup'

const SYSTEM: Record<Exclude<JobKind, 'backup'>, JobSystem> = { upgrade: 'recording', 'live-upgrade': 'live' }

export class ScheduledJobs extends pulumi.ComponentResource {
  readonly upgradeCronJob?: pulumi.Output<string>
  readonly liveUpgradeCronJob?: pulumi.Output<string>
  readonly backupCronJob?: pulumi.Output<string>

  constructor(name: string, args: ScheduledJobsArgs, opts?: pulumi.ComponentResourceOptions) {
    super('svcops:infra:ScheduledJobs', name, {}, opts)
    const tag = args.jobs.image.slice(args.jobs.image.lastIndexOf(':') + 1)
    const parent = { parent: this }
    const stackMap = new k8s.core.v1.ConfigMap(
      `${name}-stack`,
      {
        metadata: { name: `${name}-stack`, namespace: args.namespace, labels: labelsOf(identityOf(name, 'stack', tag)) },
        data: { [`Pulumi.${args.stack}.yaml`]: args.stackFile },
      },
      parent,
    )
    const job = (kind: JobKind, schedule: { schedule: string; timeZone: string }, command: string[]): pulumi.Output<string> => {
      const jobName = `${name}-${kind}`
      const identity = identityOf(name, kind, tag)
      const account = new k8s.core.v1.ServiceAccount(
        `${jobName}-account`,
        {
          metadata: { name: jobName, namespace: args.namespace, labels: labelsOf(identity) },
          automountServiceAccountToken: kind !== 'backup',
        },
        parent,
      )
      if (kind !== 'backup') {
        const system = SYSTEM[kind]
        const rules = pulumi
          .output(args.objects)
          .apply((objects) => roleRules(jobRights({ system, prefix: args.prefix, objects, metrics: args.metrics })))
        const role = new k8s.rbac.v1.Role(
          `${jobName}-role`,
          { metadata: { name: jobName, namespace: args.namespace, labels: labelsOf(identity) }, rules },
          parent,
        )
        new k8s.rbac.v1.RoleBinding(
          `${jobName}-binding`,
          {
            metadata: { name: jobName, namespace: args.namespace, labels: labelsOf(identity) },
            roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role.metadata.name },
            subjects: [{ kind: 'ServiceAccount', name: account.metadata.name, namespace: args.namespace }],
          },
          parent,
        )
      }
      const cron = new k8s.batch.v1.CronJob(
        `${jobName}-cronjob`,
        {
          metadata: { name: jobName, namespace: args.namespace, labels: labelsOf(identity) },
          spec: {
            schedule: schedule.schedule,
            timeZone: schedule.timeZone,
            // Two runs at once would fight over the environment's lock; a missed window is skipped, not caught up late.
            concurrencyPolicy: 'Forbid',
            startingDeadlineSeconds: 3600,
            successfulJobsHistoryLimit: 3,
            failedJobsHistoryLimit: 5,
            jobTemplate: {
              metadata: { labels: labelsOf(identity) },
              spec: {
                // svcops rolls back by itself and `svcops resume` continues a killed run; a blind retry is not safe.
                backoffLimit: 0,
                template: {
                  metadata: { labels: { ...labelsOf(identity), ...selectorOf(identity) } },
                  spec: podSpec(args, kind, command, account.metadata.name, stackMap.metadata.name),
                },
              },
            },
          },
        },
        parent,
      )
      // svcops reaches the recording service, its database, the manager, the backup store and the
      // Kubernetes API: outgoing connections are open, nothing connects to the job.
      createNetworkPolicy(`${jobName}-network-policy`, { identity, namespace: args.namespace, ingress: [], egress: [{}] }, this)
      return cron.metadata.name
    }
    if (args.upgrade) this.upgradeCronJob = job('upgrade', args.upgrade, upgradeCommand(args.stack, args.upgrade.to, args.upgrade.window))
    if (args.liveUpgrade)
      this.liveUpgradeCronJob = job(
        'live-upgrade',
        args.liveUpgrade,
        liveUpgradeCommand(args.stack, args.liveUpgrade.to, args.liveUpgrade.acks),
      )
    if (args.backup) this.backupCronJob = job('backup', args.backup, backupCommand(args.stack, args.backup))
    this.registerOutputs({
      upgradeCronJob: this.upgradeCronJob,
      liveUpgradeCronJob: this.liveUpgradeCronJob,
      backupCronJob: this.backupCronJob,
    })
  }
}

/**
 * Each job its own instance (`<name>-<kind>`): a workload's NetworkPolicy is named after its
 * instance, and two jobs sharing one would be two Pulumi resources writing one object.
 */
function identityOf(name: string, kind: string, tag: string): AppIdentity {
  return { name: `svcops-${kind}`, instance: `${name}-${kind}`, component: 'maintenance', version: tag }
}

/** The job's pod: the init container that copies the Secrets, then svcops. */
function podSpec(
  args: ScheduledJobsArgs,
  kind: JobKind,
  command: string[],
  serviceAccount: pulumi.Input<string>,
  stackMap: pulumi.Input<string>,
): k8s.types.input.core.v1.PodSpec {
  const { jobs } = args
  const store =
    args.backupStorePath !== undefined && jobs.backupStoreClaim ? { path: args.backupStorePath, claim: jobs.backupStoreClaim } : undefined
  const copies = [
    { name: 'credentials', mountPath: JOB_PATHS.credentials },
    { name: 'backup-keys', mountPath: JOB_PATHS.backupKeys },
  ]
  const data = { name: 'data', mountPath: JOB_PATHS.data }
  const upgrade = kind !== 'backup'
  const kube = upgrade && args.kubeContext ? { context: args.kubeContext, namespace: args.namespaceName } : undefined
  // An upgrade runs `pulumi config set --path` on its stack file: a writable copy next to Pulumi.yaml.
  const stack = { name: 'stack', mountPath: JOB_PATHS.stacks, readOnly: true }
  const projectStacks = { name: 'project-stacks', mountPath: JOB_PATHS.projectStacks }
  return {
    restartPolicy: 'Never',
    serviceAccountName: serviceAccount,
    automountServiceAccountToken: upgrade,
    securityContext: podSecurity(),
    ...pullSecretsOf(args.imagePullSecret),
    initContainers: [
      {
        name: 'secrets',
        image: jobs.image,
        command: ['sh', '-ec', copySecretsScript('', kube, upgrade ? args.stack : undefined)],
        securityContext: containerSecurity(),
        resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { memory: '64Mi' } },
        volumeMounts: [
          { name: 'credentials-secret', mountPath: `${SECRET_SOURCES}/credentials`, readOnly: true },
          { name: 'backup-keys-secret', mountPath: `${SECRET_SOURCES}/backup-keys`, readOnly: true },
          ...copies,
          data,
          TMP_MOUNT,
          ...(upgrade ? [stack, projectStacks] : []),
        ],
      },
    ],
    containers: [
      {
        name: kind,
        image: jobs.image,
        command,
        env: [
          { name: 'SVCOPS_STACKS_DIR', value: upgrade ? JOB_PATHS.projectStacks : JOB_PATHS.stacks },
          { name: 'SVCOPS_RUNS_DIR', value: JOB_PATHS.runs },
          { name: 'SVCOPS_STATE_DIR', value: JOB_PATHS.state },
          { name: 'TMPDIR', value: `${JOB_PATHS.data}/tmp` },
          { name: 'HOME', value: '/tmp' },
          { name: 'PULUMI_HOME', value: '/tmp/.pulumi' },
          ...(kube ? [{ name: 'KUBECONFIG', value: KUBECONFIG }] : []),
          ...(args.managerUrl ? [{ name: 'SVCOPS_MANAGER_URL', value: args.managerUrl }] : []),
        ],
        envFrom: [{ secretRef: { name: jobs.credentialsSecret } }],
        securityContext: containerSecurity(),
        resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '512Mi' } },
        volumeMounts: [
          TMP_MOUNT,
          upgrade ? projectStacks : stack,
          ...copies.map((c) => ({ ...c, readOnly: true })),
          data,
          ...(store ? [{ name: 'backup-store', mountPath: store.path }] : []),
        ],
      },
    ],
    volumes: [
      TMP_VOLUME,
      { name: 'stack', configMap: { name: stackMap } },
      { name: 'credentials-secret', secret: { secretName: jobs.credentialsSecret, defaultMode: 0o400 } },
      { name: 'backup-keys-secret', secret: { secretName: jobs.backupKeysSecret, defaultMode: 0o400 } },
      { name: 'credentials', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } },
      { name: 'backup-keys', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } },
      { name: 'data', persistentVolumeClaim: { claimName: jobs.runsClaim } },
      ...(upgrade ? [{ name: 'project-stacks', emptyDir: { sizeLimit: '1Mi' } }] : []),
      ...(store ? [{ name: 'backup-store', persistentVolumeClaim: { claimName: store.claim } }] : []),
    ],
  }
}
