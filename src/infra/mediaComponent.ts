/**
 * A component of the live production system that connects to the system controller: ingest,
 * pipeline / rendering engine, control panel. Scheduled on the nodes that have its hardware (GPU,
 * capture cards), given the one PSK from the one Secret, the release's TCP endpoint variable, and
 * the CA certificate from the release that accepts a custom CA when TLS is on.
 *
 * It depends on the system controller's Deployment: in a PSK rotation `pulumi up` restarts the
 * controller first and rolls the components only once the controller with the new key is ready.
 * Rendering engines sit behind a headless Service: a control panel resolves the engines and
 * stays on the one it picked, instead of being balanced onto either engine per connection.
 */
import type * as k8s from '@pulumi/kubernetes'
import * as pulumi from '@pulumi/pulumi'
import { BadInputError } from '../core/errors.ts'
import { pskVariable, supportsCustomCaCert, tcpEndpointSingleValue, tcpEndpointVariable } from '../releases/versions.ts'
import { serviceHost, type AppIdentity } from './kube.ts'
import { createNetworkPolicy, podsNamed, tcp } from './networkPolicy.ts'
import { controllerVariables, type PskRef } from './systemController.ts'
import { CA_FILE } from './tls.ts'
import { createService, createWorkload, type WorkloadArgs } from './workload.ts'

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
  /** The controller's port (for the network policy) and its Deployment (rolled first). */
  controller: { port: number; deployment: pulumi.Resource }
  /** Control panels only: the rendering engines' headless Service, `host:port`. */
  renderingEngines?: pulumi.Input<string>
  /** Rendering engine only: where it listens for TCP control panels. */
  tcpEndpoints?: string[]
  /** The CA of the controller's certificate and its checksum, when TLS is on. */
  ca?: { configMapName: pulumi.Input<string>; checksum: pulumi.Input<string> }
  /** Where the image serves its metrics (`svcops:deploy.live.metrics`): declared, and open to scrapers and the API server's proxy. */
  metrics?: { port: number; path: string }
}

export class MediaComponent extends pulumi.ComponentResource {
  /** The Deployment's name. */
  readonly deploymentName: pulumi.Output<string>
  /** Rendering engines only: `host:port` of their headless Service. */
  readonly enginesEndpoint?: pulumi.Output<string>

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

    if (args.renderingEngines !== undefined)
      env.push({ name: `${args.prefix.toUpperCase()}_RENDERING_ENGINES`, value: args.renderingEngines })
    // The seed gives a rendering engine's TCP endpoint to probe: a rendering engine is ready when
    // control panels can connect. Ingest and control panels expose nothing the seed names; when the
    // images serve metrics (`live.metrics`), svcops' checks read that port through the pod proxy, so
    // it is their readiness: a pod counts as ready only once the port the checks read answers.
    // Without metrics they declare no port and get no probe rather than a made-up one.
    const probes =
      controlPort !== undefined
        ? {
            readinessProbe: { tcpSocket: { port: 'control' }, periodSeconds: 10, failureThreshold: 3 },
            livenessProbe: { tcpSocket: { port: 'control' }, initialDelaySeconds: 15, periodSeconds: 20, failureThreshold: 3 },
          }
        : args.metrics
          ? { readinessProbe: { httpGet: { path: args.metrics.path, port: 'metrics' }, periodSeconds: 10, failureThreshold: 3 } }
          : {}

    const ports: k8s.types.input.core.v1.ContainerPort[] = [
      ...(controlPort !== undefined ? [{ name: 'control', containerPort: controlPort, protocol: 'TCP' }] : []),
      ...(args.metrics ? [{ name: 'metrics', containerPort: args.metrics.port, protocol: 'TCP' }] : []),
    ]

    const { deployment } = createWorkload(
      name,
      identity,
      args,
      {
        // Same PSK checksum as the controller: a rotation restarts every reader.
        annotations: { 'checksum/psk': args.psk.checksum, ...(useCa && args.ca ? { 'checksum/ca': args.ca.checksum } : {}) },
        container: {
          env,
          ...(ports.length ? { ports } : {}),
          ...probes,
          volumeMounts: useCa ? [{ name: 'ca', mountPath: caDir, readOnly: true }] : [],
        },
        volumes: useCa && args.ca ? [{ name: 'ca', configMap: { name: args.ca.configMapName } }] : [],
        // A pod holds its node's GPU or capture card: a surge pod would wait for hardware the old
        // pod still holds, so one pod is replaced at a time instead.
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 0, maxUnavailable: 1 } },
        dependsOn: [args.controller.deployment],
      },
      this,
    )
    this.deploymentName = deployment.metadata.name
    if (controlPort !== undefined) {
      const engines = createService(
        `${name}-engines`,
        { identity, namespace: args.namespace, port: controlPort, portName: 'control', headless: true, serviceName: `${name}-engines` },
        this,
      )
      this.enginesEndpoint = pulumi
        .all([engines.metadata.name, pulumi.output(args.namespace)])
        .apply(([svc, ns]) => `${serviceHost(svc, ns)}:${controlPort}`)
    }
    const toController = { to: [podsNamed('system-controller')], ports: [tcp(args.controller.port)] }
    const rules = {
      // Sources push to ingest from outside on ports the seed does not name; its streams go to the
      // pipelines on ports it does not name either.
      ingest: { ingress: [{}], egress: [toController, { to: [podsNamed('pipeline')] }] },
      // Control panels and ingest streams come in; outputs stream to addresses given through the
      // controller's API at run time (SRT callers, UDP destinations), so egress is open.
      pipeline: {
        ingress: [
          { from: [podsNamed('control-panel')], ...(controlPort !== undefined ? { ports: [tcp(controlPort)] } : {}) },
          { from: [podsNamed('ingest')] },
        ],
        egress: [{}],
      },
      // A control panel only calls out: to the controller and to the rendering engines.
      'control-panel': { ingress: [], egress: [toController, { to: [podsNamed('pipeline')] }] },
    }[args.kind]
    // Metrics are read by scrapers in other namespaces and by the API server's pod proxy (svcops'
    // checks), whose address no pod selector names: the metrics port is open to any source.
    const ingress = args.metrics && args.kind !== 'ingest' ? [...rules.ingress, { ports: [tcp(args.metrics.port)] }] : rules.ingress
    createNetworkPolicy(`${name}-network-policy`, { identity, namespace: args.namespace, ...rules, ingress }, this)
    this.registerOutputs({
      deploymentName: this.deploymentName,
      ...(this.enginesEndpoint ? { enginesEndpoint: this.enginesEndpoint } : {}),
    })
  }
}
