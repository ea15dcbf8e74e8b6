/**
 * Optional TLS for the system controller and the manager: a CA made for the stack, a server
 * certificate for each one's Service names, each key pair in a `kubernetes.io/tls` Secret, and the
 * CA (public) in a ConfigMap that media components mount to validate the controller.
 */
import * as k8s from '@pulumi/kubernetes'
import * as pulumi from '@pulumi/pulumi'
import * as tls from '@pulumi/tls'
import { checksumOf, secretData } from './kube.ts'

/** File name of the CA certificate in the ConfigMap and the Secret. */
export const CA_FILE = 'ca.crt'

export interface TlsArgs {
  /** Namespace of the Secret and the ConfigMap. */
  namespace: pulumi.Input<string>
  /** DNS names the controller's server certificate is valid for (its Service names). */
  dnsNames: string[]
  /** DNS names of the manager's server certificate (its Service names and the external host). */
  managerDnsNames: string[]
  /** Key of the checksum annotations (a Pulumi secret). */
  checksumKey: pulumi.Input<string>
  /** Validity of the CA and the server certificate, in hours. */
  validityHours?: number
  /** Labels of the Secret and the ConfigMap. */
  labels: Record<string, string>
}

export class Tls extends pulumi.ComponentResource {
  /** Secret of type kubernetes.io/tls with tls.crt, tls.key and ca.crt. */
  readonly secretName: pulumi.Output<string>
  /** ConfigMap holding only the CA certificate (public). */
  readonly caConfigMapName: pulumi.Output<string>
  /** The CA certificate (public). */
  readonly caCertPem: pulumi.Output<string>
  /** Changes whenever the server certificate, its key or the CA changes (the controller's annotation). */
  readonly checksum: pulumi.Output<string>
  /** Changes only when the CA changes (the components' annotation: they read only the CA). */
  readonly caChecksum: pulumi.Output<string>
  /** The manager's key pair Secret and the checksum of its content. */
  readonly manager: { secretName: pulumi.Output<string>; checksum: pulumi.Output<string> }

  constructor(name: string, args: TlsArgs, opts?: pulumi.ComponentResourceOptions) {
    super('svcops:infra:Tls', name, {}, opts)
    const validity = args.validityHours ?? 24 * 365 * 2
    const caKey = new tls.PrivateKey(`${name}-ca-key`, { algorithm: 'ECDSA', ecdsaCurve: 'P256' }, { parent: this })
    const ca = new tls.SelfSignedCert(
      `${name}-ca`,
      {
        privateKeyPem: caKey.privateKeyPem,
        isCaCertificate: true,
        validityPeriodHours: validity,
        subject: { commonName: `${name} CA`, organization: 'svcops' },
        allowedUses: ['cert_signing', 'crl_signing', 'digital_signature'],
      },
      { parent: this },
    )
    this.caCertPem = ca.certPem
    const caMap = new k8s.core.v1.ConfigMap(
      `${name}-ca`,
      { metadata: { name: `${name}-ca`, namespace: args.namespace, labels: args.labels }, data: { [CA_FILE]: ca.certPem } },
      { parent: this },
    )
    // One key pair per server, each signed by the CA: a leaked manager key does not speak for the controller.
    const issue = (role: string, dnsNames: string[]) => {
      const key = new tls.PrivateKey(`${name}-${role}-key`, { algorithm: 'ECDSA', ecdsaCurve: 'P256' }, { parent: this })
      const request = new tls.CertRequest(
        `${name}-${role}-csr`,
        { privateKeyPem: key.privateKeyPem, dnsNames, subject: { commonName: dnsNames[0] ?? name } },
        { parent: this },
      )
      const cert = new tls.LocallySignedCert(
        `${name}-${role}`,
        {
          certRequestPem: request.certRequestPem,
          caPrivateKeyPem: caKey.privateKeyPem,
          caCertPem: ca.certPem,
          validityPeriodHours: validity,
          allowedUses: ['digital_signature', 'key_encipherment', 'server_auth'],
        },
        { parent: this },
      )
      // The engine marks private keys secret; the mock runtime does not, so say it here too.
      const keyPem = pulumi.secret(key.privateKeyPem)
      const secret = new k8s.core.v1.Secret(
        role === 'server' ? `${name}-secret` : `${name}-${role}-secret`,
        {
          metadata: { name: `${name}-${role}`, namespace: args.namespace, labels: args.labels },
          type: 'kubernetes.io/tls',
          stringData: secretData({ 'tls.crt': cert.certPem, 'tls.key': keyPem, [CA_FILE]: ca.certPem }),
        },
        { parent: this },
      )
      return { secretName: secret.metadata.name, checksum: checksumOf(args.checksumKey, cert.certPem, keyPem, ca.certPem) }
    }
    const server = issue('server', args.dnsNames)
    this.secretName = server.secretName
    this.checksum = server.checksum
    this.manager = issue('manager', args.managerDnsNames)
    this.caConfigMapName = caMap.metadata.name
    this.caChecksum = checksumOf(args.checksumKey, ca.certPem)
    this.registerOutputs({ secretName: this.secretName, caConfigMapName: this.caConfigMapName })
  }
}
