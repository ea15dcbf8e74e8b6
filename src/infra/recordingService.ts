/**
 * The recording service: a pinned image, recordings on a volume claim, the database connection in
 * a Secret, readiness on `GET /` (the service's documented health check), a Service and a
 * PodDisruptionBudget. Migrations run on first start, so a rollout replaces pods one by one; with
 * a ReadWriteOnce volume the old pod must let go of it first, hence `Recreate`.
 */
import * as k8s from '@pulumi/kubernetes'
import * as pulumi from '@pulumi/pulumi'
import { checksumOf, labelsOf, secretData, type AppIdentity } from './kube.ts'
import { createDeployment, createDisruptionBudget, createService, serviceUrl, type WorkloadArgs } from './workload.ts'

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
      // Recordings must outlive a `pulumi destroy` or a mistaken replacement.
      { parent: this, retainOnDelete: true },
    )

    createDeployment(
      `${name}-deployment`,
      identity,
      args,
      {
        annotations: { 'checksum/database': checksumOf(JSON.stringify(connection), password) },
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
        strategy:
          args.storage.accessMode === 'ReadWriteOnce'
            ? { type: 'Recreate' }
            : { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      },
      this,
    )
    const service = createService(`${name}-service`, { identity, namespace: args.namespace, port: args.port, portName: 'http' }, this)
    createDisruptionBudget(`${name}-pdb`, { identity, namespace: args.namespace }, this)

    this.url = serviceUrl(service, args.namespace, 'http', args.port)
    this.registerOutputs({ url: this.url })
  }
}
