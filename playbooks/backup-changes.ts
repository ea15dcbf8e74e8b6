/**
 * Playbooks: the backup commands that change what runs depend on, each one step — `svcops backup
 * restore ID` (the database replaced by a checked backup), `svcops backup delete ID` (one backup
 * removed from the store) and `svcops backup prune` (those the retention no longer keeps). Each is a run of the recording service started through the one run path:
 * journaled with who, when, what and from which backup, under the environment's lock (refused beside
 * a running, paused or interrupted run, naming it), in `runs list` and report.html.
 */
import type { Environment } from '../src/config/schema.ts'
import {
  deleteStoredBackup,
  openBackupChange,
  planDelete,
  pruneStore,
  pruneStoredBackups,
  restoreDatabase,
  type BackupChangeContext,
  type DeleteAsked,
  type PruneAsked,
  type RestoreAsked,
} from '../src/backup/backup-change-steps.ts'
import type { PlannedStep, Run } from '../src/runs/engine.ts'
import { backupRunSystem } from '../src/recording/backup-runs.ts'
import { recordingDescription } from '../src/recording/recording-description.ts'
import type { Playbook, RunOutcome } from '../src/runs/playbook.ts'
import { Journal } from '../src/runs/journal.ts'
import { newSystemRecord, planSystemRun, startSystemRun } from '../src/runs/run-actions.ts'

export const restoreRecordingDatabase: Playbook<BackupChangeContext<RestoreAsked>> = {
  kind: 'restore',
  what: (run) => `The restore of backup ${String(run.params.backupId)}`,
  rollbackCommand: (run) => `svcops runs show ${run.id}`,
  async procedure(run: Run<BackupChangeContext<RestoreAsked>>) {
    await run.step(restoreDatabase) // checked (signature, environment, checksum, key), then loaded in one transaction
  },
}

export const deleteRecordingBackup: Playbook<BackupChangeContext<DeleteAsked>> = {
  kind: 'delete',
  what: (run) => `The deletion of backup ${String(run.params.backupId)}`,
  rollbackCommand: (run) => `svcops runs show ${run.id}`,
  async procedure(run: Run<BackupChangeContext<DeleteAsked>>) {
    await run.step(deleteStoredBackup) // never one a run holds, unless --force
  },
}

export const pruneRecordingBackups: Playbook<BackupChangeContext<PruneAsked>> = {
  kind: 'prune',
  what: () => 'The prune of the backup store',
  rollbackCommand: (run) => `svcops runs show ${run.id}`,
  async procedure(run: Run<BackupChangeContext<PruneAsked>>) {
    await run.step(pruneStoredBackups) // keep the newest N and the younger than D days, never the newest verified, never one a run holds
  },
}

/** `backup restore` of `asked.id` into `env`'s database, as a run of the recording service. */
function restoreSystem(env: Environment, asked: RestoreAsked) {
  const d = env.recording?.database
  return backupRunSystem({
    kind: 'restore',
    verb: 'backup restore',
    done: 'restored',
    what: `restore backup ${asked.id} into ${d?.name ?? '?'} on ${d?.host ?? '?'}:${d?.port ?? '?'}`,
    playbook: restoreRecordingDatabase,
    open: (e, journal) => openBackupChange(e, recordingDescription, asked)(journal),
  })
}

/** `backup delete` of `asked.id` from `env`'s store, as a run of the recording service. */
function deleteSystem(asked: DeleteAsked) {
  return backupRunSystem({
    kind: 'delete',
    verb: 'backup delete',
    done: 'deleted',
    what: `delete backup ${asked.id} from the store`,
    playbook: deleteRecordingBackup,
    open: (e, journal) => openBackupChange(e, recordingDescription, asked)(journal),
  })
}

/** Restores backup `asked.id` (a locked, journaled run); `done`: the restore's report. */
export async function restoreBackupRun(env: Environment, asked: RestoreAsked): Promise<RunOutcome & { done: Record<string, unknown> }> {
  const outcome = await startSystemRun(restoreSystem(env, asked), { env, backupId: asked.id })
  return { ...outcome, done: doneOf(outcome) }
}

/** The dry run of a restore: its steps, from the same step that acts. */
export async function planBackupRestore(env: Environment, asked: RestoreAsked): Promise<PlannedStep[]> {
  return (await planSystemRun(restoreSystem(env, asked), { env, backupId: asked.id })).steps
}

/** Deletes backup `asked.id` (a locked, journaled run). */
export async function deleteBackupRun(env: Environment, asked: DeleteAsked): Promise<RunOutcome & { done: Record<string, unknown> }> {
  const outcome = await startSystemRun(deleteSystem(asked), { env, backupId: asked.id })
  return { ...outcome, done: doneOf(outcome) }
}

/** The dry run of a delete: the files it would remove and the run that holds the backup, read as its step reads them; no lock, no run. */
export async function planBackupDelete(env: Environment, asked: DeleteAsked) {
  const opened = await openBackupChange(env, recordingDescription, asked)(Journal.inMemory(newSystemRecord(deleteSystem(asked), { env })))
  try {
    return { ...(await planDelete(opened.ctx)), store: opened.ctx.backup.store.location }
  } finally {
    await opened.close()
  }
}

/** `backup prune` of `env`'s store by retention `asked`, as a run of the recording service. */
function pruneSystem(asked: PruneAsked) {
  return backupRunSystem({
    kind: 'prune',
    verb: 'backup prune',
    done: 'removed',
    what: 'prune the backup store by retention',
    playbook: pruneRecordingBackups,
    open: (e, journal) => openBackupChange(e, recordingDescription, asked)(journal),
  })
}

/** Prunes `env`'s store by retention (a locked, journaled run); `done`: the plan it carried out. */
export async function pruneBackupRun(env: Environment, asked: PruneAsked): Promise<RunOutcome & { done: Record<string, unknown> }> {
  const outcome = await startSystemRun(pruneSystem(asked), { env })
  return { ...outcome, done: doneOf(outcome) }
}

/**
 * The dry run of a prune: the retention's plan (what is kept and why) read as the step reads it,
 * with no lock and no run (it only reads).
 */
export async function planBackupPrune(env: Environment, asked: PruneAsked) {
  const opened = await openBackupChange(env, recordingDescription, asked)(Journal.inMemory(pruneSystemRecord(env, asked)))
  try {
    return await pruneStore(opened.ctx, true)
  } finally {
    await opened.close()
  }
}

/** The record a prune's dry run reads with (kept in memory). */
function pruneSystemRecord(env: Environment, asked: PruneAsked) {
  return newSystemRecord(pruneSystem(asked), { env })
}

/** What the run's one step recorded (its finished entry's data). */
function doneOf(outcome: RunOutcome): Record<string, unknown> {
  return outcome.report.timeline.findLast((e) => e.status === 'ok')?.data ?? {}
}
