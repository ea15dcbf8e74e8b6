/**
 * The recording service: a pinned image, recordings on a volume claim, the database connection in
 * a Secret, readiness on `GET /` (the service's documented health check), a Service and a
 * PodDisruptionBudget.
 *
 * It follows the seed's upgrade order. Schema changes are not backward-compatible, so old and new
 * pods must never run against one schema: the Deployment uses Recreate (stop every pod, then
 * start). The Deployment is the one writer of its replicas: the configured count, or the stack's
 * `heldReplicas` while svcops' upgrade holds them (0 while the service is stopped; 1 while the new
 * version's first pod starts and migrates alone, `pulumi up` waiting until it is ready), each set
 * with `pulumi config set --path` and applied with `pulumi up --target`. Nothing else (no scale
 * subresource, no second Pulumi resource) writes `spec.replicas`, so server-side apply never finds
 * two owners of it. The backup before and the verification after are svcops' upgrade, not this
 * program's.
 *
 * The recordings' claim is protected (no replacement, no delete by `pulumi destroy`) and retained
 * (if it leaves the program, it stays in the cluster). Resizing it is an update in place.
 */
import * as k8s from '@pulumi/kubernetes'
import * as pulumi from '@pulumi/pulumi'
import { checksumOf, labelsOf, secretData, type AppIdentity } from './kube.ts'
import { createNetworkPolicy, podsNamed, tcp } from './networkPolicy.ts'
import { createService, createWorkload, serviceUrl, type WorkloadArgs } from './workload.ts'

/** Where recordings are stored inside the container. */
export const RECORDINGS_DIR = '/var/lib/recordings'

export interface RecordingServiceArgs extends WorkloadArgs {
  /** Port of the HTTP API (1024 or more: the container is not root). */
  port: number
  /** The recordings' volume claim; more than one replica needs ReadWriteMany. */
  storage: { size: string | number; storageClass?: string; accessMode: 'ReadWriteOnce' | 'ReadWriteMany' }
  /** Where the database is (the password comes apart, as a secret). */
  database: { host: string; port: number; name: string; user: string }
  /** Database password (a Pulumi secret). */
  databasePassword: pulumi.Input<string>
  /** Product prefix (`svc`) of the variable names. */
  prefix: string
  /** The version, once checked not to downgrade what runs (downgradeGuard.ts); the Deployment waits for it. */
  versionChecked?: pulumi.Output<string>
  /** Replicas svcops' upgrade holds the Deployment at instead of `replicas` (`svcops:deploy.recording.heldReplicas`). */
  heldReplicas?: number
  /**
   * The manager's port: the service checks the manager's signed access tokens (the seed: a signed
   * JWT carries the scopes), whose keys it reads from the manager; how, the seed does not say, so
   * its pods may reach the manager's pods on that port.
   */
  managerPort?: number
}

export class RecordingService extends pulumi.ComponentResource {
  /** In-cluster base URL (health check at `/`, content API under /api/v1/content). */
  readonly url: pulumi.Output<string>

  constructor(name: string, args: RecordingServiceArgs, opts?: pulumi.ComponentResourceOptions) {
    super('svcops:infra:RecordingService', name, {}, opts)
    const identity: AppIdentity = { name: 'recording-service', instance: name, component: 'recording', version: args.version }
    const labels = labelsOf(identity)
    const p = args.prefix.toUpperCase()

    const password = pulumi.secret(args.databasePassword)
    const connection = {
      [`${p}_DB_HOST`]: args.database.host,
      [`${p}_DB_PORT`]: String(args.database.port),
      [`${p}_DB_NAME`]: args.database.name,
      [`${p}_DB_USER`]: args.database.user,
    }
    const dbSecret = new k8s.core.v1.Secret(
      `${name}-database`,
      {
        metadata: { name: `${name}-database`, namespace: args.namespace, labels },
        type: 'Opaque',
        stringData: secretData({ ...connection, [`${p}_DB_PASSWORD`]: password }),
      },
      { parent: this },
    )
    const claim = new k8s.core.v1.PersistentVolumeClaim(
      `${name}-recordings`,
      {
        metadata: { name: `${name}-recordings`, namespace: args.namespace, labels },
        spec: {
          accessModes: [args.storage.accessMode],
          resources: { requests: { storage: String(args.storage.size) } },
          ...(args.storage.storageClass ? { storageClassName: args.storage.storageClass } : {}),
        },
      },
      // Recordings must outlive a `pulumi destroy` or a mistaken replacement: protect makes the
      // engine refuse both; retainOnDelete leaves the claim in the cluster if it is ever dropped.
      { parent: this, protect: true, retainOnDelete: true },
    )

    createWorkload(
      name,
      identity,
      args,
      {
        annotations: { 'checksum/database': checksumOf(args.checksumKey, JSON.stringify(connection), password) },
        container: {
          envFrom: [{ secretRef: { name: dbSecret.metadata.name } }],
          env: [{ name: `${p}_RECORDINGS_DIR`, value: RECORDINGS_DIR }],
          ports: [{ name: 'http', containerPort: args.port, protocol: 'TCP' }],
          readinessProbe: { httpGet: { path: '/', port: 'http' }, periodSeconds: 10, failureThreshold: 3 },
          // First start runs the migrations: give it time before liveness may kill it.
          startupProbe: { httpGet: { path: '/', port: 'http' }, periodSeconds: 10, failureThreshold: 60 },
          livenessProbe: { httpGet: { path: '/', port: 'http' }, periodSeconds: 20, failureThreshold: 3 },
          volumeMounts: [{ name: 'recordings', mountPath: RECORDINGS_DIR }],
        },
        volumes: [{ name: 'recordings', persistentVolumeClaim: { claimName: claim.metadata.name } }],
        // Stop, then start: two versions never run against one schema.
        strategy: { type: 'Recreate' },
        ...(args.heldReplicas !== undefined ? { replicas: args.heldReplicas } : {}),
        ...(args.versionChecked ? { gate: args.versionChecked } : {}),
      },
      this,
    )
    const service = createService(`${name}-service`, { identity, namespace: args.namespace, port: args.port, portName: 'http' }, this)
    // Clients reach the content API from anywhere; the service calls its database, and the manager for its signing keys.
    const egress = [
      { ports: [tcp(args.database.port)] },
      ...(args.managerPort !== undefined ? [{ to: [podsNamed('manager')], ports: [tcp(args.managerPort)] }] : []),
    ]
    createNetworkPolicy(
      `${name}-network-policy`,
      { identity, namespace: args.namespace, ingress: [{ ports: [tcp(args.port)] }], egress },
      this,
    )
    // `svcops rehearse recording` runs a release as a Job whose pod no Service selects
    // (src/recording/kubernetes/rehearsal-job.ts): under the default deny it reaches what the
    // service reaches, the database server and the manager, and nothing reaches it (svcops'
    // port-forward enters the pod itself).
    const rehearsal: AppIdentity = { ...identity, name: 'recording-rehearsal', instance: `${name}-rehearsal` }
    createNetworkPolicy(`${name}-rehearsal-network-policy`, { identity: rehearsal, namespace: args.namespace, ingress: [], egress }, this)

    this.url = serviceUrl(service, args.namespace, 'http', args.port)
    this.registerOutputs({ url: this.url })
  }
}
