/**
 * How the live playbooks reach the live production system: one interface, whatever it runs on. The
 * steps (live-steps.ts) are declared once and call these; a platform is one folder implementing them:
 *
 *   hosts/        the components' packages and services on the live host, its settings and
 *                 environment files (`svcops:live` with a host, the default)
 *   kubernetes/   the Deployments of this project's Pulumi program: the release and the PSK
 *                 rotation in the stack file, `pulumi up`, pods, logs and the controller's Service
 *                 through the API (`svcops:live.platform: kubernetes`)
 *
 * What a check reads is judged once, for every platform, in live-judge.ts.
 */
import type { LiveHost } from './hosts/host-files.ts'
import type { Environment, LiveConfig } from '../config/schema.ts'
import type { Transport } from '../core/runner.ts'
import type { Journal } from '../runs/journal.ts'
import type { LiveParams } from './live-params.ts'
import type { StepResult } from '../runs/step.ts'
import type { LiveProduct } from './layout.ts'
import type { LiveUnit } from './live-placement.ts'
import type { CheckResult } from './live-judge.ts'
import type { LiveBackupData } from './live-step-data.ts'

/** What a platform is opened for: the run's environment, the live section it reads, and the run's journal. */
export interface LiveScope {
  env: Environment
  live: LiveConfig
  product: LiveProduct
  journal: Journal<LiveParams>
}

/** A call the dry run shows per component. */
export type LiveCall = 'stage' | 'install' | 'stop' | 'start' | 'status'

/** What the playbook asks of a platform. */
export interface LivePlatform {
  /**
   * The host the system runs on (across hosts, the system controller's), for a site's own commands
   * (playbooks/site/): its name, sandbox root and transport. Offered only by a platform with hosts;
   * absent on Kubernetes, where svcops reads the cluster through its API.
   */
  readonly hostOf?: () => LiveHost
  /** Where the system runs, for sentences: the live host's name (the hosts' names), or the namespace. */
  readonly where: string
  /** What a run stops, installs, starts and checks, in dependency order: each component's instances on their hosts, or its Deployment. */
  readonly units: LiveUnit[]
  /** How long a started component may take to come up and connect. */
  readonly connectTimeoutMs: number
  /** Closes what the platform opened (the host's connection, a port-forward). */
  close(): Promise<void>

  /** The installed version, or undefined when the component is not installed. */
  installedVersion(unit: LiveUnit): Promise<string | undefined>
  /** Refuses (bad input, naming what is missing) a version whose package cannot be found where the platform takes it from. */
  assertAvailable(unit: LiveUnit, version: string): void
  /** The platform's own checks before anything changes (CLI, API, rights), for the dry run; and what the preflight adds to its version check. */
  describePreflight(to: string): { versionCheck: string; more: string[] }
  /** Runs them, knowing the release installed now; what they found, for the journal (undefined: nothing to check). */
  checkPreflight(installed: string | undefined): Promise<Record<string, unknown> | undefined>
  /**
   * Each filesystem the upgrade writes to before its first stop, read now: on each host, the package
   * cache that receives the packages of `versions` it stages and the folder that receives the copies
   * of the settings and environment files; what it would write there and what is free ([]: nothing
   * is written where the system runs, as on Kubernetes). Judged by live-room.ts.
   */
  readRoom(versions: string[]): Promise<RoomReading[]>
  /** What `readRoom` reads, for the dry run. */
  describeRoom(): string[]
  /** Makes `versions` available without installing them (nothing stops for a download). */
  stage(unit: LiveUnit, versions: string[]): Promise<StepResult>
  /** Installs exactly `version` (up or down). */
  install(unit: LiveUnit, version: string): Promise<void>
  stop(unit: LiveUnit): Promise<void>
  /** Starts the component; returns a position in its log (lines after it are this start's). */
  start(unit: LiveUnit): Promise<string | undefined>
  status(unit: LiveUnit): Promise<{ running: boolean; status: string }>
  /** Error lines the component logged since `cursor` (its last lines when unknown). */
  errorLines(unit: LiveUnit, cursor: string | undefined): Promise<string[]>
  /** The exact commands of each call, for the dry run. */
  describe(call: LiveCall, unit: LiveUnit, version?: string): string[]

  /** The configuration the run reads before anything changes: refuses what svcops cannot change for people. */
  checkConfig(from: string, to: string): Promise<StepResult>
  describeConfigCheck(from: string, to: string): string[]
  /** Keeps what the run may change (files into the run folder, 0600; on Kubernetes the stack file's values in the journal). */
  backupConfig(): Promise<StepResult>
  describeConfigBackup(): string[]
  /** Writes what the target needs (a PSK, the settings file where it is read, one TCP endpoint), while nothing runs. */
  writeConfig(from: string, to: string): Promise<StepResult>
  describeConfigWrite(from: string, to: string): Promise<string[]>
  /** Puts back what `backupConfig` kept (`backup`: the data its step journaled, its shape checked). */
  restoreConfig(backup: LiveBackupData | undefined): Promise<StepResult>
  describeConfigRestore(backup: LiveBackupData | undefined): string[]

  /**
   * What a rollback would miss, read before anything stops: the host or the cluster reachable, the
   * package (or image) of each release in `previous` (the units the rollback installs, by name,
   * each with its release before the run) at hand, the run's copy of what `restoreConfig` puts back
   * (`backup`). `earlier`: the facts an earlier check of the same run journaled. `missing` is empty
   * when everything is there. `describeRollbackNeeds` says what is read, for the dry run.
   */
  findRollbackMissing(
    previous: Record<string, string>,
    backup: LiveBackupData | undefined,
    earlier?: Record<string, unknown>,
  ): Promise<RollbackReading>
  describeRollbackNeeds(previous: Record<string, string>): string[]

  /** Every check of a started component of `version`, waiting up to `waitMs` for it to come up and connect. */
  checkComponent(unit: LiveUnit, version: string, options: { cursor?: string | undefined; waitMs: number }): Promise<CheckResult[]>
  describeCheck(unit: LiveUnit, version: string): string[]
  /** The whole system on `version`: the controller lists every unit connected; every unit on it (but `leftOut`: units a rollout tolerated failing, by name). */
  checkSystem(version: string, leftOut?: string[]): Promise<{ checks: CheckResult[]; data: Record<string, unknown> }>
  describeSystemCheck(version: string): string[]
  /** The configuration of `version` as it should be (settings where read, one strong PSK), for `svcops verify live`. */
  verifyConfig(version: string): Promise<CheckResult[]>
  /** The controller on the prefix of `version` (what `svcops verify live` checks when no component is installed). */
  controllerStatus(version: string): Promise<CheckResult>
  /** `svcops psk rotate`'s writes: the files on hosts (hosts/psk-rotate-files.ts), `pskRotation` on Kubernetes (kubernetes/psk-rotation.ts). */
  readonly psk?: PskRotation
}

/** A new PSK for the live system of `release`: the files read first, then written, the controller's first. */
export interface PskRotation {
  /** Reads the settings file and every environment file; refuses a settings file without a PSK. */
  check(release: string): Promise<StepResult>
  describeCheck(release: string): Promise<string[]>
  /** Writes a new key (or the one this run already gave the controller), idempotent; `backup`: the backup step's data. */
  write(release: string, backup: LiveBackupData | undefined): Promise<StepResult>
  describeWrite(release: string): Promise<string[]>
  /**
   * Where a step of its own gives the components the key written (Kubernetes: `pulumi up`, the
   * controller first), after the write and after the rollback's restore; the components are
   * disconnected from its start. Absent where each component reads the key when it starts.
   */
  readonly apply?: { what: string; act(): Promise<StepResult>; describe(): string[] }
}

/** What a platform read of a rollback's needs: what is missing, facts for the journal, what it could not prove (said, not refused). */
export interface RollbackReading {
  missing: string[]
  facts?: Record<string, unknown>
  unproven?: string[]
}

/** A filesystem of a host the upgrade writes to before its first stop: what it writes there, and what is free. */
export interface RoomReading {
  host: string
  /** The folders written to on that filesystem, as paths on the host. */
  paths: string[]
  /** The filesystem's mount point, as `df -P` names it. */
  mount: string
  /** The bytes the run writes there, without the margin. */
  needed: number
  /** The bytes free for the user svcops acts as (`df -Pk`'s Available). */
  free: number
  /** What is written there, for sentences ("the staged packages"). */
  what: string[]
}

/** Where the run lock of a live system is: a file, and the transport that reaches it. */
export interface LiveLockPlace {
  transport: Transport
  path: string
}
