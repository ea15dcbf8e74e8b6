/**
 * The manager: the auth API in front of the identity system. Its settings (identity backend,
 * token lifetime of the API revision) live in a ConfigMap; the key that signs access tokens is
 * generated in Pulumi state (a secret) and mounted from a Secret. The seed documents no health
 * endpoint for the manager, so its probes check the port. The seed's base URL is https://: with
 * `tls: true` the manager serves its API with a certificate from the stack's CA.
 */
import * as k8s from '@pulumi/kubernetes'
import * as pulumi from '@pulumi/pulumi'
import * as tls from '@pulumi/tls'
import { checksumOf, labelsOf, secretData, type AppIdentity } from './kube.ts'
import { createNetworkPolicy, tcp } from './networkPolicy.ts'
import { createService, createWorkload, serviceUrl, type WorkloadArgs } from './workload.ts'

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
  /** The manager's TLS key pair Secret (tls.crt, tls.key) and its checksum, when TLS is on. */
  tls?: { secretName: pulumi.Input<string>; checksum: pulumi.Input<string> }
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
    const tlsDir = `/etc/ssl/${args.productDir}/server`
    const portName = args.tls ? 'https' : 'http'

    const config = {
      [`${p}_IDENTITY_URL`]: args.identityUrl,
      [`${p}_TOKEN_LIFETIME_SECONDS`]: String(args.tokenLifetimeSeconds),
      [`${p}_AUTH_API_REVISION`]: args.apiRevision,
      [`${p}_SIGNING_KEY_FILE`]: `${keyDir}/${SIGNING_KEY_FILE}`,
      [`${p}_HTTP_PORT`]: String(args.port),
      ...(args.tls ? { [`${p}_TLS_CERT_FILE`]: `${tlsDir}/tls.crt`, [`${p}_TLS_KEY_FILE`]: `${tlsDir}/tls.key` } : {}),
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

    createWorkload(
      name,
      identity,
      args,
      {
        annotations: {
          'checksum/config': checksumOf(args.checksumKey, JSON.stringify(config)),
          'checksum/signing-key': checksumOf(args.checksumKey, keyPem),
          ...(args.tls ? { 'checksum/tls': args.tls.checksum } : {}),
        },
        container: {
          envFrom: [{ configMapRef: { name: configMap.metadata.name } }],
          ports: [{ name: portName, containerPort: args.port, protocol: 'TCP' }],
          readinessProbe: { tcpSocket: { port: portName }, periodSeconds: 10 },
          livenessProbe: { tcpSocket: { port: portName }, initialDelaySeconds: 10, periodSeconds: 20 },
          volumeMounts: [
            { name: 'signing-key', mountPath: keyDir, readOnly: true },
            ...(args.tls ? [{ name: 'tls', mountPath: tlsDir, readOnly: true }] : []),
          ],
        },
        volumes: [
          { name: 'signing-key', secret: { secretName: keySecret.metadata.name, defaultMode: 0o440 } },
          ...(args.tls ? [{ name: 'tls', secret: { secretName: args.tls.secretName, defaultMode: 0o440 } }] : []),
        ],
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      },
      this,
    )
    const service = createService(`${name}-service`, { identity, namespace: args.namespace, port: args.port, portName }, this)
    // Users and svcops call the auth API from anywhere; the manager calls only its identity system.
    const identityUrl = new URL(args.identityUrl)
    const identityPort = Number(identityUrl.port || (identityUrl.protocol === 'https:' ? 443 : 80))
    createNetworkPolicy(
      `${name}-network-policy`,
      { identity, namespace: args.namespace, ingress: [{ ports: [tcp(args.port)] }], egress: [{ ports: [tcp(identityPort)] }] },
      this,
    )

    this.url = serviceUrl(service, args.namespace, args.tls ? 'https' : 'http', args.port)
    this.registerOutputs({ url: this.url })
  }
}
