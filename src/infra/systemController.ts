/**
 * The system controller of the live production system: its settings file (which holds the PSK,
 * so it is a Secret) mounted read-only as a directory in `/etc/opt/<product_dir>` — a directory
 * mount, not a subPath, because subPath mounts never see an updated Secret — `--settings-path`
 * where the release supports it, probes on the release's API prefix, and a NetworkPolicy that
 * lets only the platform's own pods reach it.
 *
 * One pod, restarted by Recreate: during a PSK rotation the old controller stops before the new
 * one starts, so at no time do two controllers hold two different keys. The media components
 * depend on the controller's Deployment, so `pulumi up` rolls them only once it is ready.
 */
import * as k8s from '@pulumi/kubernetes'
import * as pulumi from '@pulumi/pulumi'
import { BadInputError } from '../core/errors.ts'
import {
  apiPrefix,
  pskVariable,
  settingsFileName,
  settingsPathFlag,
  settingsSearchPaths,
  supportsSettingsPathFlag,
} from '../releases/versions.ts'
import { checksumOf, labelsOf, secretData, serviceHost, type AppIdentity } from './kube.ts'
import { createNetworkPolicy, namespaceNamed, PLATFORM_PODS, tcp } from './networkPolicy.ts'
import { createService, createWorkload, type WorkloadArgs } from './workload.ts'

/** Where the settings directory is mounted: the directory the product searches from 6.0. */
export function settingsDirectory(productDir: string): string {
  return `/etc/opt/${productDir}`
}

/** Where the controller's TLS key pair is mounted. */
export function tlsDirectory(productDir: string): string {
  return `/etc/ssl/${productDir}/server`
}

/**
 * Variables svcops gives to the platform's images besides the product's own: the seed does not
 * name the controller's address or TLS options, so the images' entrypoints read these.
 */
export function controllerVariables(prefix: string): { url: string; caFile: string; certFile: string; keyFile: string } {
  const p = prefix.toUpperCase()
  return {
    url: `${p}_SYSTEM_CONTROLLER_URL`,
    caFile: `${p}_SYSTEM_CONTROLLER_CA_FILE`,
    certFile: `${p}_SYSTEM_CONTROLLER_TLS_CERT_FILE`,
    keyFile: `${p}_SYSTEM_CONTROLLER_TLS_KEY_FILE`,
  }
}

/** The PSK as the controller and the media components see it. */
export interface PskRef {
  secretName: pulumi.Input<string>
  secretKey: string
  /** The value (a Pulumi secret), for the settings file. */
  value: pulumi.Output<string>
  /** Keyed checksum annotation of the PSK, the same on every pod that reads it. */
  checksum: pulumi.Input<string>
}

export interface SystemControllerArgs extends WorkloadArgs {
  /** Port of the REST API (1024 or more: the container is not root). */
  port: number
  /** Health path under the release's API prefix. */
  healthPath: string
  /** Product prefix (`svc`): names of the variables and of the settings file. */
  prefix: string
  /** Product folder: the settings directory is `/etc/opt/<productDir>`. */
  productDir: string
  /** The one PSK Secret and its value. */
  psk: PskRef
  /** Further settings-file keys from config. */
  settings: Record<string, unknown>
  /** Settings directory of releases before 6.0, which the seed does not name. */
  legacySettingsDir?: string
  /** TLS key pair Secret and its checksum, when TLS is on. */
  tls?: { secretName: pulumi.Input<string>; checksum: pulumi.Input<string> }
  /** Namespaces besides the platform's own allowed to reach the controller. */
  allowNamespaces: string[]
}

export class SystemController extends pulumi.ComponentResource {
  /** In-cluster URL of the REST API, including the release's API prefix. */
  readonly url: pulumi.Output<string>
  /** The Service's DNS name. */
  readonly host: pulumi.Output<string>
  /** Checksum of the settings file on the pod template. */
  readonly settingsChecksum: pulumi.Output<string>
  /** The Deployment: media components depend on it, so they roll after it during a rotation. */
  readonly deployment: pulumi.Resource

  constructor(name: string, args: SystemControllerArgs, opts?: pulumi.ComponentResourceOptions) {
    super('svcops:infra:SystemController', name, {}, opts)
    const identity: AppIdentity = { name: 'system-controller', instance: name, component: 'live-production', version: args.version }
    const labels = labelsOf(identity)
    const fileName = settingsFileName(args.prefix)
    const directory = settingsDirectory(args.productDir)
    const prefix = apiPrefix(args.version)
    const scheme = args.tls ? 'HTTPS' : 'HTTP'

    if (args.replicas !== 1)
      throw new BadInputError(
        `svcops:deploy.live.systemController.replicas: ${args.replicas} is not valid; expected 1, since two controllers could hold two different PSKs during a rotation.`,
      )
    if ('psk' in args.settings)
      throw new BadInputError(
        'svcops:deploy.live.systemController.settings.psk: the PSK is set by svcops from svcops:psk or the generated one; remove it from the settings.',
      )
    const settingsJson = args.psk.value.apply((psk) => JSON.stringify({ ...args.settings, psk }, null, 2))
    const settings = new k8s.core.v1.Secret(
      `${name}-settings`,
      {
        metadata: { name: `${name}-settings`, namespace: args.namespace, labels },
        type: 'Opaque',
        stringData: secretData({ [fileName]: settingsJson }),
      },
      { parent: this },
    )
    this.settingsChecksum = checksumOf(args.checksumKey, settingsJson)

    const searched = settingsSearchPaths(args.version, args.productDir)
    const flagged = supportsSettingsPathFlag(args.version)
    const extraDirs = !flagged && !searched.includes(directory) && args.legacySettingsDir ? [args.legacySettingsDir] : []
    if (!flagged && !searched.includes(directory) && !args.legacySettingsDir) {
      void pulumi.log.warn(
        `Release ${args.version} of the system controller reads ${fileName} from a fixed application directory that is not documented; it is mounted at ${directory}. Set svcops:deploy.live.systemController.legacySettingsDir if the image looks elsewhere.`,
        this,
      )
    }
    const vars = controllerVariables(args.prefix)
    const tlsDir = tlsDirectory(args.productDir)
    const settingsVolume = { secret: { secretName: settings.metadata.name, defaultMode: 0o440 } }

    const { deployment } = createWorkload(
      name,
      identity,
      args,
      {
        // Stop, then start: never two controllers, never two keys.
        strategy: { type: 'Recreate' },
        // The PSK's checksum is the one every media component carries too, so a rotation restarts
        // them together; settings and TLS changes restart only the controller.
        annotations: {
          'checksum/psk': args.psk.checksum,
          'checksum/settings': this.settingsChecksum,
          ...(args.tls ? { 'checksum/tls': args.tls.checksum } : {}),
        },
        container: {
          ...(flagged ? { args: [settingsPathFlag(), directory] } : {}),
          workingDir: directory,
          ports: [{ name: 'api', containerPort: args.port, protocol: 'TCP' }],
          env: [
            { name: pskVariable(args.prefix), valueFrom: { secretKeyRef: { name: args.psk.secretName, key: args.psk.secretKey } } },
            ...(args.tls
              ? [
                  { name: vars.certFile, value: `${tlsDir}/tls.crt` },
                  { name: vars.keyFile, value: `${tlsDir}/tls.key` },
                ]
              : []),
          ],
          readinessProbe: { httpGet: { path: `${prefix}${args.healthPath}`, port: 'api', scheme }, periodSeconds: 10, failureThreshold: 3 },
          livenessProbe: {
            httpGet: { path: `${prefix}${args.healthPath}`, port: 'api', scheme },
            initialDelaySeconds: 15,
            periodSeconds: 20,
            failureThreshold: 3,
          },
          volumeMounts: [
            { name: 'settings', mountPath: directory, readOnly: true },
            ...extraDirs.map((dir, i) => ({ name: `settings-legacy-${i}`, mountPath: dir, readOnly: true })),
            ...(args.tls ? [{ name: 'tls', mountPath: tlsDir, readOnly: true }] : []),
          ],
        },
        volumes: [
          { name: 'settings', ...settingsVolume },
          ...extraDirs.map((_, i) => ({ name: `settings-legacy-${i}`, ...settingsVolume })),
          ...(args.tls ? [{ name: 'tls', secret: { secretName: args.tls.secretName, defaultMode: 0o440 } }] : []),
        ],
      },
      this,
    )
    const service = createService(`${name}-service`, { identity, namespace: args.namespace, port: args.port, portName: 'api' }, this)

    // Only the platform's pods (and namespaces the stack names) reach the API; it calls out to nothing.
    createNetworkPolicy(
      `${name}-network-policy`,
      {
        identity,
        namespace: args.namespace,
        ingress: [{ from: [PLATFORM_PODS, ...args.allowNamespaces.map(namespaceNamed)], ports: [tcp(args.port)] }],
        egress: [],
      },
      this,
    )

    this.host = pulumi.all([service.metadata.name, pulumi.output(args.namespace)]).apply(([svc, ns]) => serviceHost(svc, ns))
    this.url = this.host.apply((host) => `${args.tls ? 'https' : 'http'}://${host}:${args.port}${prefix}`)
    this.deployment = deployment
    this.registerOutputs({ url: this.url, settingsChecksum: this.settingsChecksum })
  }
}
