/**
 * The `svcops:` namespace of a stack file (`stacks/Pulumi.<env>.yaml`) as zod schemas. One source of
 * truth: the CLI, the playbooks and the Pulumi program all read an environment through these.
 * Credentials are references only (an environment variable's name or a 0600 file's path), never values.
 */
import { z } from 'zod'
import type { LiveClusterConfig } from './live-cluster.ts'
import { deployKeys } from './deploy.ts'
import { declaredChecksSchema, liveUuidsSchema, recordingChecksSchema } from './checks.ts'
import { analysisSchema } from './analysis.ts'

const name = z.string().regex(/^[a-z0-9][a-z0-9._-]*$/, 'expected lower-case letters, digits, ".", "_" or "-"')
export const semver = z.string().regex(/^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?$/, 'expected a version like 1.5.0')
const url = z.url({ protocol: /^https?$/, error: 'expected an http:// or https:// URL' })
const envName = z.string().regex(/^[A-Z_][A-Z0-9_]*$/, 'expected an environment variable name like SVCOPS_PASSWORD')
const port = z.number().int().min(1).max(65535)

/** A secret given by reference: the name of an environment variable, or the path of a 0600 file. */
export const secretRef = z.union([z.strictObject({ env: envName }), z.strictObject({ file: z.string().min(1) })], {
  error: 'expected a reference { env: VARIABLE } or { file: /path/to/0600-file }, never the secret itself',
})
export type SecretRef = z.infer<typeof secretRef>

export const productSchema = z.strictObject({
  /** Prefix of metric, file and variable names (`svc_`, `SVC_`). */
  prefix: z
    .string()
    .regex(/^[a-z][a-z0-9]*$/, 'expected lower-case letters and digits, like svc')
    .default('svc'),
  /** Folder of the product under /etc/opt and /opt. */
  dir: z
    .string()
    .regex(/^[a-z0-9][a-z0-9._-]*$/, 'expected a folder name like svc')
    .default('svc'),
})

export const managerSchema = z.strictObject({
  url,
  /** Auth API revision of the manager: 1.4.1, 1.6.1 or 1.6.2. */
  apiRevision: z.enum(['1.4.1', '1.6.1', '1.6.2']).default('1.6.2'),
  email: z.email({ error: 'expected an e-mail address' }),
  password: secretRef,
  /**
   * Accept an http:// manager URL that is not on loopback (the password and tokens then cross the
   * network in clear text). Off by default; every run warns while it is on.
   */
  allowInsecureHttp: z.boolean().default(false),
})

export const sshSchema = z.strictObject({
  host: z.string().min(1),
  port: port.default(22),
  user: z.string().min(1),
  /** Private key file for the connection (0600). */
  keyFile: z.string().min(1).optional(),
  /**
   * The host's key, pinned: its SHA-256 fingerprint as `ssh-keygen -lf` prints it. A host that
   * shows another key is refused; without it (and without `trustOnFirstUse`) the host is refused,
   * naming the key it showed.
   */
  hostKey: z
    .string()
    .regex(/^SHA256:[A-Za-z0-9+/]{43}$/, {
      error: 'expected a SHA-256 host key fingerprint as ssh-keygen -lf prints it, like SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8',
    })
    .optional(),
  /**
   * Without `hostKey`: trust the key the host shows on the first connection, record it in the state
   * dir (`.svcops/known_hosts.json`) and refuse any other key afterwards. Off by default.
   */
  trustOnFirstUse: z.boolean().optional(),
  /**
   * `sudo`: `user` is unprivileged and the commands that need root (package installs, service stops
   * and starts) run through `sudo -n` with the rules `svcops render sudoers` prints. Without it they
   * run as `user`, which must then have those rights itself.
   */
  become: z.enum(['sudo'], { error: 'expected sudo (commands that need root run through sudo -n), or no become' }).optional(),
})

/**
 * SSH to a host where svcops runs every command as the SSH user: `become` is refused, since the
 * sudo rules (`svcops render sudoers`) and the preflight that checks them cover the recording and
 * live hosts only; the backup store with it would pass its preflight and then fail its first `sudo -n`.
 */
function sshWithoutBecome(where: string) {
  return sshSchema.refine((ssh) => ssh.become === undefined, {
    path: ['become'],
    error: `is not supported on ${where} yet: expected no become (svcops render sudoers and the sudo preflight cover recording and live hosts only)`,
  })
}

export const recordingHostSchema = z.strictObject({
  name,
  /** Base URL of the recording service on this host. */
  url,
  /** How commands reach the host over SSH; or `transport: local`. */
  ssh: sshSchema.optional(),
  /**
   * `local`: the host is this machine (a local install), said in so many words: a host without
   * `ssh` is refused unless it says this or is a lab sandbox (`root`), never taken as this machine.
   */
  transport: z.literal('local').optional(),
  /** Root directory of a sandboxed lab host (dpkg --root); absent on real hosts. */
  root: z.string().min(1).optional(),
  /** Mark one host as the canary that is upgraded first. */
  canary: z.boolean().default(false),
})

export const databaseSchema = z.strictObject({
  host: z.string().min(1),
  port: port.default(5432),
  name: z.string().min(1),
  user: z.string().min(1),
  password: secretRef.optional(),
})

export const recordingSchema = z
  .strictObject({
    /**
     * Where the service runs: `hosts` (OS packages and a service manager, reached over SSH or on this
     * machine; the default) or `kubernetes` (the Deployment of this project's Pulumi program: no
     * hosts here, the namespace and the Deployment come from `svcops:deploy`, the version from
     * `svcops:deploy.recording.version`).
     */
    platform: z.enum(['hosts', 'kubernetes']).default('hosts'),
    /** Release expected on the hosts (on Kubernetes, the fallback of `deploy.recording.version`). */
    version: semver,
    /** Package name: Debian policy for apt/dpkg (checked by a named rule), RPM's characters for dnf; never an option. */
    package: z
      .string()
      .regex(/^[A-Za-z0-9_][A-Za-z0-9._+-]{0,199}$/, 'expected a package name (letters, digits, "+", "-", ".", "_"; not starting with "-")')
      .default('svc-recording'),
    /** systemd unit or supervisor program name (systemd's unit name characters); never an option. */
    service: z
      .string()
      .regex(
        /^[A-Za-z0-9:_@\\][A-Za-z0-9:_.@\\-]{0,254}$/,
        'expected a unit name (letters, digits, ":", "-", "_", ".", "@", "\\"; not starting with "-")',
      )
      .default('svc-recording'),
    packageDriver: z.enum(['dpkg', 'apt', 'dnf']).default('apt'),
    serviceDriver: z.enum(['systemd', 'supervisor']).default('systemd'),
    /** Directory (on each host) holding .deb files, for the dpkg driver. */
    packageDir: z.string().min(1).optional(),
    /** Active configuration file on each host. */
    configPath: z.string().min(1).optional(),
    /** The service's log file on each host (read by the supervisor driver; systemd uses journalctl). */
    logPath: z.string().min(1).optional(),
    /**
     * Log levels that fail the upgrade: each a case-insensitive regular expression matched, whole, against the
     * level field of every log record written since the start — never the message (default ERROR, FATAL, PANIC, CRITICAL).
     */
    errorPatterns: z.array(z.string().min(1)).optional(),
    /** How long a started service may take to answer GET / with success. */
    healthTimeoutSeconds: z.number().int().min(1).max(3600).optional(),
    /** `limit` of the content listing used by snapshots and verification. */
    contentLimit: z.number().int().min(1).optional(),
    /**
     * The post-upgrade check fails a host whose content list or test write takes longer than this,
     * in ms (default 5000): slow performance, diagnosed by the doctor before the rollback.
     */
    slowResponseMs: z.number().int().min(1).max(600_000).optional(),
    scopes: z
      .strictObject({
        read: z.string().min(1).default('urn:svc:recorder:content:read'),
        write: z.string().min(1).default('urn:svc:recorder:content:write'),
      })
      .default({ read: 'urn:svc:recorder:content:read', write: 'urn:svc:recorder:content:write' }),
    /** The site's checks where the seed is silent, asked after the seed's own (src/config/checks.ts, docs/contract.md). */
    checks: recordingChecksSchema,
    /** The hosts (platform `hosts`); none on Kubernetes, where the Deployment is the one target. */
    hosts: z.array(recordingHostSchema).default([]),
    database: databaseSchema,
    /**
     * Where `svcops rehearse recording` runs a release before the window (src/recording/rehearse/):
     * a host of its own, never one of `hosts`, whose service the site configured once to use the
     * scratch database `database` on the stack's PostgreSQL server. svcops creates that database
     * from the environment's verified backup for each rehearsal and drops it afterwards.
     */
    rehearsal: z
      .strictObject({
        /** The rehearsal host (platform `hosts`, required there); on Kubernetes the rehearsal is a Job in the namespace. */
        host: recordingHostSchema.optional(),
        /**
         * On Kubernetes: a PersistentVolumeClaim of the namespace holding a copy of the recordings
         * storage, mounted by the rehearsal's Job (without it the Job's storage is empty; production's claim is never mounted).
         */
        claim: z
          .string()
          .regex(/^[a-z0-9]([-a-z0-9]{0,251}[a-z0-9])?$/, 'expected the name of a PersistentVolumeClaim')
          .optional(),
        /** The scratch database the rehearsal's service is configured to use; never `recording.database.name`. */
        database: z.string().regex(/^[a-z_][a-z0-9_]{0,62}$/, 'expected a database name of lower-case letters, digits and "_"'),
        /** A verified backup younger than this is reused instead of taking a new one (hours, default 24). */
        backupMaxAgeHours: z
          .number()
          .int()
          .min(0)
          .max(24 * 365)
          .optional(),
      })
      .optional(),
  })
  .superRefine((recording, ctx) => {
    // A command check runs on the service's host; on Kubernetes svcops reads the cluster through
    // its API and runs nothing in the pods, so there is none: refused here, as live.checks is.
    if (recording.platform !== 'kubernetes') return
    for (const [i, c] of recording.checks.entries())
      if (c.command)
        ctx.addIssue({
          code: 'custom',
          path: ['checks', i, 'command'],
          message: `'${c.name}' is a command check, which runs on a host; recording.platform kubernetes has none: declare a web or metric check instead`,
        })
  })

/**
 * `svcops:upgrade`: rules a real upgrade of the recording service obeys. `requireRehearsal`: the
 * longest age, in hours, of a passing rehearsal of the same from-version, to-version and schema
 * fingerprint; without one a real upgrade (scheduled ones too) is refused before anything starts.
 * `analysis`: the soak after the canary and how the canary is judged against the baseline.
 * `promoteFrom`/`promoteMaxAgeHours`: the promotion gate from an earlier environment.
 */
export const upgradeSchema = z.strictObject({
  requireRehearsal: z
    .number()
    .int()
    .min(1)
    .max(24 * 365)
    .optional(),
  /** The canary's analysis over a soak (src/config/analysis.ts; docs/upgrade.md "Canary analysis"). */
  analysis: analysisSchema.optional(),
  /**
   * The environment a release must pass first (its stack file beside this one): an upgrade to V is
   * refused unless that environment's run store holds a succeeded upgrade to V (src/recording/promotion-gate.ts).
   */
  promoteFrom: z
    .string()
    .regex(/^[a-z0-9][a-z0-9_-]*$/, 'expected the name of an environment (a stack in the same folder), e.g. staging')
    .optional(),
  /** With `promoteFrom`: the longest age, in hours, of that upgrade (default 168, a week). */
  promoteMaxAgeHours: z
    .number()
    .int()
    .min(1)
    .max(24 * 365)
    .optional(),
})

export const backupSchema = z.strictObject({
  /** Where backups are kept: a local directory, or a directory on a host over SSH. */
  store: z.strictObject({ path: z.string().min(1), ssh: sshWithoutBecome('the backup store').optional() }),
  /** Armored OpenPGP public keys (file paths) that every backup is encrypted to. */
  recipients: z.array(z.string().min(1)).min(1, 'expected at least one recipient public key'),
  /** Armored private key for verify and restore (a 0600 file); not needed to back up. */
  identity: secretRef.optional(),
  /** Passphrase of the private key, if it has one. */
  passphrase: secretRef.optional(),
  /**
   * Private key that signs every backup (a 0600 file on the machine that backs up). Without it the
   * private key in `identity` signs.
   */
  signingKey: secretRef.optional(),
  /** Passphrase of `signingKey`, if it has one. */
  signingPassphrase: secretRef.optional(),
  /**
   * Armored OpenPGP public keys (file paths) of the trusted signers: verify and restore accept only
   * a backup signed by one of them. Without it, the recipients' keys are the trusted signers.
   */
  signers: z.array(z.string().min(1)).min(1, 'expected at least one signer public key').optional(),
  /** pg_dump's zlib level for the custom-format archive (0-9); 1 is about twice as fast as pg_dump's default for a few percent more bytes. */
  compression: z.number().int().min(0).max(9).optional(),
})

/** A host of the live production system: where its components are installed and how it is reached. */
export const liveHostSchema = z.strictObject({
  name,
  /** How commands reach the host over SSH; or `transport: local`. */
  ssh: sshSchema.optional(),
  /** `local`: the host is this machine, said in so many words (as on a recording host). */
  transport: z.literal('local').optional(),
  /** Root directory of a sandboxed lab host (dpkg --root); absent on real hosts. */
  root: z.string().min(1).optional(),
})

/** The live components, in dependency order (the catalog's LIVE_COMPONENTS, named here for the schema). */
const LIVE_TYPES = ['system-controller', 'ingest', 'pipeline', 'control-panel'] as const

/**
 * A host of `live.hosts`: how it is reached, and the components it runs, each with the port of its
 * `/metrics` and `/health`. A host runs at most one instance of a type (a package is installed
 * once per host); a type's count is the number of hosts that run it.
 */
export const livePlacedHostSchema = liveHostSchema.extend({
  components: z.strictObject({
    'system-controller': port.optional(),
    ingest: port.optional(),
    pipeline: port.optional(),
    'control-panel': port.optional(),
  }),
  /** Where its components' `/metrics` answer (default: its SSH host, else the controller URL's host). */
  address: z.string().min(1).optional(),
})

/**
 * `svcops:live`: the live production system on hosts (written by `svcops lab up --live V`; read by
 * the live playbook). Never holds the PSK: that is in the settings file and the components'
 * environment files on the hosts. One host (`host` with `metricsPorts`), or several (`hosts`, the
 * system controller on one of them, ingest, pipeline and control panel instances on any).
 */
export const liveHostsSchema = z
  .strictObject({
    /** The platform (`hosts`, the default; `kubernetes` has its own section: live-cluster.ts). */
    platform: z.literal('hosts').optional(),
    /** Release installed on the hosts. */
    version: semver,
    /** Product prefix of package, program, variable and metric names (`svc`). */
    prefix: z
      .string()
      .regex(/^[a-z][a-z0-9]*$/, 'expected lower-case letters and digits, like svc')
      .default('svc'),
    /** Product folder under /opt, /etc/opt, /var/opt and /var/log (`svc`). */
    productDir: z
      .string()
      .regex(/^[a-z0-9][a-z0-9._-]*$/, 'expected a folder name like svc')
      .default('svc'),
    packageDriver: z.enum(['dpkg', 'apt']).default('apt'),
    serviceDriver: z.enum(['systemd', 'supervisor']).default('systemd'),
    /** Directory holding the components' .deb files (`<prefix>-<component>_<version>_all.deb`), for the dpkg driver. */
    packageDir: z.string().min(1).optional(),
    /** The one host of every component (with `metricsPorts`); or `hosts`. */
    host: liveHostSchema.optional(),
    /** The hosts of the components, each with the components it runs (instead of `host`). */
    hosts: z.array(livePlacedHostSchema).min(1, 'expected at least one host').optional(),
    /** Base URL of the system controller's REST API (without the API prefix). */
    controllerUrl: url,
    /** Port of each component's `/metrics` and `/health` on the host's loopback (with `host`). */
    metricsPorts: z.strictObject({ 'system-controller': port, ingest: port, pipeline: port, 'control-panel': port }).optional(),
    /** The pipeline's TCP control panel endpoints (`host:port`) as configured now. */
    tcpEndpoints: z.array(z.string().regex(/^[^\s,]+:\d{1,5}$/, 'expected host:port')).default([]),
    /** Where the system controller's settings file is now, when not where svcops looks (docs/live.md); read by the live playbook. */
    settingsFile: z.string().startsWith('/', 'expected an absolute path').optional(),
    /**
     * Where each component type's `KEY=VALUE` environment file is on its hosts, when not
     * `/etc/default/<prefix>-<component>` (an assumption: the seed names no place for it).
     */
    envFiles: z
      .partialRecord(
        z.enum(['system-controller', 'ingest', 'pipeline', 'control-panel']),
        z.string().regex(/^\/[^\0\n]*[^/]$/, 'expected an absolute file path'),
      )
      .default({}),
    /** The settings file's former fixed application directory before 6.0 (default /opt/<productDir>/system-controller/etc). */
    legacySettingsDir: z.string().startsWith('/', 'expected an absolute path').optional(),
    /** How long a started component may take to connect to the controller during an upgrade (default 30 s). */
    connectTimeoutSeconds: z.number().int().min(1).max(3600).optional(),
    /** C++ SDK source directories checked by `svcops scan sdk` before an upgrade (a blocking gate). */
    sdkSourceDirs: z.array(z.string().min(1)).default([]),
    /** Files of saved controller calls checked by `svcops migrate requests`. */
    savedRequests: z.array(z.string().min(1)).default([]),
    /** Dashboards and rules checked by `svcops migrate metrics`. */
    metricFiles: z.array(z.string().min(1)).default([]),
    /** The controller's UUID of each instance, by unit name: what the seed's checks ask for (src/config/checks.ts). */
    uuids: liveUuidsSchema,
    /** The site's checks where the seed is silent (docs/contract.md): each a web request, a metric or a command. */
    checks: declaredChecksSchema,
  })
  .superRefine((live, ctx) => {
    for (const rule of LIVE_PLACEMENT_RULES) for (const issue of rule(live)) ctx.addIssue({ code: 'custom', ...issue })
  })

interface PlacementInput {
  host?: unknown
  hosts?: Array<{ name: string; components: Partial<Record<(typeof LIVE_TYPES)[number], number>> }> | undefined
  metricsPorts?: unknown
  uuids?: Record<string, string> | undefined
}
type PlacementIssue = { path: (string | number)[]; message: string }

/** `host` (with `metricsPorts`) or `hosts`, never both, never neither. */
function oneFormOfHosts(live: PlacementInput): PlacementIssue[] {
  if (live.host !== undefined && live.hosts !== undefined)
    return [{ path: ['hosts'], message: 'expected either live.host (one host) or live.hosts (several), not both' }]
  if (live.host === undefined && live.hosts === undefined)
    return [{ path: ['host'], message: 'expected live.host (one host) or live.hosts (the hosts and the components each runs)' }]
  if (live.host !== undefined && live.metricsPorts === undefined)
    return [{ path: ['metricsPorts'], message: 'expected the port of each component with live.host' }]
  if (live.hosts !== undefined && live.metricsPorts !== undefined)
    return [{ path: ['metricsPorts'], message: "expected the ports in each host's components with live.hosts" }]
  return []
}

/** Every host named once and running something; the system controller on exactly one; every other type on at least one. */
function everyTypePlaced(live: PlacementInput): PlacementIssue[] {
  const hosts = live.hosts ?? []
  if (!hosts.length) return []
  const issues: PlacementIssue[] = []
  const seen = new Set<string>()
  for (const [i, h] of hosts.entries()) {
    if (seen.has(h.name)) issues.push({ path: ['hosts', i, 'name'], message: `expected each host once; '${h.name}' is given twice` })
    seen.add(h.name)
    if (!LIVE_TYPES.some((t) => h.components[t] !== undefined))
      issues.push({ path: ['hosts', i, 'components'], message: `expected at least one of ${LIVE_TYPES.join(', ')}` })
  }
  const controllers = hosts.filter((h) => h.components['system-controller'] !== undefined).map((h) => h.name)
  if (controllers.length !== 1)
    issues.push({
      path: ['hosts'],
      message: `expected the system-controller on exactly one host; it is on ${controllers.length ? controllers.join(', ') : 'none'}`,
    })
  for (const t of LIVE_TYPES.slice(1))
    if (!hosts.some((h) => h.components[t] !== undefined))
      issues.push({ path: ['hosts'], message: `expected ${t} on at least one host; no host runs it` })
  return issues
}

/** Every key of `uuids` names an ingest, pipeline or control panel instance of the section: a typo would leave its check unmade. */
function uuidsNameInstances(live: PlacementInput): PlacementIssue[] {
  const members = LIVE_TYPES.slice(1)
  const names = live.hosts
    ? live.hosts.flatMap((h) => members.filter((t) => h.components[t] !== undefined).map((t) => `${h.name}/${t}`))
    : [...members]
  return Object.keys(live.uuids ?? {})
    .filter((k) => !names.includes(k))
    .map((k) => ({
      path: ['uuids', k],
      message: `expected an ingest, pipeline or control-panel instance (${names.join(', ')}); '${k}' is none`,
    }))
}

const LIVE_PLACEMENT_RULES = [oneFormOfHosts, everyTypePlaced, uuidsNameInstances]

/** `svcops:notify`: who is told about runs, and where their metrics go (docs/operations.md). */
export const notifySchema = z.strictObject({
  /** Webhooks told on the run's events; the URL carries the token, so it is a secret reference. */
  webhooks: z
    .array(
      z.strictObject({
        url: secretRef,
        /** `json`: svcops' own body; `slack`: `{ text }`, which Slack, Teams and Mattermost accept. */
        format: z.enum(['json', 'slack']).default('json'),
        /** Events sent to this webhook; all of them when absent. */
        events: z.array(z.enum(['start', 'success', 'failure', 'rollback'])).optional(),
      }),
    )
    .default([]),
  /** Base URL the run folders are served under, for links in notifications; else the report's path. */
  reportBaseUrl: url.optional(),
  metrics: z
    .strictObject({
      /** node_exporter's textfile collector directory: svcops_<environment>.prom is written there. */
      textfileDir: z.string().min(1).optional(),
      /** A Pushgateway (the CronJob's case): the environment's series are pushed after every run. */
      pushgateway: url.optional(),
    })
    .optional(),
})

/**
 * `svcops:runs`: how the runs kept in the environment are authenticated (src/runs/run-mac.ts).
 * `key`: the run key (a 0600 file or a variable, at least 32 bytes), which operators hold and the run
 * stores' writers do not; without it the key is derived from `backup.signingKey` ?? `backup.identity`.
 */
export const runsSchema = z.strictObject({ key: secretRef.optional() })

/** The whole `svcops:` namespace. Sections other than the ones a command needs are optional. */
export const environmentSchema = z.strictObject({
  /** Name of the environment; defaults to the stack name. */
  environment: name.optional(),
  product: productSchema.default({ prefix: 'svc', dir: 'svc' }),
  manager: managerSchema.optional(),
  recording: recordingSchema.optional(),
  upgrade: upgradeSchema.optional(),
  backup: backupSchema.optional(),
  notify: notifySchema.optional(),
  runs: runsSchema.optional(),
  live: liveHostsSchema.optional(),
  /** Pulumi-only settings (`deploy`) and `pulumi config set --secret` values (`psk`, `databasePassword`): src/config/deploy.ts. */
  ...deployKeys,
})

export type Environment = Omit<z.infer<typeof environmentSchema>, 'live'> & {
  name: string
  file: string
  /** The stack's `kubernetes:context` / `kubernetes:kubeconfig` (Pulumi's provider keys), when set. */
  kubernetes?: { context?: string; kubeconfig?: string }
  /** `svcops:live`: the live system on its platform, told apart by `platform`, as `recording.platform` tells the recording service's. */
  live?: LiveSection
}
export type ManagerConfig = z.infer<typeof managerSchema>
export type RecordingConfig = z.infer<typeof recordingSchema>
export type RecordingHostConfig = z.infer<typeof recordingHostSchema>
export type DatabaseConfig = z.infer<typeof databaseSchema>
export type BackupConfig = z.infer<typeof backupSchema>
export type NotifyConfig = z.infer<typeof notifySchema>
export type LiveConfig = z.infer<typeof liveHostsSchema>
/** `svcops:live` on hosts, as the loader gives it: its platform said. */
export type LiveHostsSection = LiveConfig & { platform: 'hosts' }
/** `svcops:live` on either platform: one discriminant, `platform`. */
export type LiveSection = LiveHostsSection | LiveClusterConfig
export type LiveHostConfig = z.infer<typeof liveHostSchema>
export type LivePlacedHostConfig = z.infer<typeof livePlacedHostSchema>
