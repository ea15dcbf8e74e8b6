/**
 * Optional TLS for the system controller: a CA made for the stack, a server certificate for the
 * controller's Service names, the key pair in a `kubernetes.io/tls` Secret, and the CA (public)
 * in a ConfigMap that media components mount to validate the controller.
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
  /** DNS names the server certificate is valid for (the controller's Service names). */
  dnsNames: string[]
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
    const serverKey = new tls.PrivateKey(`${name}-server-key`, { algorithm: 'ECDSA', ecdsaCurve: 'P256' }, { parent: this })
    const request = new tls.CertRequest(
      `${name}-server-csr`,
      { privateKeyPem: serverKey.privateKeyPem, dnsNames: args.dnsNames, subject: { commonName: args.dnsNames[0] ?? name } },
      { parent: this },
    )
    const server = new tls.LocallySignedCert(
      `${name}-server`,
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
    const serverKeyPem = pulumi.secret(serverKey.privateKeyPem)
    this.caCertPem = ca.certPem
    const secret = new k8s.core.v1.Secret(
      `${name}-secret`,
      {
        metadata: { name: `${name}-server`, namespace: args.namespace, labels: args.labels },
        type: 'kubernetes.io/tls',
        stringData: secretData({ 'tls.crt': server.certPem, 'tls.key': serverKeyPem, [CA_FILE]: ca.certPem }),
      },
      { parent: this },
    )
    const caMap = new k8s.core.v1.ConfigMap(
      `${name}-ca`,
      { metadata: { name: `${name}-ca`, namespace: args.namespace, labels: args.labels }, data: { [CA_FILE]: ca.certPem } },
      { parent: this },
    )
    this.secretName = secret.metadata.name
    this.caConfigMapName = caMap.metadata.name
    this.checksum = checksumOf(server.certPem, serverKeyPem, ca.certPem)
    this.caChecksum = checksumOf(ca.certPem)
    this.registerOutputs({ secretName: this.secretName, caConfigMapName: this.caConfigMapName })
  }
}
