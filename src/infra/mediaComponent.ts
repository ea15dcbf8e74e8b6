/**
 * A component of the live production system that connects to the system controller: ingest,
 * pipeline / rendering engine, control panel. Scheduled on the nodes that have its hardware (GPU,
 * capture cards), given the one PSK from the one Secret, the release's TCP endpoint variable, and
 * the CA certificate from the release that accepts a custom CA when TLS is on.
 */
import type * as k8s from '@pulumi/kubernetes'
import * as pulumi from '@pulumi/pulumi'
import { BadInputError } from '../core/errors.ts'
import { pskVariable, supportsCustomCaCert, tcpEndpointSingleValue, tcpEndpointVariable } from '../releases/versions.ts'
import type { AppIdentity } from './kube.ts'
import { controllerVariables, type PskRef } from './systemController.ts'
import { CA_FILE } from './tls.ts'
import { createDeployment, createService, type WorkloadArgs } from './workload.ts'

/** The kinds of media component, as `app.kubernetes.io/name`. */
export type MediaKind = 'ingest' | 'pipeline' | 'control-panel'

/** Where the CA certificate is mounted in media components. */
export function caDirectory(productDir: string): string {
  return `/etc/ssl/${productDir}/ca`
}

/** `nodeSelector` and `tolerations` put the component on the nodes with its hardware: GPU for pipelines, capture cards for ingest. */
export interface MediaComponentArgs extends WorkloadArgs {
  /** Which component: ingest, pipeline (rendering engine) or control panel. */
  kind: MediaKind
  /** Product prefix (`svc`) of the variable names. */
  prefix: string
  /** Product folder, for the CA directory. */
  productDir: string
  /** The one PSK Secret (read through `secretKeyRef`). */
  psk: PskRef
  /** In-cluster URL of the system controller. */
  controllerUrl: pulumi.Input<string>
  /** Rendering engine only: where it listens for TCP control panels. */
  tcpEndpoints?: string[]
  /** The CA of the controller's certificate and its checksum, when TLS is on. */
  ca?: { configMapName: pulumi.Input<string>; checksum: pulumi.Input<string> }
}

export class MediaComponent extends pulumi.ComponentResource {
  /** The Deployment's name. */
  readonly deploymentName: pulumi.Output<string>

  constructor(name: string, args: MediaComponentArgs, opts?: pulumi.ComponentResourceOptions) {
    super('svcops:infra:MediaComponent', name, {}, opts)
    const identity: AppIdentity = { name: args.kind, instance: name, component: 'live-production', version: args.version }
    const vars = controllerVariables(args.prefix)
    const env: k8s.types.input.core.v1.EnvVar[] = [
      { name: pskVariable(args.prefix), valueFrom: { secretKeyRef: { name: args.psk.secretName, key: args.psk.secretKey } } },
      { name: vars.url, value: args.controllerUrl },
    ]
    if (args.tcpEndpoints) {
      if (tcpEndpointSingleValue(args.version) && args.tcpEndpoints.length !== 1) {
        throw new BadInputError(
          `tcpEndpoints: ${args.tcpEndpoints.length} endpoints given for release ${args.version}; expected exactly one, since ${tcpEndpointVariable(args.version, args.prefix)} takes a single endpoint that accepts several connections.`,
        )
      }
      env.push({ name: tcpEndpointVariable(args.version, args.prefix), value: args.tcpEndpoints.join(',') })
    }
    const controlPort = args.tcpEndpoints ? Number(args.tcpEndpoints[0]?.split(':')[1]) : undefined
    const useCa = args.ca !== undefined && supportsCustomCaCert(args.version)
    const caDir = caDirectory(args.productDir)
    if (useCa) env.push({ name: vars.caFile, value: `${caDir}/${CA_FILE}` })

    const deployment = createDeployment(
      `${name}-deployment`,
      identity,
      args,
      {
        // Same PSK checksum as the controller: a rotation restarts every reader together.
        annotations: { 'checksum/psk': args.psk.checksum, ...(useCa && args.ca ? { 'checksum/ca': args.ca.checksum } : {}) },
        container: {
          env,
          ...(controlPort !== undefined ? { ports: [{ name: 'control', containerPort: controlPort, protocol: 'TCP' }] } : {}),
          volumeMounts: useCa ? [{ name: 'ca', mountPath: caDir, readOnly: true }] : [],
        },
        volumes: useCa && args.ca ? [{ name: 'ca', configMap: { name: args.ca.configMapName } }] : [],
      },
      this,
    )
    this.deploymentName = deployment.metadata.name
    // Control panels reach the rendering engine's TCP endpoint through a Service.
    if (controlPort !== undefined)
      createService(`${name}-service`, { identity, namespace: args.namespace, port: controlPort, portName: 'control' }, this)
    this.registerOutputs({ deploymentName: this.deploymentName })
  }
}
