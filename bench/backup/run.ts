/**
 * Backup throughput and memory, side by side in one run on the same generated database:
 *   pg_dump -Fc > /dev/null                  (the floor: pg_dump alone at its default compression)
 *   pg_dump -Fc | gpg --encrypt -r KEY       (the usual pipeline)
 *   svcops backup create                     (as users run it: bin/svcops)
 *   svcops backup verify --restore-test      (checksum, decrypt, full restore into a scratch database)
 * Each row runs under /usr/bin/time (wall time, peak RSS of the largest process). MB/s is the
 * database's size (pg_database_size) over the wall time. Prints a Markdown table.
 *
 * With `--vs DIR` it then runs `backup create` and `backup verify --restore-test` of another
 * checkout (DIR/bin/svcops, e.g. the build before a change) and of this one in alternation, A B A B,
 * `--rounds` times each on the same database and store, and prints the medians and their ratio: the
 * cost of a change measured side by side, so that load on the machine falls on both alike.
 *
 *   node bench/backup/generate.ts --gb 1 --out /tmp/svcops-bench-1g.json   # once, ~1 min
 *   node bench/backup/run.ts --info /tmp/svcops-bench-1g.json [--vs /tmp/svcops-before --rounds 3]
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { stringify } from 'yaml'
import { generateBackupKey } from '../../src/backup/keys.ts'
import { local, runCommand } from '../../src/core/runner.ts'
import { requireTools, TOOLS } from '../require-tools.ts'

requireTools('bench/backup/run.ts', TOOLS.postgresClient, TOOLS.gpg, TOOLS.time)

const { values } = parseArgs({
  options: {
    info: { type: 'string', default: '/tmp/svcops-bench-1g.json' },
    keep: { type: 'boolean', default: false },
    vs: { type: 'string' },
    rounds: { type: 'string', default: '3' },
  },
})
const info = JSON.parse(readFileSync(values.info, 'utf8')) as {
  host: string
  port: number
  user: string
  password: string
  database: string
}
const root = resolve(new URL('../..', import.meta.url).pathname)
const work = mkdtempSync(join(tmpdir(), 'svcops-bench-backup-'))
const gnupgHome = join(work, 'gnupg')

const client = new pg.Client({ host: info.host, port: info.port, user: info.user, password: info.password, database: info.database })
await client.connect()
const dbBytes = Number((await client.query<{ s: string }>('SELECT pg_database_size(current_database())::text AS s')).rows[0]?.s)
await client.end()

const libpq = { PGHOST: info.host, PGPORT: String(info.port), PGUSER: info.user, PGPASSWORD: info.password, PGDATABASE: info.database }
const key = await generateBackupKey({ name: 'svcops bench' })
writeFileSync(join(work, 'bench.pub.asc'), key.publicKey)
writeFileSync(join(work, 'bench.key.asc'), key.privateKey, { mode: 0o600 })
writeFileSync(join(work, 'db.pw'), info.password, { mode: 0o600 })
await runCommand(local, ['mkdir', '-m', '0700', gnupgHome])
await runCommand(local, ['gpg', '--batch', '--import', join(work, 'bench.pub.asc')], { env: { GNUPGHOME: gnupgHome } })
const envFile = join(work, 'Pulumi.bench.yaml')
writeFileSync(
  envFile,
  stringify({
    config: {
      'svcops:recording': {
        version: '1.6.0',
        hosts: [{ name: 'rec1', url: 'http://127.0.0.1:9' }],
        database: { host: info.host, port: info.port, name: info.database, user: info.user, password: { file: join(work, 'db.pw') } },
      },
      'svcops:backup': {
        store: { path: join(work, 'store') },
        recipients: [join(work, 'bench.pub.asc')],
        identity: { file: join(work, 'bench.key.asc') },
      },
    },
  }),
)

interface Row {
  name: string
  wallS: number
  /** CPU seconds of the client processes (user + system; the database server's own work is not included). */
  cpuS: number
  rssMb: number
  outBytes?: number
  stdout: string
}

/** Runs a shell command line under /usr/bin/time; secrets only in the environment. */
async function measure(name: string, script: string, env: Record<string, string> = {}, outFile?: string): Promise<Row> {
  const timeFile = join(work, 'time.txt')
  const result = await runCommand(
    local,
    ['/usr/bin/time', '-f', '%e %M %U %S', '-o', timeFile, 'bash', '-c', `set -o pipefail; ${script}`],
    { env: { ...libpq, GNUPGHOME: gnupgHome, ...env }, cwd: root, timeoutMs: 3_600_000 },
  )
  const [wall, rss, user, sys] = readFileSync(timeFile, 'utf8').trim().split('\n').at(-1)?.split(' ').map(Number) ?? []
  const row: Row = {
    name,
    wallS: wall ?? NaN,
    cpuS: (user ?? NaN) + (sys ?? NaN),
    rssMb: (rss ?? NaN) / 1024,
    stdout: result.stdout,
    ...(outFile ? { outBytes: statSync(outFile).size } : {}),
  }
  process.stderr.write(`${name}: ${row.wallS} s, ${row.rssMb.toFixed(0)} MB RSS\n`)
  return row
}

const rows: Row[] = []
try {
  rows.push(await measure('`pg_dump -Fc > /dev/null`', 'pg_dump -Fc > /dev/null'))
  const gpgOut = join(work, 'usual.pgp')
  rows.push(
    await measure(
      '`pg_dump -Fc \\| gpg --encrypt -r KEY`',
      `pg_dump -Fc | gpg --batch --trust-model always --encrypt -r ${key.fingerprint} > ${gpgOut}`,
      {},
      gpgOut,
    ),
  )
  rmSync(gpgOut)
  const create = await measure('`svcops backup create`', `bin/svcops --stack-file ${envFile} --json backup create`)
  const manifest = (JSON.parse(create.stdout) as { backup: { id: string; file: string; sizes: { encrypted: number } } }).backup
  create.outBytes = manifest.sizes.encrypted
  rows.push(create)
  rows.push(
    await measure(
      '`svcops backup verify --restore-test`',
      `bin/svcops --stack-file ${envFile} --json backup verify ${manifest.id} --restore-test`,
    ),
  )

  const mb = (b: number): string => (b / 1024 ** 2).toFixed(0)
  const usual = rows[1]
  const lines = [
    `Load average at the end: ${(await runCommand(local, ['cat', '/proc/loadavg'])).stdout.split(' ').slice(0, 3).join(' ')}. Database: ${mb(dbBytes)} MB (pg_database_size), PostgreSQL and pg_dump ${(await runCommand(local, ['pg_dump', '--version'])).stdout.trim().split(' ').at(-3) ?? ''}, ${(await runCommand(local, ['nproc'])).stdout.trim()} cores.`,
    '',
    '| row | wall time (s) | MB/s of database | output (MB) | peak RSS (MB) | client CPU (s) |',
    '|---|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${r.wallS.toFixed(1)} | ${(dbBytes / 1024 ** 2 / r.wallS).toFixed(1)} | ${r.outBytes !== undefined ? mb(r.outBytes) : '–'} | ${r.rssMb.toFixed(0)} | ${r.cpuS.toFixed(1)} |`,
    ),
    '',
    usual
      ? `svcops backup create vs the usual pipeline: ${(usual.wallS / create.wallS).toFixed(2)}x the throughput, ${((create.outBytes ?? 0) / (usual.outBytes ?? 1)).toFixed(3)}x the size.`
      : '',
  ]
  process.stdout.write(lines.join('\n') + '\n')
  if (values.vs) process.stdout.write('\n' + (await alternate(resolve(values.vs), Number(values.rounds))) + '\n')
} finally {
  // gpg started an agent for the bench's key ring; it must not outlive the run.
  await runCommand(local, ['gpgconf', '--kill', 'gpg-agent'], { env: { GNUPGHOME: gnupgHome }, check: false })
  if (!values.keep) rmSync(work, { recursive: true, force: true })
}

/** `--vs DIR`: create and verify of DIR's build (A) and this one (B), alternated; medians and B/A. */
async function alternate(other: string, rounds: number): Promise<string> {
  // Builds before 2026-11-24 name the stack file option --env-file (Node 24 now takes that name).
  const help = (await runCommand(local, [join(other, 'bin/svcops'), '--help'], { cwd: other })).stdout
  const otherOption = help.includes('--stack-file') ? '--stack-file' : '--env-file'
  const builds = [
    { label: `A: ${other}`, bin: `${join(other, 'bin/svcops')} ${otherOption} ${envFile}` },
    { label: 'B: this checkout', bin: `${join(root, 'bin/svcops')} --stack-file ${envFile}` },
  ]
  const runs = builds.map(() => ({ create: [] as Row[], verify: [] as Row[] }))
  for (let round = 0; round < rounds; round++) {
    for (const [i, build] of builds.entries()) {
      const made = await measure(`create ${build.label}`, `${build.bin} --json backup create`)
      const id = (JSON.parse(made.stdout) as { backup: { id: string } }).backup.id
      runs[i]?.create.push(made)
      runs[i]?.verify.push(await measure(`verify ${build.label}`, `${build.bin} --json backup verify ${id} --restore-test`))
    }
  }
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN
  const cell = (rows: Row[], pick: (r: Row) => number, digits: number): string =>
    `${median(rows.map(pick)).toFixed(digits)} (${rows.map((r) => pick(r).toFixed(digits)).join(' / ')})`
  const lines = [
    `Alternated A B, ${rounds} rounds; median (every run). Load average at the end: ${(await runCommand(local, ['cat', '/proc/loadavg'])).stdout.split(' ').slice(0, 3).join(' ')}.`,
    '',
    '| command | build | wall (s) | client CPU (s) | peak RSS (MB) |',
    '|---|---|---:|---:|---:|',
  ]
  for (const command of ['create', 'verify'] as const) {
    for (const [i, build] of builds.entries()) {
      const rows = runs[i]?.[command] ?? []
      lines.push(
        `| ${command === 'create' ? '`backup create`' : '`backup verify --restore-test`'} | ${build.label} | ${cell(rows, (r) => r.wallS, 1)} | ${cell(rows, (r) => r.cpuS, 1)} | ${cell(rows, (r) => r.rssMb, 0)} |`,
      )
    }
    const [a, b] = runs.map((r) => median(r[command].map((x) => x.wallS)))
    lines.push(`| | B / A wall | ${((b ?? NaN) / (a ?? NaN)).toFixed(3)} | | |`)
  }
  return lines.join('\n')
}
