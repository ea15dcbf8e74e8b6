import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { stringify } from 'yaml'
import { main } from '../../src/commands/program.ts'
import pg from 'pg'
import { clientConfig } from '../../src/backup/index.ts'
import { acquireEnvironmentLock } from '../../src/runs/lock.ts'
import { startBackupBed, SERVICE_PASSWORD, type BackupBed } from './fixture.ts'

/** Runs `svcops ARGS` in this process and captures what it prints. */
async function svcops(...args: string[]): Promise<{ code: number; stdout: string; stderr: string; json: () => Record<string, unknown> }> {
  let stdout = ''
  let stderr = ''
  const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => ((stdout += String(chunk)), true))
  const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => ((stderr += String(chunk)), true))
  try {
    const code = await main(args)
    return { code, stdout, stderr, json: () => JSON.parse(stdout) as Record<string, unknown> }
  } finally {
    out.mockRestore()
    err.mockRestore()
  }
}

describe('svcops backup (CLI)', () => {
  let bed: BackupBed
  let envFile: string
  const outputs: string[] = []
  const run = async (...args: string[]): Promise<Awaited<ReturnType<typeof svcops>>> => {
    const result = await svcops('--stack-file', envFile, ...args)
    outputs.push(result.stdout, result.stderr)
    return result
  }

  beforeAll(async () => {
    bed = await startBackupBed(300)
    // restore and delete are runs: their folders go to the bed's runs folder.
    process.env.SVCOPS_RUNS_DIR = join(bed.dir, 'command-runs')
    process.env.SVCOPS_TEST_DB_PASSWORD = SERVICE_PASSWORD
    envFile = join(bed.dir, 'Pulumi.clitest.yaml')
    writeFileSync(
      envFile,
      stringify({
        config: {
          'svcops:recording': {
            version: '1.6.0',
            hosts: [{ name: 'rec1', url: 'http://127.0.0.1:9', transport: 'local' }],
            database: {
              host: bed.database.host,
              port: bed.database.port,
              name: bed.database.name,
              user: bed.database.user,
              password: { env: 'SVCOPS_TEST_DB_PASSWORD' },
            },
          },
          'svcops:backup': {
            store: { path: join(bed.dir, 'cli-store') },
            recipients: [bed.publicKeyFile],
            identity: { file: bed.privateKeyFile },
            compression: 6,
          },
        },
      }),
    )
  })
  afterAll(async () => {
    delete process.env.SVCOPS_RUNS_DIR
    delete process.env.SVCOPS_TEST_DB_PASSWORD
    await bed?.stop()
  })

  it('creates, lists, verifies with a restore test, and restores with --yes', async () => {
    const dry = await run('--json', 'backup', 'create', '--dry-run')
    expect(dry.code).toBe(0)
    expect(dry.json().steps).toContain("sign the manifest (it holds the dump's SHA-256) and write the signature, then the manifest last")
    expect(existsSync(join(bed.dir, 'cli-store'))).toBe(false)

    const created = await run('--json', 'backup', 'create')
    expect(created.code).toBe(0)
    const backup = created.json().backup as { id: string; compression: { level: number }; serviceVersions: Record<string, string> }
    expect(backup.compression.level).toBe(6)
    expect(backup.serviceVersions).toEqual({ rec1: '1.6.0' })

    const listed = await run('--json', 'backup', 'list')
    expect((listed.json().backups as { id: string; verified: unknown }[]).map((b) => [b.id, b.verified])).toEqual([[backup.id, null]])

    const verified = await run('--json', 'backup', 'verify', backup.id, '--restore-test')
    expect(verified.code).toBe(0)
    expect(verified.json()).toMatchObject({ ok: true, restoreTest: true })

    const human = await run('backup', 'list')
    expect(human.stdout).toMatch(new RegExp(`^${backup.id} .* 303 rows  signed  verified \\(restore test\\)`))

    const refused = await run('backup', 'restore', backup.id)
    expect(refused.code).toBe(2)
    expect(refused.stderr).toMatch(/--yes: missing; restoring replaces the database/)
    expect((await run('--json', 'backup', 'restore', backup.id)).code).toBe(2)

    const plan = await run('--json', 'backup', 'restore', backup.id, '--dry-run')
    expect((plan.json().steps as string[])[2]).toMatch(
      new RegExp(`^in one transaction: drop the objects in ${bed.database.name} and load backup`),
    )

    await bed.sql('DELETE FROM recordings WHERE id > 100')
    const restored = await run('--json', 'backup', 'restore', backup.id, '--yes')
    expect(restored.code).toBe(0)
    expect(restored.json().rowCounts).toEqual({ 'public.recordings': 300, 'public.schema_migrations': 3 })
  })

  it('fails verify with exit 1 naming the check, and prune keeps the newest verified backup', async () => {
    const second = (await run('--json', 'backup', 'create')).json().backup as { id: string; file: string }
    writeFileSync(join(bed.dir, 'cli-store', second.file), 'not a backup')
    const failed = await run('backup', 'verify', second.id)
    expect(failed.stdout).toMatch(/FAIL size: The file .* has 12 bytes/)
    expect(failed.stdout).toMatch(new RegExp(`Backup ${second.id} failed the check 'size'`))

    const dry = await run('--json', 'backup', 'prune', '--keep-last', '0', '--dry-run')
    const plan = dry.json() as { keep: { id: string; reasons: string[] }[]; remove: { id: string }[] }
    expect(plan.keep.map((k) => k.reasons)).toEqual([['the newest verified backup']])
    expect(plan.remove.map((r) => r.id)).toEqual([second.id])
    const pruned = await run('backup', 'prune', '--keep-last', '0')
    expect(pruned.stdout).toMatch(new RegExp(`removed ${second.id}`))
    expect(((await run('--json', 'backup', 'list')).json().backups as unknown[]).length).toBe(1)

    const bad = await run('backup', 'prune', '--keep-last', 'many')
    expect(bad.code).toBe(2)
    expect(bad.stderr).toMatch(/--keep-last: 'many' is not valid/)
  })

  it('prunes nothing when the runs kept with the environment cannot be read: the dry run says why, the prune is refused (no lock)', async () => {
    const made = (await run('--json', 'backup', 'create')).json().backup as { id: string }
    // The environment's database refuses svcops' login: which backups runs still need is unknown.
    process.env.SVCOPS_TEST_DB_PASSWORD = 'not-the-password'
    try {
      const planned = await run('--json', 'backup', 'prune', '--keep-last', '0', '--dry-run')
      expect(planned.code, planned.stderr).toBe(0)
      const plan = planned.json() as { keep: { id: string; reasons: string[] }[]; remove: { id: string }[]; heldUnknown?: string }
      expect(plan.remove).toEqual([])
      expect(plan.keep.find((k) => k.id === made.id)?.reasons).toEqual(['the runs that may hold it could not be read'])
      expect(plan.heldUnknown).toMatch(/^The runs kept in the svcops schema of \S+ at \S+ could not be read: /)
      const text = await run('backup', 'prune', '--keep-last', '0', '--dry-run')
      expect(text.code, text.stderr).toBe(0)
      expect(text.stdout).toMatch(
        /^Nothing removed: the runs that may hold backups could not be read \(The runs kept in the svcops schema /m,
      )
      // The prune itself is a run under the environment's lock, which lives in that database: refused in one sentence.
      const pruned = await run('backup', 'prune', '--keep-last', '0')
      expect(pruned.code).toBe(1)
      expect(pruned.stderr).toMatch(/^svcops: The database server refused the login .*: password authentication failed/m)
      expect(pruned.stdout).not.toContain('removed lab')
    } finally {
      process.env.SVCOPS_TEST_DB_PASSWORD = SERVICE_PASSWORD
    }
    expect(((await run('--json', 'backup', 'list')).json().backups as { id: string }[]).map((b) => b.id)).toContain(made.id)
  })

  it('backup run: the nightly playbook creates, verifies with a test restore and prunes, journaled as a run, and writes --metrics-file; its dry run changes nothing', async () => {
    const runsDir = join(bed.dir, 'runs')
    const commandRuns = process.env.SVCOPS_RUNS_DIR
    process.env.SVCOPS_RUNS_DIR = runsDir
    try {
      const dry = await run('--json', 'backup', 'run', '--keep-last', '1', '--dry-run')
      expect(dry.code, dry.stderr).toBe(0)
      expect((dry.json().steps as { step: string }[]).map((s) => s.step)).toEqual(['create', 'verify', 'prune'])
      expect(existsSync(runsDir)).toBe(false)
      const before = ((await run('--json', 'backup', 'list')).json().backups as unknown[]).length
      const metricsFile = join(bed.dir, 'textfile', 'svcops.prom')
      mkdirSync(dirname(metricsFile), { recursive: true })
      const done = await run('--json', 'backup', 'run', '--keep-last', '1', '--metrics-file', metricsFile)
      expect(done.code, done.stderr).toBe(0)
      // What a stale-backup alert reads: the last verified backup and test restore, from this run.
      const metrics = readFileSync(metricsFile, 'utf8')
      expect(metrics).toMatch(/^svcops_backup_last_success_timestamp_seconds\{environment="clitest"\} \d+/m)
      expect(metrics).toMatch(/^svcops_restore_test_last_success_timestamp_seconds\{environment="clitest"\} \d+/m)
      const answer = done.json() as {
        runId: string
        phase: string
        report: { run: { params: { backupId: string }; kind: string }; timeline: { step: string; status: string }[] }
      }
      expect(answer.phase).toBe('succeeded')
      expect(answer.report.run.kind).toBe('backup')
      expect(answer.report.timeline.filter((e) => e.status === 'ok').map((e) => e.step)).toEqual(['create', 'verify', 'prune'])
      const listed = (await run('--json', 'backup', 'list')).json().backups as {
        id: string
        verified: { ok: boolean; restoreTest: boolean } | null
      }[]
      // --keep-last 1 removed every older backup; the new one is kept, verified by a restore test.
      expect(listed.map((b) => b.id)).toEqual([answer.report.run.params.backupId])
      expect(listed[0]?.verified).toMatchObject({ ok: true, restoreTest: true })
      expect(before).toBeGreaterThanOrEqual(1)
      expect(existsSync(join(runsDir, answer.runId, 'report.md'))).toBe(true)
    } finally {
      process.env.SVCOPS_RUNS_DIR = commandRuns
    }
  })

  it('backup delete and restore take the environment lock: refused beside another command holding it, and beside an interrupted run, naming it', async () => {
    const made = (await run('--json', 'backup', 'create')).json().backup as { id: string }
    const db = {
      host: bed.database.host,
      port: bed.database.port,
      name: bed.database.name,
      user: bed.database.user,
      password: { env: 'SVCOPS_TEST_DB_PASSWORD' },
    }
    const since = new Date().toISOString()
    const other = await acquireEnvironmentLock(db, {
      environment: 'clitest',
      holder: { runId: 'backup-restore-x', holder: 'ops@elsewhere', pid: 4242, since },
    })
    try {
      const refused = await run('backup', 'delete', made.id)
      expect(refused.code).toBe(3)
      expect(refused.stderr).toContain(
        `backup delete: another command (backup-restore-x, ops@elsewhere, pid 4242, since ${since}) holds the lock of environment 'clitest'; nothing was deleted.`,
      )
    } finally {
      await other.release()
    }
    // A run that died holding the lock, unfinished (its row left, its session gone).
    const runId = '20261202T010203Z-0a1b2c'
    const interrupted = await acquireEnvironmentLock(db, {
      environment: 'clitest',
      holder: { runId, holder: 'ops@elsewhere', pid: 4343, since },
    })
    await interrupted.leave()
    try {
      const restore = await run('backup', 'restore', made.id, '--yes')
      expect(restore.code).toBe(3)
      expect(restore.stderr).toContain(
        `backup restore: run ${runId} (ops@elsewhere, pid 4343, since ${since}) was interrupted without finishing and holds the lock of environment 'clitest'; nothing was restored.`,
      )
      const remove = await run('backup', 'delete', made.id)
      expect(remove.code).toBe(3)
      expect(remove.stderr).toContain(`backup delete: run ${runId} (`)
    } finally {
      const c = new pg.Client(clientConfig(bed.database))
      await c.connect()
      await c.query('DELETE FROM svcops.run_lock WHERE environment = $1', ['clitest'])
      await c.end()
    }
    expect(((await run('--json', 'backup', 'list')).json().backups as { id: string }[]).map((b) => b.id)).toContain(made.id)
  })

  it('backup restore is a locked run: refused beside a running upgrade naming it, nothing restored; done, it is in runs list with who, what and from which backup', async () => {
    const made = (await run('--json', 'backup', 'create')).json().backup as { id: string }
    const db = {
      host: bed.database.host,
      port: bed.database.port,
      name: bed.database.name,
      user: bed.database.user,
      password: { env: 'SVCOPS_TEST_DB_PASSWORD' },
    }
    await bed.sql('DELETE FROM recordings WHERE id > 200')
    const count = async () => (await bed.sql('SELECT count(*)::int AS n FROM recordings'))[0]?.n
    const since = new Date().toISOString()
    const upgrade = '20261202T140000Z-9f8e7d'
    const holding = await acquireEnvironmentLock(db, {
      environment: 'clitest',
      holder: { runId: upgrade, holder: 'ops@elsewhere', pid: 4545, since },
    })
    const runsBefore = ((await run('--json', 'runs', 'list')).json().runs as unknown[]).length
    try {
      const refused = await run('backup', 'restore', made.id, '--yes')
      expect(refused.code).toBe(3)
      expect(refused.stderr).toContain(
        `backup restore: run ${upgrade} (ops@elsewhere, pid 4545, since ${since}) is running or paused and holds the lock of environment 'clitest'; nothing was restored.`,
      )
    } finally {
      await holding.release()
    }
    expect(await count()).toBe(200)
    // A refusal is not a run: nothing was journaled.
    expect(((await run('--json', 'runs', 'list')).json().runs as unknown[]).length).toBe(runsBefore)

    const restored = await run('--json', 'backup', 'restore', made.id, '--yes')
    expect(restored.code, restored.stderr).toBe(0)
    const runId = restored.json().runId as string
    expect(await count()).toBe(300)
    const listed = (await run('--json', 'runs', 'list', '--kind', 'restore')).json().runs as {
      id: string
      kind: string
      phase: string
      holder: string
      startedAt: string
      params: { backupId?: string }
    }[]
    expect(listed.find((r) => r.id === runId)).toMatchObject({ kind: 'restore', phase: 'succeeded', params: { backupId: made.id } })
    expect(listed.find((r) => r.id === runId)?.holder).toMatch(/@/)
    const shown = await run('runs', 'show', runId, '--markdown')
    expect(shown.stdout).toContain(`restored backup ${made.id} into ${bed.database.name}`)
  })

  it('writes a key pair GnuPG can read, 0600 private, and never overwrites it', async () => {
    const dir = join(bed.dir, 'keys')
    const made = await svcops('--json', 'backup', 'keygen', '--out-dir', dir, '--name', 'svcops backups test')
    expect(made.code).toBe(0)
    const { privateKeyFile, publicKeyFile } = made.json() as { privateKeyFile: string; publicKeyFile: string }
    expect(statSync(privateKeyFile).mode & 0o777).toBe(0o600)
    expect(made.stdout).not.toMatch(/PRIVATE KEY/)
    const again = await svcops('backup', 'keygen', '--out-dir', dir, '--name', 'svcops backups test')
    expect(again.code).toBe(2)
    expect(again.stderr).toMatch(/already exists; expected a new file/)
    expect(existsSync(publicKeyFile)).toBe(true)
  })

  it('refuses an unsigned backup with exit 1 naming the check, and restores it only with --allow-unsigned', async () => {
    const made = (await run('--json', 'backup', 'create')).json().backup as { id: string }
    rmSync(join(bed.dir, 'cli-store', `${made.id}.manifest.json.sig`))
    expect((await run('backup', 'list')).stdout).toMatch(new RegExp(`^${made.id} .* rows  UNSIGNED  not verified`, 'm'))
    const refused = await run('backup', 'verify', made.id)
    expect(refused.code).toBe(1)
    expect(refused.stdout).toContain(`FAIL signature: Backup ${made.id} is not signed`)
    const restore = await run('backup', 'restore', made.id, '--yes')
    expect(restore.code).toBe(1)
    expect(restore.stderr).toContain(`Backup ${made.id} is not signed`)
    const allowed = await run('--json', 'backup', 'restore', made.id, '--yes', '--allow-unsigned')
    expect(allowed.code).toBe(0)
  })

  it("refuses another environment's backup, signed by the same key, in verify and restore unless --from-env names it; prune and the playbook leave it alone", async () => {
    // Staging shares the store and the keys with this environment (signers are the recipients by default).
    const otherFile = join(bed.dir, 'Pulumi.clistaging.yaml')
    writeFileSync(otherFile, readFileSync(envFile, 'utf8'))
    const other = await svcops('--json', '--stack-file', otherFile, 'backup', 'create')
    expect(other.code, other.stderr).toBe(0)
    const theirs = (other.json().backup as { id: string }).id
    const rows = async () => Number((await bed.sql('SELECT count(*)::int AS n FROM recordings'))[0]?.n)
    const before = await rows()

    const verify = await run('--json', 'backup', 'verify', theirs)
    expect(verify.code).toBe(1)
    expect(verify.json()).toMatchObject({ ok: false, failedCheck: 'environment' })
    const sentence = `Backup ${theirs} belongs to environment 'clistaging', not to 'clitest' where it was asked for; it was refused.`
    expect((verify.json().checks as { detail: string }[]).at(-1)?.detail).toBe(sentence)
    const restore = await run('backup', 'restore', theirs, '--yes')
    expect(restore.code).toBe(1)
    expect(restore.stderr).toContain(`svcops: ${sentence}`)
    expect(restore.stderr).toContain(`--from-env clistaging`)
    expect(await rows()).toBe(before)

    const wrong = await run('backup', 'verify', theirs, '--from-env', 'prod')
    expect(wrong.code).toBe(1)
    expect(wrong.stdout).toContain(
      `FAIL environment: --from-env: 'prod' is not the environment of backup ${theirs}; its signed manifest names 'clistaging'.`,
    )
    const named = await run('--json', 'backup', 'verify', theirs, '--from-env', 'clistaging')
    expect(named.code, named.stdout).toBe(0)

    // Retention of this environment never removes another environment's backups.
    const pruned = await run('--json', 'backup', 'prune', '--keep-last', '0')
    expect(pruned.code).toBe(0)
    expect((pruned.json().remove as { id: string }[]).map((r) => r.id)).not.toContain(theirs)
    expect((pruned.json().keep as { id: string }[]).map((r) => r.id)).not.toContain(theirs)
    process.env.SVCOPS_RUNS_DIR = join(bed.dir, 'runs-env')
    try {
      const nightly = await run('--json', 'backup', 'run', '--keep-last', '1')
      expect(nightly.code, nightly.stderr).toBe(0)
    } finally {
      delete process.env.SVCOPS_RUNS_DIR
    }
    const listed = (await run('--json', 'backup', 'list')).json().backups as { id: string }[]
    expect(listed.map((b) => b.id)).toContain(theirs)
  })

  it('never prints the database password or any private key (the identity signs here)', () => {
    const all = outputs.join('\n')
    expect(all).not.toContain(SERVICE_PASSWORD)
    for (const file of [bed.privateKeyFile, bed.signerPrivateKeyFile]) {
      const body = readFileSync(file, 'utf8')
        .split('\n')
        .filter((line) => /^[A-Za-z0-9+/=]{40,}$/.test(line))
      expect(body.length).toBeGreaterThan(0)
      for (const line of body) expect(all).not.toContain(line)
    }
  })
})

describe('lab backup section', () => {
  it('creates the lab key pair once and returns a backup section that references it', async () => {
    const { mkdtempSync, readFileSync, rmSync } = await import('node:fs')
    const { tmpdir } = await import('node:os')
    const { prepareLabBackup } = await import('../../src/lab/lab-backup.ts')
    const { backupSchema } = await import('../../src/config/schema.ts')
    const dir = mkdtempSync(join(tmpdir(), 'svcops-lab-backup-'))
    try {
      const section = await prepareLabBackup(dir)
      expect(backupSchema.parse(section)).toEqual(section)
      const publicKey = readFileSync(section.recipients[0] ?? '', 'utf8')
      expect(await prepareLabBackup(dir)).toEqual(section)
      expect(readFileSync(section.recipients[0] ?? '', 'utf8')).toBe(publicKey)
      expect(section.identity && 'file' in section.identity && statSync(section.identity.file).mode & 0o777).toBe(0o600)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
