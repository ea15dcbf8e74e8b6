/**
 * `svcops backup restore|delete`: the two backup commands that change what a run may depend on (the
 * database, a backup in the store). Both take the environment's lock, so never act beside a run
 * that is running, paused or was interrupted; both read the environment's runs as retention does
 * (`readHeldBackups`), so a backup whose holder is unknown is deleted only with `--force`.
 */
import type { Command } from 'commander'
import type { Environment } from '../config/schema.ts'
import type { HeldByRuns } from '../backup/held-by-runs.ts'
import { confirm, environmentOf, printResult, showProgress } from './context.ts'

/** The environment's runs and the backups they hold, from its run stores and the local folder, as retention reads them. */
async function heldByRuns(env: Environment): Promise<HeldByRuns> {
  await (await import('./run-systems.ts')).useRunSystems() // the environment's run store, with the local folder
  const { recordingDescription } = await import('../recording/recording-description.ts')
  return (await import('../backup/held-by-runs.ts')).readHeldBackups(env, recordingDescription.name)
}

/** Registers `backup restore <id>`. */
export function registerRestore(backup: Command): void {
  backup
    .command('restore <id>')
    .description('Verify the backup, then replace the service database with it in one transaction. Stop the recording service first.')
    .option('-y, --yes', 'do not ask for confirmation (scripts)')
    .option('--expect-fingerprint <sha256>', 'refuse unless the backup holds this schema fingerprint')
    .option('--allow-unsigned', 'restore a backup without a signature (made before svcops signed backups); never one with a bad signature')
    .option(
      '--from-env <name>',
      "restore a backup of that other environment (its signed manifest must name it); otherwise only this environment's",
    )
    .option('--dry-run', 'show the steps without changing anything')
    .addHelpText(
      'after',
      '\nRefuses while other sessions are connected, when the server or pg_restore is older than the backup, when\n--expect-fingerprint does not match, or when the backup belongs to another environment (unless --from-env\nnames it). On any error the database is left as it was.\n\nExamples:\n  svcops backup restore prod-20260101T020000Z-1a2b --env prod --dry-run\n  svcops backup restore prod-20260101T020000Z-1a2b --env prod --yes --json\n  svcops backup restore prod-20260101T020000Z-1a2b --env staging --from-env prod --yes',
    )
    .action(
      async (
        id: string,
        options: { yes?: boolean; expectFingerprint?: string; dryRun?: boolean; allowUnsigned?: boolean; fromEnv?: string },
        command: Command,
      ) => {
        const { openBackupContext, readIdentity, readManifest, restoreBackup, planRestore, assertFingerprintFits } =
          await import('../backup/index.ts')
        const env = await environmentOf(command)
        const ctx = await openBackupContext(env)
        const stop = showProgress(command)
        try {
          const trust = {
            signers: ctx.signers,
            allowUnsigned: options.allowUnsigned ?? false,
            environment: ctx.environment,
            ...(options.fromEnv !== undefined ? { fromEnvironment: options.fromEnv } : {}),
          }
          const { manifest } = await readManifest(ctx.store, id, trust)
          assertFingerprintFits(manifest, options.expectFingerprint)
          if (options.dryRun) {
            const steps = planRestore(manifest, ctx.database)
            printResult(command, { ok: true, dryRun: true, steps }, ['Would:', ...steps.map((s, i) => `  ${i + 1}. ${s}`)].join('\n'))
            return
          }
          const identity = await readIdentity(ctx.backup)
          const d = ctx.database
          // Never beside a run: it may be changing the database now, or its rollback may need it as it is.
          const { runs } = await heldByRuns(env)
          const { lockForBackupCommand } = await import('../backup/held-by-runs.ts')
          const lock = await lockForBackupCommand(env, { verb: 'backup restore', done: 'restored' }, runs)
          let report: Awaited<ReturnType<typeof restoreBackup>>
          try {
            await confirm(
              `Replace every table in ${d.name} on ${d.host}:${d.port} with backup ${id} (taken ${manifest.completedAt})?`,
              options.yes,
              'restoring replaces the database',
            )
            report = await restoreBackup(ctx.store, id, d, {
              ...trust,
              identity,
              confirmed: true,
              ...(options.expectFingerprint ? { expectFingerprint: options.expectFingerprint } : {}),
            })
          } finally {
            await lock.release()
          }
          printResult(
            command,
            { ok: true, ...report },
            `Restored backup ${id} into ${d.name}: ${Object.values(report.rowCounts).reduce((a, b) => a + b, 0)} rows, fingerprint ${report.fingerprint.slice(0, 16)}… equal to the manifest.`,
          )
        } finally {
          stop()
          await ctx.store.close()
        }
      },
    )
}

/** Registers `backup delete <id>`. */
export function registerDelete(backup: Command): void {
  backup
    .command('delete <id>')
    .description(
      'Delete one backup of this environment. One that a run can still roll back to (backup list: "held by run") needs --force: that run then cannot restore. So does any backup while the runs that may hold it cannot be read, or one of them is refused (changed after it was signed).',
    )
    .option('--force', 'delete it even though a run holds it, or may')
    .option('--dry-run', 'show the files it would remove from the store after the same checks; remove nothing, take no lock')
    .addHelpText(
      'after',
      '\nExamples:\n  svcops backup delete lab-20261122T031500Z-3fa9 --env lab --dry-run\n  svcops backup delete lab-20261122T031500Z-3fa9 --env lab\n  svcops backup delete lab-20261122T031500Z-3fa9 --env lab --force',
    )
    .action(async (id: string, options: { force?: boolean; dryRun?: boolean }, command: Command) => {
      const { deleteBackup, openStore, planDeleteBackup } = await import('../backup/index.ts')
      const { requireSection } = await import('../config/load.ts')
      const env = await environmentOf(command)
      const store = await openStore(requireSection(env, 'backup'))
      try {
        // Held as retention sees it: when that is unknown (a store unread, a record refused), only --force deletes.
        const { held, unknown, runs } = await heldByRuns(env)
        const holding = {
          environment: env.name,
          held,
          ...(unknown !== undefined ? { heldUnknown: unknown } : {}),
          force: options.force ?? false,
        }
        if (options.dryRun) {
          const plan = await planDeleteBackup(store, id, holding)
          const lines = [
            `Dry run: delete backup ${plan.id} of '${env.name}' (nothing will be removed).`,
            `  take the lock of environment '${env.name}' (refused beside a running, paused or interrupted run)`,
            ...plan.files.map((f) => `  remove ${f} from ${store.location}`),
            ...(plan.heldBy ? [`  run ${plan.heldBy} can then no longer be rolled back with a restore (--force)`] : []),
          ]
          printResult(command, { ok: true, dryRun: true, ...plan, store: store.location }, () => lines.join('\n'))
          return
        }
        // Never beside a run: one running, paused or interrupted may still restore this very backup.
        const { lockForBackupCommand } = await import('../backup/held-by-runs.ts')
        const lock = await lockForBackupCommand(env, { verb: 'backup delete', done: 'deleted' }, runs)
        try {
          const done = await deleteBackup(store, id, holding)
          printResult(command, { ok: true, deleted: done.id, heldBy: done.heldBy ?? null }, () => `Deleted backup ${done.id}.`)
        } finally {
          await lock.release()
        }
      } finally {
        await store.close()
      }
    })
}
