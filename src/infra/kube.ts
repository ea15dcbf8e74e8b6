/**
 * What every workload of the platform shares: the recommended `app.kubernetes.io/*` labels, a
 * locked-down pod and container security context, scheduling fields from config, and keyed
 * checksum annotations that roll a pod template when the secret or settings it reads change.
 */
import { createHmac } from 'node:crypto'
import * as pulumi from '@pulumi/pulumi'
import type * as k8s from '@pulumi/kubernetes'
import type { Resources, Toleration } from '../config/deploy.ts'

type Input<T> = pulumi.Input<T>

/** Label value of `app.kubernetes.io/part-of` on every object of the platform. */
export const PART_OF = 'svc-platform'

/** Identity of a workload, turned into labels. */
export interface AppIdentity {
  /** `app.kubernetes.io/name`: what it is (system-controller, manager, ...). */
  name: string
  /** `app.kubernetes.io/instance`: which installation (the component's resource name). */
  instance: string
  /** `app.kubernetes.io/component`: its role in the platform. */
  component: string
  /** `app.kubernetes.io/version`. */
  version: string
}

/**
 * The recommended labels, for metadata, without the version: a version change then patches the
 * Deployment alone (`versionedLabelsOf`), so the scheduled upgrade's Role needs no write on the
 * Secrets, claims, Services, budgets and policies around it (docs/deploy.md, RBAC).
 */
export function labelsOf(id: AppIdentity): Record<string, string> {
  return {
    'app.kubernetes.io/name': id.name,
    'app.kubernetes.io/instance': id.instance,
    'app.kubernetes.io/component': id.component,
    'app.kubernetes.io/part-of': PART_OF,
    'app.kubernetes.io/managed-by': 'pulumi',
  }
}

/** The labels of a Deployment and its pod template: the recommended ones with `app.kubernetes.io/version`. */
export function versionedLabelsOf(id: AppIdentity): Record<string, string> {
  return { ...labelsOf(id), 'app.kubernetes.io/version': id.version }
}

/**
 * The labels a selector matches. The version is left out on purpose: a selector is immutable on a
 * Deployment, and an upgrade must not need the object replaced.
 */
export function selectorOf(id: AppIdentity): Record<string, string> {
  return { 'app.kubernetes.io/name': id.name, 'app.kubernetes.io/instance': id.instance }
}

// A fixed non-root uid: images of the product do not all declare a USER.
const RUN_AS = 10_001

/** Pod-level security: non-root, its own group for volumes, the runtime's default seccomp profile. */
export function podSecurity(): k8s.types.input.core.v1.PodSecurityContext {
  return { runAsNonRoot: true, runAsUser: RUN_AS, runAsGroup: RUN_AS, fsGroup: RUN_AS, seccompProfile: { type: 'RuntimeDefault' } }
}

/** Container-level security: read-only root filesystem, no privilege escalation, no capabilities. */
export function containerSecurity(): k8s.types.input.core.v1.SecurityContext {
  return { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, runAsNonRoot: true, capabilities: { drop: ['ALL'] } }
}

/** With a read-only root filesystem, programs still need somewhere to write temporary files. */
export const TMP_VOLUME = { name: 'tmp', emptyDir: { sizeLimit: '256Mi' } }
export const TMP_MOUNT = { name: 'tmp', mountPath: '/tmp' }

/** Requests and limits exactly as configured. */
export function resourcesOf(r: Resources): k8s.types.input.core.v1.ResourceRequirements {
  return { requests: stringify(r.requests), limits: stringify(r.limits) }
}

function stringify(map: Record<string, string | number>): Record<string, string> {
  return Object.fromEntries(Object.entries(map).map(([k, v]) => [k, String(v)]))
}

/** Scheduling fields from config (GPU nodes, capture-card nodes). */
export function schedulingOf(s: { nodeSelector: Record<string, string>; tolerations: Toleration[] }): {
  nodeSelector?: Record<string, string>
  tolerations?: k8s.types.input.core.v1.Toleration[]
} {
  return {
    ...(Object.keys(s.nodeSelector).length > 0 ? { nodeSelector: s.nodeSelector } : {}),
    ...(s.tolerations.length > 0 ? { tolerations: s.tolerations } : {}),
  }
}

/**
 * The restart annotation value of `parts` (secret or not): an HMAC-SHA256 under `key`, a random
 * value kept in Pulumi state as a secret (`ChecksumKey` in index.ts). A plain hash of a secret
 * would let anyone who reads the pod template test guesses of it (a password, a settings file
 * whose other keys are known); without the key the value says only "changed" or "unchanged".
 * The result is deliberately not secret: it must be visible on the pod template for the rollout
 * to be reviewable, and a secret annotation would hide the whole template.
 */
export function checksumOf(key: Input<string>, ...parts: Input<string>[]): pulumi.Output<string> {
  return pulumi.unsecret(
    pulumi.all([key, ...parts]).apply(([k, ...values]) => {
      if (!k) throw new Error('checksumOf: the checksum key is empty')
      const mac = createHmac('sha256', k)
      for (const value of values) mac.update(value).update('\0')
      return mac.digest('hex')
    }),
  )
}

/** `pulumi.secret` for every value of a string map (Secret data). */
export function secretData(data: Record<string, Input<string>>): pulumi.Output<Record<string, string>> {
  return pulumi.secret(pulumi.output(data) as pulumi.Output<Record<string, string>>)
}

/** A Service's in-cluster DNS name. */
export function serviceHost(service: string, namespace: string): string {
  return `${service}.${namespace}.svc.cluster.local`
}

/** The image reference: the tag is the version; a digest, when configured, pins the content. */
export function imageOf(repository: string, version: string, digest?: string): string {
  return `${repository}:${version}${digest ? `@${digest}` : ''}`
}

/**
 * Spreads the replicas of a Deployment over nodes (required: one node lost must not take two
 * rendering engines or two recording pods) and over zones where the cluster has them (preferred).
 */
export function spreadOf(selector: Record<string, string>, replicas: number): k8s.types.input.core.v1.TopologySpreadConstraint[] {
  if (replicas < 2) return []
  return [
    { maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'DoNotSchedule', labelSelector: { matchLabels: selector } },
    {
      maxSkew: 1,
      topologyKey: 'topology.kubernetes.io/zone',
      whenUnsatisfiable: 'ScheduleAnyway',
      labelSelector: { matchLabels: selector },
    },
  ]
}

/** `imagePullSecrets` if one is configured. */
export function pullSecretsOf(name: string | undefined): { imagePullSecrets?: { name: string }[] } {
  return name ? { imagePullSecrets: [{ name }] } : {}
}
