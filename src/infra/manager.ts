/**
 * The manager: the auth API in front of the identity system. Its settings (identity backend,
 * token lifetime of the API revision) live in a ConfigMap; the key that signs access tokens is
 * generated in Pulumi state (a secret) and mounted from a Secret. The seed documents no health
 * endpoint for the manager, so its probes check the port.
 */
import * as k8s from '@pulumi/kubernetes'
import * as pulumi from '@pulumi/pulumi'
import * as tls from '@pulumi/tls'
import { checksumOf, labelsOf, secretData, type AppIdentity } from './kube.ts'
import { createDeployment, createDisruptionBudget, createService, serviceUrl, type WorkloadArgs } from './workload.ts'

/** File name of the signing key inside its Secret. */
export const SIGNING_KEY_FILE = 'signing-key.pem'

export interface ManagerArgs extends WorkloadArgs {
  /** Port of the auth API (1024 or more: the container is not root). */
  port: number
  /** URL of the identity and access management system. */
  identityUrl: string
  /** Access-token lifetime (`expires_in`), seconds. */
  tokenLifetimeSeconds: number
  /** Auth API revision the manager serves. */
  apiRevision: string
  /** Product prefix (`svc`) of the variable names. */
  prefix: string
  /** Product folder, for the signing key's directory. */
  productDir: string
}

export class Manager extends pulumi.ComponentResource {
  /** In-cluster base URL of the auth API's host. */
  readonly url: pulumi.Output<string>

  constructor(name: string, args: ManagerArgs, opts?: pulumi.ComponentResourceOptions) {
    super('svcops:infra:Manager', name, {}, opts)
    const identity: AppIdentity = { name: 'manager', instance: name, component: 'auth', version: args.version }
    const labels = labelsOf(identity)
    const p = args.prefix.toUpperCase()
    const keyDir = `/etc/ssl/${args.productDir}/signing`

    const config = {
      [`${p}_IDENTITY_URL`]: args.identityUrl,
      [`${p}_TOKEN_LIFETIME_SECONDS`]: String(args.tokenLifetimeSeconds),
      [`${p}_AUTH_API_REVISION`]: args.apiRevision,
      [`${p}_SIGNING_KEY_FILE`]: `${keyDir}/${SIGNING_KEY_FILE}`,
      [`${p}_HTTP_PORT`]: String(args.port),
    }
    const configMap = new k8s.core.v1.ConfigMap(
      `${name}-config`,
      { metadata: { name: `${name}-config`, namespace: args.namespace, labels }, data: config },
      { parent: this },
    )
    const key = new tls.PrivateKey(`${name}-signing`, { algorithm: 'ECDSA', ecdsaCurve: 'P256' }, { parent: this })
    // The engine marks private keys secret; the mock runtime does not, so say it here too.
    const keyPem = pulumi.secret(key.privateKeyPem)
    const keySecret = new k8s.core.v1.Secret(
      `${name}-signing-key`,
      {
        metadata: { name: `${name}-signing-key`, namespace: args.namespace, labels },
        type: 'Opaque',
        stringData: secretData({ [SIGNING_KEY_FILE]: keyPem }),
      },
      { parent: this },
    )

    createDeployment(
      `${name}-deployment`,
      identity,
      args,
      {
        annotations: { 'checksum/config': checksumOf(JSON.stringify(config)), 'checksum/signing-key': checksumOf(keyPem) },
        container: {
          envFrom: [{ configMapRef: { name: configMap.metadata.name } }],
          ports: [{ name: 'http', containerPort: args.port, protocol: 'TCP' }],
          readinessProbe: { tcpSocket: { port: 'http' }, periodSeconds: 10 },
          livenessProbe: { tcpSocket: { port: 'http' }, initialDelaySeconds: 10, periodSeconds: 20 },
          volumeMounts: [{ name: 'signing-key', mountPath: keyDir, readOnly: true }],
        },
        volumes: [{ name: 'signing-key', secret: { secretName: keySecret.metadata.name, defaultMode: 0o440 } }],
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      },
      this,
    )
    const service = createService(`${name}-service`, { identity, namespace: args.namespace, port: args.port, portName: 'http' }, this)
    createDisruptionBudget(`${name}-pdb`, { identity, namespace: args.namespace }, this)

    this.url = serviceUrl(service, args.namespace, 'http', args.port)
    this.registerOutputs({ url: this.url })
  }
}
