/**
 * How the recording service's steps reach the service: one interface, whatever it runs on. The
 * steps (target-steps.ts, preflight.ts, ...) are declared once and call these; a platform is one
 * folder implementing them:
 *
 *   hosts/        OS packages and a service manager on each host, over SSH or locally
 *                 (`recording.platform: hosts`, the default)
 *   kubernetes/   the Deployment of this project's Pulumi program: the version in the stack file,
 *                 `pulumi up`, pods and logs through the API (`recording.platform: kubernetes`)
 *
 * A platform only reads and acts; what its reads mean — a start that will not heal, a check that
 * fails — is judged once, for every platform, in recording-judge.ts. Its unit of rollout is its own
 * target (a host; on Kubernetes the Deployment): the rollout, the journal and the report name it.
 */
import type { RecordingHostConfig } from '../config/schema.ts'
import type { Transport } from '../core/runner.ts'
import type { LockHolder } from '../runs/lock.ts'
import type { LockPolicy } from '../runs/lock-policy.ts'
import type { StepResult } from '../runs/step.ts'

/** What a rollout acts on: a host, or on Kubernetes the Deployment. */
export interface RecordingTarget {
  readonly name: string
  /** Where the service's API answers (on Kubernetes the Service, through a port-forward once it is open). */
  readonly url: string
  /** Marked as the canary in the environment file. */
  readonly canary?: boolean
}

/** A target that is a host with a shell: its configuration and its transport (what the doctor reads). */
export interface RecordingHost extends RecordingTarget {
  readonly config: RecordingHostConfig
  readonly transport: Transport
}

/** The service on a target, as read now. */
export interface TargetStatus {
  running: boolean
  /** What the service manager or the API says, for people. */
  status: string
  /** It will not come up by itself (FATAL, EXITED; a pod in CrashLoopBackOff): waiting is pointless. */
  gaveUp: boolean
  /** It is on its way up (STARTING, activating; pods being created). */
  starting: boolean
  /**
   * It exited since the start and the service manager starts it again in a moment (systemd's
   * `auto-restart` under `Restart=`): a crash on the way up; on the way back, a release that may
   * come up at the next start.
   */
  restarting?: boolean
}

/** Where the platform records the version the environment should run (the stack file on Kubernetes). */
export interface VersionRecord {
  /** What it is, for sentences: "the stack file". */
  what: string
  file: string
  key: string
  version: string | null
}

/**
 * What running a version on a target needs, as read now: each missing part one sentence (refused);
 * what was proven, for the journal (a later check of the run reads it back as `earlier`); and what
 * could not be proven either way, in sentences.
 */
export interface TargetReadiness {
  missing: string[]
  proven?: Record<string, unknown>
  unproven?: string[]
}

/** What the dry run shows of a call. */
export type DescribedCall = 'stop' | 'start' | 'review-config' | 'wait-healthy' | 'check-logs'

export interface RecordingPlatform {
  /** What it is, for sentences: "hosts", "Kubernetes". */
  readonly name: string
  /** Every target of the environment, in its order (the canary as marked). */
  readonly targets: RecordingTarget[]
  /** The service on a target, for sentences: "svc-recording on rec-1", "the Deployment svc-recording". */
  label(target: RecordingTarget): string

  /** Opens what the run needs before its first call (a port-forward to the Service); nothing on hosts. */
  connect(): Promise<void>
  /** Closes every connection the platform opened. */
  close(): Promise<void>
  /** Files a run leaves a copy of in its run folder (the stack file on Kubernetes: the record to commit). */
  records(): string[]

  /** Takes each target's own lock (a lock file on each host); the environment's lock is the run's. */
  lockTargets(holder: LockHolder, options: { takeOver: string[]; lockPolicy: LockPolicy }): Promise<void>
  /** Releases what `lockTargets` took; never throws. */
  unlockTargets(runId: string): Promise<void>
  /** The targets' locks, for the preflight's dry run ('' when there are none). */
  describeLocks(): string

  /** The platform's own checks before anything changes (CLI, API, rights), for the dry run. */
  describePreflight(): string[]
  /** Runs them: refuses (throws) what would make the run fail; returns what it found, for the journal. */
  checkPreflight(): Promise<Record<string, unknown>>
  /** How the installed versions are read, for the dry run. */
  describeVersionRead(first: RecordingTarget | undefined): string[]
  /** The version each target runs, by target name (a target without one is left out). */
  versions(): Promise<Record<string, string>>
  /** Where the environment's version is recorded, if the platform keeps such a record. */
  versionRecord(): VersionRecord | undefined
  /** The record's check of the final verification, for the dry run. */
  describeVersionRecord(): string[]

  /**
   * What running `version` on the target needs, read without changing anything: the target
   * reachable, the rights to act on it, the package (hosts) or image (Kubernetes) at hand; `earlier`
   * is what an earlier check of the run proved on the target (its `proven`). `missing` is empty when
   * it is all there (a rollback's precondition).
   */
  findMissing(target: RecordingTarget, version: string, earlier?: Record<string, unknown>): Promise<TargetReadiness>
  /** How `findMissing` reads, for the dry run. */
  describeFindMissing(target: RecordingTarget, version: string): string[]
  /** Makes `versions` available on the target without installing them (nothing stops for a download). */
  stage(target: RecordingTarget, versions: string[]): Promise<StepResult>
  describeStage(target: RecordingTarget, versions: string[]): string[]
  stop(target: RecordingTarget): Promise<StepResult>
  /** Installs exactly `version` (up or down); `data.from`/`data.to` say from what to what. */
  install(target: RecordingTarget, version: string): Promise<StepResult>
  describeInstall(target: RecordingTarget, version: string): Promise<string[]>
  /** The configuration the new version brings, reviewed; throws on one the service cannot start with. */
  reviewConfig(target: RecordingTarget): Promise<StepResult>
  /** Starts the service; from then on, `logsSinceStart` reads this start's lines. */
  start(target: RecordingTarget): Promise<StepResult>
  status(target: RecordingTarget): Promise<TargetStatus>
  /** The service's log lines written since its last start by this run (its last lines when unknown). */
  logsSinceStart(target: RecordingTarget): Promise<string[]>
  /** The service's last log lines, whenever written. */
  recentLogs(target: RecordingTarget): Promise<string[]>
  /** What a call would do on the target, with the exact commands, from the same drivers it uses. */
  describe(call: DescribedCall, target: RecordingTarget): string[]
  /** How often a waiting step asks again, in ms. */
  readonly pollMs: number

  /**
   * The target as a host with a shell, offered only by a platform whose targets are hosts (the doctor
   * reads the service's files there); absent on Kubernetes, where the doctor reads the pods through
   * the API.
   */
  readonly hostOf?: (target: RecordingTarget) => RecordingHost
}
