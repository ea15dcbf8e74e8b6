/**
 * `svcops backup create|list|verify|restore|prune|keygen`: encrypted, verified backups of the
 * recording service database that plain `gpg --decrypt | zstd -d | pg_restore` can restore too. The work
 * lives in src/backup; this file only declares commands and prints their results.
 */
import type { Command } from 'commander'
import { ExitCode } from '../core/errors.ts'
import { formatBytes } from '../core/units.ts'
import { environmentOf, printResult, showProgress } from './context.ts'
import { exitAfterOutput } from './plan.ts'
import { ioOf } from './run-output.ts'
import { declareCommand, nonNegativeNumber } from '../core/option-table.ts'
import { BACKUP_RUN, type BackupRunFlags } from '../../playbooks/lib/backup-commands.ts'
import { registerDelete, registerRestore } from './backup-restore-delete.ts'

function parseCount(value: string, flag: string): number {
  return nonNegativeNumber(flag)(value)
}

/** Registers `backup` and its subcommands. */
export function register(program: Command): void {
  const backup = program
    .command('backup')
    .description("Back up, verify, restore and prune the recording service's database (OpenPGP-encrypted pg_dump).")
    .addHelpText(
      'after',
      `
Backups are pg_dump custom-format archives encrypted to the public keys in backup.recipients; a
JSON manifest beside each one records checksums, row counts and the schema fingerprint, and is
signed (<id>.manifest.json.sig) by backup.signingKey. Verify and restore accept only backups signed
by one of backup.signers (gpg --verify checks the same signature). Any holder
of a recipient's private key can restore one by hand: gpg --decrypt FILE | zstd -d | pg_restore -d DB.

Examples:
  svcops backup keygen --out-dir ./keys --name "svcops backups prod"
  svcops backup keygen --out-dir /etc/svcops/keys --name "svcops backup signing prod" --signing
  svcops backup create --env prod
  svcops backup verify prod-20260101T020000Z-1a2b --restore-test --env prod`,
    )
  registerBackupRun(backup)
  registerCreate(backup)
  registerList(backup)
  registerVerify(backup)
  registerRestore(backup)
  registerPrune(backup)
  registerDelete(backup)
  registerKeygen(backup)
}

function registerBackupRun(backup: Command): void {
  declareCommand(backup, BACKUP_RUN).action(async (flags: BackupRunFlags, command: Command) => {
    const play = await import('../../playbooks/backup.ts')
    await play.nightlyBackupCommand(flags, ioOf(command))
  })
}

function registerCreate(backup: Command): void {
  backup
    .command('create')
    .description('Dump the service database, encrypt it on the way into the store, write the manifest last.')
    .option('--dry-run', 'show the steps without connecting or writing anything')
    .addHelpText('after', '\nExamples:\n  svcops backup create --env prod\n  svcops backup create --env prod --dry-run --json')
    .action(async (options: { dryRun?: boolean }, command: Command) => {
      const { openBackupContext, createBackup, planBackup } = await import('../backup/index.ts')
      const ctx = await openBackupContext(await environmentOf(command))
      const stop = showProgress(command)
      try {
        if (options.dryRun) {
          const steps = planBackup({ ...ctx.createOptions, storeLocation: ctx.store.location })
          printResult(command, { ok: true, dryRun: true, steps }, ['Would:', ...steps.map((s, i) => `  ${i + 1}. ${s}`)].join('\n'))
          return
        }
        const m = await createBackup({ ...ctx.createOptions, signer: await ctx.signingKey() })
        printResult(
          command,
          { ok: true, backup: m },
          `Backup ${m.id}: ${formatBytes(m.sizes.encrypted)} in ${ctx.store.location}, ${Object.values(m.rowCounts).reduce((a, b) => a + b, 0)} rows, fingerprint ${m.fingerprint.slice(0, 16)}…`,
        )
      } finally {
        stop()
        await ctx.store.close()
      }
    })
}

function registerList(backup: Command): void {
  backup
    .command('list')
    .description('List the complete backups in the store, newest first, with their last verification.')
    .addHelpText('after', '\nExamples:\n  svcops backup list --env prod\n  svcops backup list --env prod --json')
    .action(async (_options: object, command: Command) => {
      const { listBackups, openStore, readSigners } = await import('../backup/index.ts')
      const { readHeldBackups } = await import('../backup/held-by-runs.ts')
      const { recordingDescription } = await import('../recording/recording-description.ts')
      const { requireSection } = await import('../config/load.ts')
      const env = await environmentOf(command)
      const config = requireSection(env, 'backup')
      const signers = await readSigners(config)
      const store = await openStore(config)
      try {
        const entries = await listBackups(store, { signers })
        // As retention sees them: unknown (a store unread, a record refused) holds nothing for sure, and is said.
        const { held, unknown } = await readHeldBackups(env, recordingDescription)
        const rows = entries.map((e) => ({
          id: e.id,
          heldBy: held.get(e.id) ?? null,
          environment: e.manifest.environment,
          completedAt: e.manifest.completedAt,
          size: e.manifest.sizes.encrypted,
          rows: Object.values(e.manifest.rowCounts).reduce((a, b) => a + b, 0),
          fingerprint: e.manifest.fingerprint,
          signature: e.signature,
          verified: e.verified
            ? {
                at: e.verified.verifiedAt,
                ok: e.verified.ok,
                restoreTest: e.verified.restoreTest,
                ...(e.verified.failedCheck ? { failedCheck: e.verified.failedCheck } : {}),
              }
            : null,
        }))
        const heldUnknown = unknown !== undefined ? { heldUnknown: unknown } : {}
        printResult(command, { ok: true, store: store.location, backups: rows, ...heldUnknown }, () =>
          rows.length === 0
            ? `No backups in ${store.location}.`
            : rows
                .map(
                  (r) =>
                    `${r.id}${r.environment === env.name ? '' : ` (environment ${r.environment}: restored here only with --from-env)`}  ${r.completedAt}  ${formatBytes(r.size).padStart(10)}  ${String(r.rows).padStart(9)} rows  ${r.signature === 'trusted' ? 'signed' : r.signature.toUpperCase()}  ${r.verified ? (r.verified.ok ? `verified${r.verified.restoreTest ? ' (restore test)' : ''} ${r.verified.at}` : `FAILED ${r.verified.failedCheck ?? ''}`) : 'not verified'}${r.heldBy ? `  held by run ${r.heldBy}` : ''}`,
                )
                .join('\n'),
        )
      } finally {
        await store.close()
      }
    })
}

function registerVerify(backup: Command): void {
  backup
    .command('verify <id>')
    .description(
      'Check manifest and SHA-256, then decrypt; with --restore-test also restore into a scratch database and compare row counts and schema fingerprint.',
    )
    .option('--restore-test', "restore into a scratch database on the service's server (its user needs CREATEDB); dropped afterwards")
    .option('--allow-unsigned', 'accept a backup without a signature (made before svcops signed backups); never one with a bad signature')
    .option(
      '--from-env <name>',
      "accept a backup of that other environment (its signed manifest must name it); otherwise only this environment's",
    )
    .addHelpText(
      'after',
      '\nExits 1 naming the first failed check: signature, manifest, environment, file, size, checksum, key, decrypt, restore, row counts, fingerprint.\n\nExamples:\n  svcops backup verify prod-20260101T020000Z-1a2b --env prod\n  svcops backup verify prod-20260101T020000Z-1a2b --env prod --restore-test --json\n  svcops backup verify prod-20260101T020000Z-1a2b --env staging --from-env prod',
    )
    .action(async (id: string, options: { restoreTest?: boolean; allowUnsigned?: boolean; fromEnv?: string }, command: Command) => {
      const { openBackupContext, readIdentity, verifyBackup } = await import('../backup/index.ts')
      const ctx = await openBackupContext(await environmentOf(command))
      const stop = showProgress(command)
      try {
        const identity = await readIdentity(ctx.backup)
        const report = await verifyBackup(ctx.store, id, {
          signers: ctx.signers,
          allowUnsigned: options.allowUnsigned ?? false,
          environment: ctx.environment,
          ...(options.fromEnv !== undefined ? { fromEnvironment: options.fromEnv } : {}),
          identity,
          ...(options.restoreTest ? { restoreTest: { server: ctx.database } } : {}),
        })
        const { manifest: _manifest, ...shown } = report
        printResult(command, shown, () =>
          [
            ...report.checks.map((c) => `${c.ok ? 'ok  ' : 'FAIL'} ${c.check}: ${c.detail}`),
            report.ok ? `Backup ${id} verified.` : `Backup ${id} failed the check '${report.failedCheck ?? ''}'.`,
          ].join('\n'),
        )
        if (!report.ok) exitAfterOutput(ExitCode.failed)
      } finally {
        stop()
        await ctx.store.close()
      }
    })
}

function registerPrune(backup: Command): void {
  backup
    .command('prune')
    .description(
      "Remove this environment's old backups: keep the newest N and those younger than D days — never the newest verified backup nor one a run can still roll back to (backup list: 'held by run'); other environments' backups in the store are not touched.",
    )
    .option('--keep-last <n>', 'keep the newest N backups')
    .option('--keep-days <d>', 'keep backups younger than D days')
    .option('--dry-run', 'show what would be removed')
    .addHelpText(
      'after',
      '\nExamples:\n  svcops backup prune --env prod --keep-last 7 --keep-days 30 --dry-run\n  svcops backup prune --env prod --keep-last 3 --json',
    )
    .action(async (options: { keepLast?: string; keepDays?: string; dryRun?: boolean }, command: Command) => {
      const play = await import('../../playbooks/backup-changes.ts')
      const keepLast = options.keepLast === undefined ? undefined : parseCount(options.keepLast, '--keep-last')
      const keepDays = options.keepDays === undefined ? undefined : parseCount(options.keepDays, '--keep-days')
      const env = await environmentOf(command)
      const asked = { ...(keepLast !== undefined ? { keepLast } : {}), ...(keepDays !== undefined ? { keepDays } : {}) }
      const stop = showProgress(command)
      try {
        let plan: { keep: { id: string; reasons: string[] }[]; remove: { id: string }[]; heldUnknown?: string }
        let runId: string | undefined
        if (options.dryRun) plan = await play.planBackupPrune(env, asked)
        else {
          // A run under the environment's lock: never beside a run that is running, paused or interrupted.
          await (await import('./run-systems.ts')).useRunSystems()
          const outcome = await play.pruneBackupRun(env, asked)
          plan = outcome.done as typeof plan
          runId = outcome.runId
        }
        const dryRun = options.dryRun ?? false
        printResult(command, { ok: true, ...(runId ? { runId } : {}), dryRun, ...plan }, () =>
          [
            ...plan.keep.map((k) => `keep    ${k.id}  (${k.reasons.join(', ')})`),
            ...plan.remove.map((r) => `${dryRun ? 'would remove' : 'removed'} ${r.id}`),
            plan.heldUnknown !== undefined
              ? `Nothing removed: the runs that may hold backups could not be read (${plan.heldUnknown.replace(/\.$/, '')}).`
              : plan.remove.length === 0
                ? 'Nothing to remove.'
                : '',
            ...(runId ? [`(run ${runId})`] : []),
          ]
            .filter(Boolean)
            .join('\n'),
        )
      } finally {
        stop()
      }
    })
}

function registerKeygen(backup: Command): void {
  backup
    .command('keygen')
    .description(
      'Create an OpenPGP key pair for backups that GnuPG 2.2 can use too: the public key goes into backup.recipients, the private key into the vault.',
    )
    .requiredOption('--out-dir <dir>', 'directory for <name>.pub.asc (0644) and <name>.key.asc (0600)')
    .option('--name <name>', 'user id of the key', 'svcops backups')
    .option('--email <email>', 'e-mail address of the key')
    .option('--passphrase-env <VAR>', 'protect the private key with the passphrase in this environment variable')
    .option(
      '--signing',
      'a signing key pair: the private key stays on the machine that backs up (backup.signingKey), the public key goes into backup.signers',
    )
    .option('--dry-run', 'show the files that would be written')
    .addHelpText(
      'after',
      '\nThe private key is never printed. Keep it (and its passphrase) in the vault; svcops needs it only to verify and restore.\n\nExamples:\n  svcops backup keygen --out-dir /etc/svcops/keys --name "svcops backups prod"\n  SVCOPS_BACKUP_PASSPHRASE=... svcops backup keygen --out-dir ./keys --passphrase-env SVCOPS_BACKUP_PASSPHRASE --json',
    )
    .action(
      async (
        options: { outDir: string; name: string; email?: string; passphraseEnv?: string; signing?: boolean; dryRun?: boolean },
        command: Command,
      ) => {
        const { writeKeyPairFiles, keyPairPaths } = await import('../backup/keyfiles.ts')
        const paths = keyPairPaths(options.outDir, options.name)
        if (options.dryRun) {
          printResult(
            command,
            { ok: true, dryRun: true, ...paths },
            `Would write ${paths.publicKeyFile} (0644) and ${paths.privateKeyFile} (0600).`,
          )
          return
        }
        const { readSecret } = await import('../config/secrets.ts')
        const passphrase = options.passphraseEnv ? readSecret({ env: options.passphraseEnv }, '--passphrase-env') : undefined
        const written = await writeKeyPairFiles(paths, {
          name: options.name,
          ...(options.email ? { email: options.email } : {}),
          ...(passphrase ? { passphrase } : {}),
        })
        printResult(
          command,
          { ok: true, ...written },
          options.signing
            ? `Signing key ${written.fingerprint}\n  public:  ${written.publicKeyFile}  (put it in backup.signers wherever backups are verified or restored)\n  private: ${written.privateKeyFile}  (stays on the machine that backs up; backup.signingKey references it)`
            : `Key ${written.fingerprint}\n  public:  ${written.publicKeyFile}  (put it in backup.recipients)\n  private: ${written.privateKeyFile}  (vault; backup.identity references it)`,
        )
      },
    )
}
