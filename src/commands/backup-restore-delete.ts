/**
 * `svcops backup restore|delete`: the two backup commands that change what a run may depend on (the
 * database, a backup in the store). Each is a run of the recording service (playbooks/backup-changes.ts):
 * journaled with who, when and from which backup, in `runs list`, under the environment's lock, so
 * never beside a run that is running, paused or was interrupted; delete reads the environment's runs
 * as retention does (`readHeldBackups`), so a backup whose holder is unknown is deleted only with `--force`.
 */
import type { Command } from 'commander'
import { confirm, environmentOf, printResult, showProgress } from './context.ts'

/** The report writer and the observers of runs, as every command that starts a run wires them. */
async function wireRuns(): Promise<void> {
  await (await import('./run-systems.ts')).useRunSystems()
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
    .option(
      '--to-database <url|stack>',
      'restore into another database instead (postgres://USER@HOST:PORT/DATABASE, the password in PGPASSWORD or PGPASSFILE; or the name of a stack whose svcops:recording.database it is), then verify it there',
    )
    .option('--dry-run', 'show the steps without changing anything')
    .addHelpText(
      'after',
      '\nRefuses while other sessions are connected, when the server or pg_restore is older than the backup, when\n--expect-fingerprint does not match, or when the backup belongs to another environment (unless --from-env\nnames it). On any error the database is left as it was.\n\nExamples:\n  svcops backup restore prod-20260101T020000Z-1a2b --env prod --dry-run\n  svcops backup restore prod-20260101T020000Z-1a2b --env prod --yes --json\n  svcops backup restore prod-20260101T020000Z-1a2b --env staging --from-env prod --yes\n  PGPASSFILE=~/.pgpass svcops backup restore prod-20260101T020000Z-1a2b --env prod --to-database postgres://recorder@db2.example.net:5432/recordings --yes',
    )
    .action(
      async (
        id: string,
        options: {
          yes?: boolean
          expectFingerprint?: string
          dryRun?: boolean
          allowUnsigned?: boolean
          fromEnv?: string
          toDatabase?: string
        },
        command: Command,
      ) => {
        if (options.toDatabase !== undefined) {
          await restoreToDatabase(id, { ...options, toDatabase: options.toDatabase }, command)
          return
        }
        const { openBackupContext, readManifest, assertFingerprintFits } = await import('../backup/index.ts')
        const play = await import('../../playbooks/backup-changes.ts')
        const env = await environmentOf(command)
        const asked = {
          id,
          allowUnsigned: options.allowUnsigned ?? false,
          ...(options.fromEnv !== undefined ? { fromEnvironment: options.fromEnv } : {}),
          ...(options.expectFingerprint ? { expectFingerprint: options.expectFingerprint } : {}),
        }
        const stop = showProgress(command)
        try {
          // Checked before the run (nothing is journaled for a backup that is refused): signature, environment, schema.
          const ctx = await openBackupContext(env)
          const manifest = await (async () => {
            try {
              const trust = {
                signers: ctx.signers,
                allowUnsigned: asked.allowUnsigned,
                environment: ctx.environment,
                ...(asked.fromEnvironment !== undefined ? { fromEnvironment: asked.fromEnvironment } : {}),
              }
              const { manifest: read } = await readManifest(ctx.store, id, trust)
              assertFingerprintFits(read, options.expectFingerprint)
              return read
            } finally {
              await ctx.store.close()
            }
          })()
          if (options.dryRun) {
            const steps = await play.planBackupRestore(env, asked)
            const actions = steps.flatMap((s) => s.actions)
            printResult(
              command,
              { ok: true, dryRun: true, steps: actions },
              ['Would:', ...actions.map((a, i) => `  ${i + 1}. ${a}`)].join('\n'),
            )
            return
          }
          const d = ctx.database
          await confirm(
            `Replace every table in ${d.name} on ${d.host}:${d.port} with backup ${id} (taken ${manifest.completedAt})?`,
            options.yes,
            'restoring replaces the database',
          )
          await wireRuns()
          const outcome = await play.restoreBackupRun(env, asked)
          const counts = (outcome.done.rowCounts ?? {}) as Record<string, number>
          printResult(
            command,
            { ok: true, runId: outcome.runId, id, ...outcome.done },
            `Restored backup ${id} into ${d.name}: ${Object.values(counts).reduce((a, b) => a + b, 0)} rows, fingerprint ${String(outcome.done.fingerprint).slice(0, 16)}… equal to the manifest (run ${outcome.runId}).`,
          )
        } finally {
          stop()
        }
      },
    )
}

/** `backup restore ID --to-database X`: into another database (src/backup/restore-elsewhere.ts), checked and verified there. */
async function restoreToDatabase(
  id: string,
  options: { yes?: boolean; expectFingerprint?: string; dryRun?: boolean; allowUnsigned?: boolean; fromEnv?: string; toDatabase: string },
  command: Command,
): Promise<void> {
  const { planRestoreElsewhere, restoreElsewhere, resolveRestoreTarget } = await import('../backup/restore-elsewhere.ts')
  const env = await environmentOf(command)
  const req = {
    id,
    to: options.toDatabase,
    allowUnsigned: options.allowUnsigned ?? false,
    ...(options.fromEnv !== undefined ? { fromEnvironment: options.fromEnv } : {}),
    ...(options.expectFingerprint ? { expectFingerprint: options.expectFingerprint } : {}),
  }
  const stop = showProgress(command)
  try {
    // The checks first (target, signature, environment, schema): a refusal changes nothing, dry run or not.
    const steps = await planRestoreElsewhere(env, req)
    if (options.dryRun) {
      printResult(command, { ok: true, dryRun: true, steps }, ['Would:', ...steps.map((a, i) => `  ${i + 1}. ${a}`)].join('\n'))
      return
    }
    const { target } = resolveRestoreTarget(env, req.to)
    await confirm(
      `Replace every table in ${target.name} on ${target.host}:${target.port} with backup ${id} of '${env.name}'?`,
      options.yes,
      'restoring replaces the database',
    )
    const done = await restoreElsewhere(env, req)
    printResult(
      command,
      {
        ok: true,
        id,
        target: done.target,
        source: done.source,
        verified: done.verified,
        rowCounts: done.rowCounts,
        durationMs: done.durationMs,
      },
      `Restored backup ${id} into ${done.target.name} on ${done.target.host}:${done.target.port}, verified there: ${done.verified.rows} rows, fingerprint ${done.verified.fingerprint.slice(0, 16)}… equal to the manifest.`,
    )
  } finally {
    stop()
  }
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
      const play = await import('../../playbooks/backup-changes.ts')
      const env = await environmentOf(command)
      const asked = { id, force: options.force ?? false }
      if (options.dryRun) {
        const plan = await play.planBackupDelete(env, asked)
        const lines = [
          `Dry run: delete backup ${plan.id} of '${env.name}' (nothing will be removed).`,
          `  take the lock of environment '${env.name}' (refused beside a running, paused or interrupted run)`,
          ...plan.files.map((f) => `  remove ${f} from ${plan.store}`),
          ...(plan.heldBy ? [`  run ${plan.heldBy} can then no longer be rolled back with a restore (--force)`] : []),
        ]
        printResult(command, { ok: true, dryRun: true, ...plan }, () => lines.join('\n'))
        return
      }
      await wireRuns()
      const outcome = await play.deleteBackupRun(env, asked)
      printResult(command, { ok: true, runId: outcome.runId, ...outcome.done }, () => `Deleted backup ${id} (run ${outcome.runId}).`)
    })
}
