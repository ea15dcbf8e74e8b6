/**
 * Restore anywhere (src/backup/restore-elsewhere.ts, `backup restore ID --to-database X`) on a real
 * PostgreSQL: the environment's database server is lost (its stack points at a port nobody listens
 * on), and its signed backup is restored into a new database — named by a URL whose password comes
 * from the libpq password file, or by another stack — with the same checks, then verified there.
 */
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { stringify } from 'yaml'
import { main } from '../../src/commands/program.ts'
import { startBackupBed, SERVICE_PASSWORD, type BackupBed } from './fixture.ts'

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

describe('backup restore --to-database: the disaster case', () => {
  let bed: BackupBed
  let prodFile: string
  let lostFile: string
  let backupId: string
  const outputs: string[] = []
  const run = async (file: string, ...args: string[]) => {
    const result = await svcops('--stack-file', file, ...args)
    outputs.push(result.stdout, result.stderr)
    return result
  }
  const url = (name: string, password = '') =>
    `postgres://${bed.database.user}${password ? `:${password}` : ''}@${bed.database.host}:${bed.database.port}/${name}`
  const count = async (database: string) => Number((await bed.sql('SELECT count(*) AS n FROM recordings', database))[0]?.n)

  beforeAll(async () => {
    bed = await startBackupBed(250)
    process.env.SVCOPS_RUNS_DIR = join(bed.dir, 'runs')
    process.env.SVCOPS_TEST_DB_PASSWORD = SERVICE_PASSWORD
    const stack = (database: Record<string, unknown>) =>
      stringify({
        config: {
          'svcops:environment': 'prod',
          'svcops:recording': {
            version: '1.6.0',
            hosts: [{ name: 'rec1', url: 'http://127.0.0.1:9', transport: 'local' }],
            database: { user: bed.database.user, password: { env: 'SVCOPS_TEST_DB_PASSWORD' }, ...database },
          },
          'svcops:backup': {
            store: { path: join(bed.dir, 'store') },
            recipients: [bed.publicKeyFile],
            identity: { file: bed.privateKeyFile },
            signingKey: { file: bed.signerPrivateKeyFile },
            signers: [bed.signerPublicKeyFile],
          },
        },
      })
    prodFile = join(bed.dir, 'Pulumi.prod.yaml')
    writeFileSync(prodFile, stack({ host: bed.database.host, port: bed.database.port, name: bed.database.name }))
    const created = await run(prodFile, '--json', 'backup', 'create')
    expect(created.code).toBe(0)
    backupId = (created.json().backup as { id: string }).id
    // The same environment after its server was lost: its stack still names it, nobody answers there.
    lostFile = join(bed.dir, 'lost', 'Pulumi.prod.yaml')
    mkdirSync(join(bed.dir, 'lost'))
    writeFileSync(lostFile, stack({ host: '127.0.0.1', port: 9, name: bed.database.name }))
    // The new databases, empty, owned by the service's role.
    for (const name of ['recordings_dr', 'recordings_dr2']) await bed.sql(`CREATE DATABASE ${name} OWNER ${bed.database.user}`, 'postgres')
    // The dr stack beside the lost one names the second.
    writeFileSync(
      join(bed.dir, 'lost', 'Pulumi.dr.yaml'),
      stringify({
        config: {
          'svcops:recording': {
            version: '1.6.0',
            hosts: [{ name: 'rec1', url: 'http://127.0.0.1:9', transport: 'local' }],
            database: {
              host: bed.database.host,
              port: bed.database.port,
              name: 'recordings_dr2',
              user: bed.database.user,
              password: { env: 'SVCOPS_TEST_DB_PASSWORD' },
            },
          },
        },
      }),
    )
    const passfile = join(bed.dir, 'pgpass')
    writeFileSync(
      passfile,
      `# the new server\n${bed.database.host}:${bed.database.port}:recordings_dr:${bed.database.user}:${SERVICE_PASSWORD}\n`,
    )
    chmodSync(passfile, 0o600)
    process.env.PGPASSFILE = passfile
  }, 300_000)

  afterAll(async () => {
    delete process.env.SVCOPS_RUNS_DIR
    delete process.env.SVCOPS_TEST_DB_PASSWORD
    delete process.env.PGPASSFILE
    await bed?.stop()
  })

  it('the dry run names the new database, the checks and the verify afterwards, and changes nothing', async () => {
    const plan = await run(lostFile, '--json', 'backup', 'restore', backupId, '--to-database', url('recordings_dr'), '--dry-run')
    expect(plan.code).toBe(0)
    const steps = plan.json().steps as string[]
    expect(steps[0]).toBe(
      `restore into ${bed.database.user}@${bed.database.host}:${bed.database.port}/recordings_dr (${url('recordings_dr')}), not the database of 'prod'`,
    )
    expect(steps.at(-1)).toBe(
      "verify afterwards on a new session: schema fingerprint and row counts of recordings_dr equal to the manifest's",
    )
    expect(await bed.sql("SELECT count(*) AS n FROM pg_tables WHERE schemaname = 'public'", 'recordings_dr')).toEqual([{ n: '0' }])
  })

  it.each([
    ['a password in the URL', () => url('recordings_dr', 'hunter2-secret'), '--to-database: the URL holds a password'],
    ["the environment's own database", () => url(bed.database.name), "is the database of 'prod' itself"],
    ['a URL without a database name', () => url(''), 'lacks a database name'],
  ])('refuses %s (exit 2), nothing restored', async (_label, target, sentence) => {
    const out = await run(prodFile, 'backup', 'restore', backupId, '--to-database', target(), '--yes')
    expect(out.code).toBe(2)
    expect(out.stderr).toContain(sentence)
    expect(out.stderr).not.toContain('hunter2-secret')
    expect(await bed.sql("SELECT count(*) AS n FROM pg_tables WHERE schemaname = 'public'", 'recordings_dr')).toEqual([{ n: '0' }])
  })

  it('refuses a backup of another environment unless --from-env names it (the signed manifest binds it)', async () => {
    const staging = join(bed.dir, 'lost', 'Pulumi.staging.yaml')
    writeFileSync(staging, readFileSync(lostFile, 'utf8').replace('svcops:environment: prod', 'svcops:environment: staging'))
    const out = await run(staging, 'backup', 'restore', backupId, '--to-database', url('recordings_dr'), '--yes')
    expect(out.code).not.toBe(0)
    expect(out.stderr).toContain('--from-env prod')
  })

  it('restores into the new server by URL (password from PGPASSFILE), verified there, with the old server gone', async () => {
    const out = await run(lostFile, '--json', 'backup', 'restore', backupId, '--to-database', url('recordings_dr'), '--yes')
    expect(out.code).toBe(0)
    expect(out.json()).toMatchObject({ ok: true, id: backupId, verified: { rows: 253 } })
    expect(await count('recordings_dr')).toBe(250)
    expect(await count(bed.database.name)).toBe(250)
    for (const text of outputs) expect(text).not.toContain(SERVICE_PASSWORD)
  })

  it('restores into the database another stack names (--to-database dr)', async () => {
    const out = await run(lostFile, 'backup', 'restore', backupId, '--to-database', 'dr', '--yes')
    expect(out.code).toBe(0)
    expect(out.stdout).toContain(
      `Restored backup ${backupId} into recordings_dr2 on ${bed.database.host}:${bed.database.port}, verified there: 253 rows`,
    )
    expect(await count('recordings_dr2')).toBe(250)
  })
})
