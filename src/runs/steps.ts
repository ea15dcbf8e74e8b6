/**
 * What every step of an upgrade or rollback shares: the run context (environment, hosts and their
 * transports, drivers, settings, journal) and `runStep`, which journals a step's start and end
 * (outcome, what it changed, what it learned) around its work and emits the matching events.
 * A step that the journal already records as finished is not run again on resume.
 */
import type { Environment, RecordingConfig, RecordingHostConfig } from '../config/schema.ts'
import { OperationError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import type { Journal, JournalEntry } from './journal.ts'
import type { PackageDriver } from '../drivers/packages.ts'
import type { Transport } from '../core/runner.ts'
import type { ServiceDriver } from '../drivers/services.ts'
import type { UpgradeDeps } from '../upgrade/deps.ts'

/** A host taking part in a run. */
export interface HostHandle {
  name: string
  config: RecordingHostConfig
  transport: Transport
  url: string
}

/** Settings derived from the environment file, with the defaults of the lab's package layout. */
export interface RunSettings {
  package: string
  service: string
  configPath: string
  logPath: string
  errorPatterns: string[]
  healthTimeoutMs: number
  contentLimit: number
  hostLockPath: string
  logLines: number
}

/** Everything a step needs. */
export interface RunContext {
  env: Environment
  rec: RecordingConfig
  journal: Journal
  /** Hosts of this run in rollout order (canary first). */
  hosts: HostHandle[]
  /** Every host of the environment: a database restore stops all of them, not only this run's. */
  allHosts: HostHandle[]
  pkg: PackageDriver
  svc: ServiceDriver
  deps: UpgradeDeps
  settings: RunSettings
  /** The local package file of a version (dpkg driver), else undefined. */
  packageFile(version: string): string | undefined
}

/** What a step reports back: what it changed on the system, and facts for later steps. */
export interface StepResult {
  changed?: string[]
  data?: Record<string, unknown>
  /** The step had nothing to do (already done); the reason. */
  skipped?: string
}

/** Default settings for an environment's recording section. */
export function settingsFor(env: Environment, rec: RecordingConfig): RunSettings {
  const dir = env.product.dir
  return {
    package: rec.package,
    service: rec.service,
    configPath: rec.configPath ?? `/etc/opt/${dir}/recording.json`,
    logPath: rec.logPath ?? `/var/log/${dir}/recording.log`,
    errorPatterns: rec.errorPatterns ?? ['\\bERROR\\b', '\\bFATAL\\b', 'panic'],
    healthTimeoutMs: (rec.healthTimeoutSeconds ?? 60) * 1000,
    contentLimit: rec.contentLimit ?? 10_000,
    hostLockPath: '/var/lib/svcops/upgrade.lock',
    logLines: 50,
  }
}

/** The test hook: `SVCOPS_TEST_KILL_AT=step` or `step@host` kills this process with SIGKILL right after that step finished. */
function killHook(step: string, host: string | undefined): void {
  const at = process.env.SVCOPS_TEST_KILL_AT
  if (!at) return
  if (at === step || (host && at === `${step}@${host}`)) process.kill(process.pid, 'SIGKILL')
}

/**
 * Runs one named step: journals start, runs `fn`, journals ok (or skipped) with what changed, or
 * failed with the reason; emits step events. With `once`, a step the journal records as finished
 * is skipped and its recorded result returned (resume).
 */
export async function runStep(
  ctx: Pick<RunContext, 'journal'>,
  step: string,
  host: string | undefined,
  fn: () => Promise<StepResult>,
  options: { once?: boolean } = {},
): Promise<StepResult> {
  const at = host ? { host } : {}
  if (options.once) {
    const done: JournalEntry | undefined = ctx.journal.finished(step, host)
    if (done) {
      events.emit({ kind: 'step', step, status: 'skipped', detail: 'done before the interruption', ...at })
      return {
        ...(done.changed ? { changed: done.changed } : {}),
        ...(done.data ? { data: done.data } : {}),
        skipped: 'done before the interruption',
      }
    }
  }
  const started = Date.now()
  ctx.journal.append({ step, status: 'start', ...at })
  events.emit({ kind: 'step', step, status: 'start', ...at })
  let result: StepResult
  try {
    result = await fn()
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error)
    const durationMs = Date.now() - started
    ctx.journal.append({ step, status: 'failed', detail, durationMs, ...at })
    events.emit({ kind: 'step', step, status: 'failed', detail, durationMs, ...at })
    throw error instanceof Error ? error : new OperationError(detail)
  }
  const durationMs = Date.now() - started
  const status = result.skipped ? 'skipped' : 'ok'
  // A skipped step still counts as finished for resume: the journal stores it as ok with the reason.
  ctx.journal.append({
    step,
    status: 'ok',
    durationMs,
    ...at,
    ...(result.changed?.length ? { changed: result.changed } : {}),
    ...(result.data ? { data: result.data } : {}),
    ...(result.skipped ? { detail: result.skipped } : {}),
  })
  events.emit({
    kind: 'step',
    step,
    status,
    durationMs,
    ...at,
    ...(result.skipped ? { detail: result.skipped } : result.changed?.length ? { detail: result.changed.join('; ') } : {}),
  })
  killHook(step, host)
  return result
}

/** A failure of one host's step, carrying what the rollback decision needs. */
export class HostFailure extends OperationError {
  constructor(
    readonly host: string,
    readonly step: string,
    message: string,
    /** Recordings of the snapshot were missing: the data changed, a restore is needed. */
    readonly dataLoss = false,
  ) {
    super(message)
  }
}
