/**
 * Who may talk to whom in the platform's namespace. A default-deny policy closes the namespace in
 * both directions; each component then opens what the seed says it uses: the system controller's
 * API to the components that share its PSK, the rendering engine's TCP endpoint to control
 * panels, the recording service's database, the manager's identity system. Where the seed names
 * no address or port (media sources pushing to ingest, outputs a pipeline streams to, clients of
 * the manager and the recording service), the rule says so in a comment and allows any.
 */
import * as k8s from '@pulumi/kubernetes'
import type * as pulumi from '@pulumi/pulumi'
import { labelsOf, PART_OF, selectorOf, type AppIdentity } from './kube.ts'

type Peer = k8s.types.input.networking.v1.NetworkPolicyPeer
type Port = k8s.types.input.networking.v1.NetworkPolicyPort
type Ingress = k8s.types.input.networking.v1.NetworkPolicyIngressRule
type Egress = k8s.types.input.networking.v1.NetworkPolicyEgressRule

/** Every pod of the platform (all carry `app.kubernetes.io/part-of`). */
export const PLATFORM_PODS: Peer = { podSelector: { matchLabels: { 'app.kubernetes.io/part-of': PART_OF } } }

/** Pods of one kind of component (`app.kubernetes.io/name`), in the namespace. */
export function podsNamed(name: string): Peer {
  return { podSelector: { matchLabels: { 'app.kubernetes.io/name': name } } }
}

/** Pods of another namespace. */
export function namespaceNamed(namespace: string): Peer {
  return { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } } }
}

export function tcp(port: number): Port {
  return { protocol: 'TCP', port }
}

/** Name resolution through the cluster DNS (kube-system), which every pod needs for Service names. */
export const DNS_EGRESS: Egress = {
  to: [namespaceNamed('kube-system')],
  ports: [
    { protocol: 'UDP', port: 53 },
    { protocol: 'TCP', port: 53 },
  ],
}

export interface NetworkPolicyArgs {
  identity: AppIdentity
  namespace: pulumi.Input<string>
  /** Allowed incoming connections; none listed means none allowed. */
  ingress: Ingress[]
  /** Allowed outgoing connections besides DNS. */
  egress: Egress[]
}

/** The policy of one workload (metadata name: the workload's), always with DNS egress. */
export function createNetworkPolicy(name: string, args: NetworkPolicyArgs, parent: pulumi.Resource): k8s.networking.v1.NetworkPolicy {
  return new k8s.networking.v1.NetworkPolicy(
    name,
    {
      metadata: { name: args.identity.instance, namespace: args.namespace, labels: labelsOf(args.identity) },
      spec: {
        podSelector: { matchLabels: selectorOf(args.identity) },
        policyTypes: ['Ingress', 'Egress'],
        ingress: args.ingress,
        egress: [DNS_EGRESS, ...args.egress],
      },
    },
    { parent },
  )
}

/** Denies every connection to and from every pod of the namespace that no other policy allows. */
export function createDefaultDeny(
  name: string,
  args: { namespace: pulumi.Input<string>; labels: Record<string, string> },
  opts: pulumi.CustomResourceOptions,
): k8s.networking.v1.NetworkPolicy {
  return new k8s.networking.v1.NetworkPolicy(
    name,
    {
      metadata: { name: 'default-deny', namespace: args.namespace, labels: args.labels },
      spec: { podSelector: {}, policyTypes: ['Ingress', 'Egress'] },
    },
    opts,
  )
}
