/**
 * The Pulumi-only part of an environment: `svcops:deploy` (Kubernetes objects of the manager, the
 * recording service and the live production system) and the secrets set with
 * `pulumi config set --secret` (`svcops:psk`, `svcops:databasePassword`). schema.ts spreads
 * `deployKeys` into the `svcops:` namespace, so the CLI and the Pulumi program validate one schema.
 *
 * This module must not import schema.ts: schema.ts imports it, and the cycle would leave the
 * shared schemas uninitialised while this file is evaluated.
 */
import { z } from 'zod'
import { durationMs } from './soak-duration.ts'

// A release number; which release means what is src/releases' business, not this file's.
const version = z.string().regex(/^\d+\.\d+\.\d+$/, 'expected a release number like 6.1.0')
const dnsLabel = z
  .string()
  .max(63)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'expected a Kubernetes name: lower-case letters, digits and "-", at most 63')
const quantity = z.union([
  z.string().regex(/^\d+(\.\d+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/, 'expected a Kubernetes quantity like 250m, 512Mi or 2'),
  z.number().positive(),
])
// A repository without tag or digest: the tag is always the configured version, so an image never
// drifts with `latest`; a digest (`digest:`) pins it to the exact bytes reviewed.
const imageRepository = z
  .string()
  .regex(
    /^[a-z0-9]+([._-][a-z0-9]+)*(:\d+)?(\/[a-z0-9]+([._-][a-z0-9]+)*)*$/,
    'expected an image repository without tag, like registry.example.internal/svc/manager',
  )
const labelMap = z.record(z.string().regex(/^([a-z0-9.-]+\/)?[A-Za-z0-9._-]+$/, 'expected a label key like example.com/gpu'), z.string())

/** Requests and limits of a container, by resource name (cpu, memory, nvidia.com/gpu, ...). */
export const resourcesSchema = z.strictObject({
  requests: z.record(z.string(), quantity).refine((r) => 'cpu' in r && 'memory' in r, 'expected at least cpu and memory'),
  limits: z.record(z.string(), quantity).refine((r) => 'memory' in r, 'expected at least memory'),
})

export const tolerationSchema = z.strictObject({
  key: z.string().min(1),
  operator: z.enum(['Exists', 'Equal']).default('Equal'),
  value: z.string().optional(),
  effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']).optional(),
})

/** What every workload has: where its image comes from, how many, how big, where it may run. */
const workloadFields = {
  image: imageRepository,
  /** Overrides the release's version for this one component (a patch release of one image). */
  version: version.optional(),
  /** Pins the image to its content (`repository:version@sha256:...`): a re-pushed tag cannot change what runs. */
  digest: z
    .string()
    .regex(/^sha256:[a-f0-9]{64}$/, 'expected an image digest like sha256:<64 hex digits>')
    .optional(),
  replicas: z.number().int().min(0).max(100).default(1),
  resources: resourcesSchema,
  nodeSelector: labelMap.default({}),
  tolerations: z.array(tolerationSchema).default([]),
}

const port = z.number().int().min(1024, 'expected a port of 1024 or more (the containers run as non-root)').max(65535)

export const managerDeploySchema = z.strictObject({
  ...workloadFields,
  /** Release of the manager image; required here because the manager is versioned apart from the platform. */
  version,
  /** URL of the identity and access management system the manager fronts. */
  identityUrl: z.url({ protocol: /^https?$/, error: 'expected an http:// or https:// URL' }),
  /** Access-token lifetime in seconds; defaults to the value of the configured auth API revision. */
  tokenLifetimeSeconds: z.number().int().min(60).max(86_400).optional(),
  port: port.default(8080),
})

export const recordingDeploySchema = z.strictObject({
  ...workloadFields,
  port: port.default(8080),
  storage: z.strictObject({
    size: quantity,
    storageClass: z.string().min(1).optional(),
    /** Several replicas share the recordings, so they need ReadWriteMany. */
    accessMode: z.enum(['ReadWriteOnce', 'ReadWriteMany']).default('ReadWriteOnce'),
  }),
  /**
   * Set by svcops' recording upgrade while it runs, and removed at its end: the Deployment declares
   * this many replicas instead of `replicas` (0 while the service is stopped, 1 while the new
   * version's first pod starts and migrates alone). The program stays the one writer of the replicas.
   */
  heldReplicas: z.number().int().min(0).max(1).optional(),
})

export const systemControllerDeploySchema = z.strictObject({
  ...workloadFields,
  /**
   * Exactly one: every component must hold the controller's PSK, and two controllers during a
   * rotation would hold two different keys. The controller is restarted by Recreate, never rolled.
   */
  replicas: z.literal(1, { error: 'expected 1; the system controller runs as one pod so that one PSK is in force at a time' }).default(1),
  port: port.default(8080),
  /** Path under the release's API prefix that answers health probes. */
  healthPath: z
    .string()
    .regex(/^\/[A-Za-z0-9/_-]*$/, 'expected a path like /status')
    .default('/status'),
  /** Namespaces besides the platform's own whose pods may reach the system controller. */
  allowNamespaces: z.array(dnsLabel).default([]),
  /** Further keys of the settings file, merged with the PSK (which svcops sets, never the stack file). */
  settings: z.record(z.string(), z.unknown()).default({}),
  /** Before 6.0 the controller reads its settings from a fixed application directory the seed does not name: give it here. */
  legacySettingsDir: z
    .string()
    .regex(/^\/[^\s]*$/, 'expected an absolute directory path')
    .optional(),
})

export const mediaDeploySchema = z.strictObject({ ...workloadFields })

export const pipelineDeploySchema = z.strictObject({
  ...workloadFields,
  /** Where the rendering engine listens for TCP control panels (`host:port`); 6.0+ takes exactly one. */
  tcpEndpoints: z
    .array(z.string().regex(/^[A-Za-z0-9.-]+:\d{1,5}$/, 'expected host:port like 0.0.0.0:7000'))
    .min(1)
    .default(['0.0.0.0:7000']),
})

export const liveDeploySchema = z.strictObject({
  /** Release of the live production system; every component runs it unless it sets its own version. */
  version,
  systemController: systemControllerDeploySchema,
  ingest: mediaDeploySchema,
  pipeline: pipelineDeploySchema,
  controlPanel: mediaDeploySchema,
  /**
   * Where the media components' images serve their Prometheus metrics: the seed names the metrics
   * (and their renames), not the port. The program declares the port on ingest, pipeline and
   * control panel pods and lets it be reached; `svcops upgrade live` and `verify live` read it
   * through the API server's pod proxy for the metric names of the release.
   */
  metrics: z
    .strictObject({
      port,
      path: z
        .string()
        .regex(/^\/[A-Za-z0-9._-]*$/, 'expected one path segment like /metrics')
        .default('/metrics'),
    })
    .optional(),
})

const cron = z.string().regex(/^(\S+\s+){4}\S+$/, 'expected a cron expression with five fields, like "30 2 * * 0"')

/**
 * What every svcops job in the cluster (the scheduled upgrade, the scheduled backup) runs and
 * mounts (docs/deploy.md, "Scheduled jobs"). Secrets are copied to 0600 files by an init container,
 * since Kubernetes mounts them group-readable and svcops refuses such key files.
 */
export const jobsSchema = z.strictObject({
  /** Image of svcops itself (with its tag), built from the Containerfile. */
  image: z.string().regex(/^[^\s@]+:[A-Za-z0-9._-]+$/, 'expected an image with a tag, like registry.example.internal/svcops:0.1.0'),
  /** Existing Secret with the credentials the stack file references: as environment variables, and as files under /etc/svcops/credentials. */
  credentialsSecret: dnsLabel,
  /** Existing Secret with the backup keys (recipients, signers, signing key, identity) as files under /etc/svcops/backup-keys. */
  backupKeysSecret: dnsLabel,
  /** Existing PersistentVolumeClaim mounted at svcops:backup.store.path; not used with an SSH store. */
  backupStoreClaim: dnsLabel.optional(),
  /** Existing PersistentVolumeClaim for run folders and state (SVCOPS_RUNS_DIR, SVCOPS_STATE_DIR), so journals and reports outlive the pod. */
  runsClaim: dnsLabel,
})

export const upgradeScheduleSchema = z.strictObject({
  /** Cron expression of the maintenance window, like "30 2 * * 0". */
  schedule: cron,
  timeZone: z.string().min(1).default('Etc/UTC'),
  /** Release of the recording service to upgrade to. */
  to: version,
  /**
   * The maintenance window from the job's start (`--window`, as the host timer's), like "90m" or
   * "1h30m": a batch starts only if it ends inside it; otherwise what changed is rolled back.
   */
  window: z
    .string()
    .refine((w) => durationMs(w) !== undefined, 'expected a duration like 2h, 90m, 1h30m or 45s')
    .optional(),
})

export const liveUpgradeScheduleSchema = z.strictObject({
  /** Cron expression of the live production system's maintenance window, like "0 3 * * 0". */
  schedule: cron,
  timeZone: z.string().min(1).default('Etc/UTC'),
  /** Release of the live production system to upgrade to (`svcops upgrade live --to`). */
  to: version,
  /**
   * Gates of the majors crossed that people have handled (`svcops plan live`), passed as `--ack`;
   * an open gate stops the scheduled run before anything changes (exit 5).
   */
  acks: z.array(z.string().regex(/^\d+\.\d+\.\d+\/[A-Za-z0-9._-]+$/, 'expected a gate id like 6.0.0/send-message')).default([]),
})

/** The retention of a scheduled backup when its stack names none (docs/deploy.md, "Scheduled jobs"). */
export const DEFAULT_SCHEDULED_KEEP_LAST = 14

export const backupScheduleSchema = z.strictObject({
  /** Cron expression of the nightly backup (create, verify with a test restore, prune), like "15 1 * * *". */
  schedule: cron,
  timeZone: z.string().min(1).default('Etc/UTC'),
  /**
   * Retention of the nightly run's prune (`backup run --keep-last/--keep-days`). Neither given: the
   * newest DEFAULT_SCHEDULED_KEEP_LAST are kept, so a scheduled backup never fills its store.
   */
  keepLast: z.number().int().min(1).max(10_000).optional(),
  keepDays: z.number().int().min(1).max(36_500).optional(),
})

/** `svcops:deploy`. */
export const deploySchema = z.strictObject({
  namespace: dnsLabel,
  /** Serve the system controller over TLS with a CA made for the stack. */
  tls: z.boolean().default(false),
  /** Any text; changing it generates a new PSK (Pulumi replaces the random password). */
  pskRotation: z.string().min(1).default('initial'),
  imagePullSecret: dnsLabel.optional(),
  manager: managerDeploySchema,
  recording: recordingDeploySchema,
  live: liveDeploySchema,
  /** How the scheduled jobs run; needed by upgradeSchedule and backupSchedule. */
  jobs: jobsSchema.optional(),
  upgradeSchedule: upgradeScheduleSchema.optional(),
  /** The live production system's scheduled upgrade, a CronJob beside the recording service's (needs svcops:live.platform kubernetes). */
  liveUpgradeSchedule: liveUpgradeScheduleSchema.optional(),
  backupSchedule: backupScheduleSchema.optional(),
  /**
   * Accept a kubeconfig whose cluster entry sets `insecure-skip-tls-verify: true` (svcops refuses it
   * otherwise: anyone on the way could pose as the API server). Warned on every run; give the
   * cluster entry its CA instead whenever possible.
   */
  allowInsecureSkipTlsVerify: z.boolean().optional(),
})

/** A value set with `pulumi config set --secret`: the stack file holds only its ciphertext. */
export const secureValueSchema = z.strictObject(
  { secure: z.string().min(1) },
  { error: 'expected a value set with `pulumi config set --secret`, never plain text in the stack file' },
)

/** Keys of the `svcops:` namespace owned by the deployment; schema.ts spreads them in. */
export const deployKeys = {
  deploy: deploySchema.optional(),
  /** A PSK chosen by the operator instead of a generated one (it must pass `svcops psk check`). */
  psk: secureValueSchema.optional(),
  /** Password of the recording database for the cluster, instead of resolving recording.database.password. */
  databasePassword: secureValueSchema.optional(),
  /**
   * Let `pulumi up` deploy a recording service release older than the one running in the cluster.
   * Without it the program reads the running Deployment and fails the preview: a stale checkout
   * must not take production back across a schema change (a rollback is `svcops rollback
   * recording`, which restores the database when the schema changed). Set it for one deliberate
   * run, then remove it. (Pulumi hands a top-level scalar to the program as text: "true".)
   */
  allowDowngrade: z
    .union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')], { error: 'expected true or false' })
    .optional(),
}

/** Top-level keys whose values Pulumi decrypts before the program sees them. */
export const SECURE_KEYS = ['psk', 'databasePassword'] as const

export type DeployConfig = z.infer<typeof deploySchema>
export type WorkloadConfig = z.infer<typeof mediaDeploySchema>
export type Resources = z.infer<typeof resourcesSchema>
export type Toleration = z.infer<typeof tolerationSchema>
export type JobsConfig = z.infer<typeof jobsSchema>
