/**
 * The recording service's backup runs as the engine runs them (src/runs/run-system.ts): the nightly
 * backup (`svcops backup run`) and the backup commands that change what runs depend on (`backup
 * restore`, `backup delete`, `backup prune`). Each is a run of the recording service, whose database
 * is what is backed up, started through the one run path (run-actions.ts): one record naming who,
 * when, what and from which backup; the environment's lock, refused beside a run that is running,
 * paused or interrupted, naming it; a journal, a report, a line in `runs list`. None is resumed: the
 * restore is one transaction and the others are idempotent, so an interrupted one is run again.
 */
import type { Environment } from '../config/schema.ts'
import { openBackupRun, type BackupRunContext } from '../backup/backup-steps.ts'
import { lockForBackupCommand, readHeldBackups } from '../backup/held-by-runs.ts'
import type { Journal } from '../runs/journal.ts'
import type { Opened, Playbook } from '../runs/playbook.ts'
import type { RunKind } from '../runs/run-record.ts'
import type { RunRequest, RunSystem } from '../runs/run-system.ts'
import { recordingDescription } from './recording-description.ts'
import { emptyRecordingParams, type RecordingParams } from './recording-params.ts'

/** The kinds of run that act on backups. */
export type BackupRunKind = Extract<RunKind, 'backup' | 'restore' | 'delete' | 'prune'>

/** A backup run's request: its environment, and the backup it acts on (restore, delete). */
export interface BackupRunRequest extends RunRequest {
  backupId?: string
}

/** One kind of backup run: its playbook and its context. */
export interface BackupJob<C> {
  kind: BackupRunKind
  /** The command, in its lock's refusal: "backup restore". */
  verb: string
  /** What a refusal says was not done: "restored". */
  done: string
  /** What the run does, in its first line and its dry run's title: "restore backup ID into svc on db:5432". */
  what: string
  playbook: Playbook<C, RecordingParams>
  /** Opens its context (the store, the database target); the dry run opens the same. */
  open(env: Environment, journal: Journal<RecordingParams>): Promise<Opened<C>>
}

/** A backup run of the recording service as the engine runs it. */
export function backupRunSystem<C>(job: BackupJob<C>): RunSystem<RecordingParams, BackupRunRequest, C> {
  return {
    ...recordingDescription,
    newRun: (req) => ({
      kind: job.kind,
      targetVersion: '',
      autoRollback: false,
      params: { ...emptyRecordingParams(), ...(req.backupId ? { backupId: req.backupId } : {}) },
    }),
    announce: (run, env) => `Run ${run.id}: ${job.what} (environment ${env.name}).`,
    async lock(env, run) {
      // The environment's runs, to tell a finished run's leftover lock row from an unfinished one's.
      const { runs } = await readHeldBackups(env, recordingDescription)
      const holder = { runId: run.id, holder: run.holder, since: run.startedAt }
      return { lock: await lockForBackupCommand(env, { verb: job.verb, done: job.done }, runs, holder), takeOver: [] }
    },
    open: (env, journal) => job.open(env, journal),
    openToPlan: (env, journal) => job.open(env, journal),
    playbook: () => job.playbook,
    plan: {
      title: (plan) => `Dry run: ${job.what} in environment '${plan.environment}' (nothing will be changed).`,
      facts: () => ({}),
      lines: (plan) => [`Lock: the run lock of environment '${plan.environment}' (refused beside a running, paused or interrupted run)`],
      continuation: () => ({ what: job.verb, unfinished: 'it is run again, not resumed', more: [] }),
      nothingToUndo: 'a backup run is not rolled back',
    },
  }
}

/** How many backups the nightly backup's prune keeps (`--keep-last`, `--keep-days`); none given: the store's own. */
export type Retention = BackupRunContext['retention']

/**
 * The nightly backup (`svcops backup run`) as a run of the recording service, following `playbook`
 * and pruning by `retention`: one record, the environment's lock (refused beside a running, paused
 * or interrupted run, naming it), the report.
 */
export function nightlyBackupSystem(playbook: BackupJob<BackupRunContext>['playbook'], retention: Retention) {
  return backupRunSystem({
    kind: 'backup',
    verb: 'backup run',
    done: 'backed up',
    what: 'back up the database of the recording service, verify it with a test restore, prune by retention',
    playbook,
    open: (env, journal) => openBackupRun(env, retention, recordingDescription)(journal),
  })
}
