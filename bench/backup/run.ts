/**
 * Backup throughput and memory, side by side in one run on the same generated database(s):
 *   pg_dump -Fc -Z0 > /dev/null              (the floor: pg_dump reading everything, compressing nothing)
 *   pg_dump -Fc | gpg --encrypt -r KEY       (the usual pipeline)
 *   svcops backup create                     (as users run it: bin/svcops; signed, encrypted)
 *   svcops backup verify --restore-test      (signature, checksums, decrypt, full restore into a scratch database)
 * Each row is measured as a whole process tree (bench/measure.ts): wall time, client CPU (user +
 * system of the client processes; the database server's own work is not included) and peak RSS
 * of the largest process. MB/s is the database's size (pg_database_size) over the wall time.
 * Prints a Markdown table per database, the load average before and after it, and the targets.
 *
 * With `--vs DIR` it then runs `backup create` and `backup verify --restore-test` of another
 * checkout (DIR/bin/svcops, e.g. the build before a change) and of this one in alternation, A B A B,
 * `--rounds` times each on the (first) database and store, and prints the medians and their ratio:
 * the cost of a change measured side by side, so that load on the machine falls on both alike.
 *
 *   node bench/backup/generate.ts --gb 1 --out /tmp/svcops-bench-1g.json   # once, ~1 min (4 GB: ~5 min)
 * With `--runs N` the four rows are measured N times in turn on each database and each cell is the
 * median (the peak RSS the largest): one run of a 10-second command moves by a second with the machine.
 *
 *   node bench/backup/run.ts --info /tmp/svcops-bench-1g.json[,/tmp/svcops-bench-4g.json] [--runs 3] [--vs /tmp/svcops-before --rounds 3]
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { stringify } from 'yaml'
import { generateBackupKey } from '../../src/backup/keys.ts'
import { local, runCommand } from '../../src/core/runner.ts'
import { loadAverage, measureCommand, median, type Measured } from '../measure.ts'
import { requireTools, TOOLS } from '../require-tools.ts'

requireTools('bench/backup/run.ts', TOOLS.postgresClient, TOOLS.gpg, TOOLS.time)

const { values } = parseArgs({
  options: {
    info: { type: 'string', default: '/tmp/svcops-bench-1g.json' },
    keep: { type: 'boolean', default: false },
    vs: { type: 'string' },
    rounds: { type: 'string', default: '3' },
    runs: { type: 'string', default: '1' },
  },
})

interface DatabaseInfo {
  host: string
  port: number
  user: string
  password: string
  database: string
}

/** Reads an info file generate.ts wrote; one sentence and exit 2 when it cannot. */
function readInfo(file: string): DatabaseInfo {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as DatabaseInfo
  } catch (error) {
    process.stderr.write(
      `--info: '${file}' cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)}); expected the file generate.ts wrote.\n`,
    )
    process.exit(2)
  }
}

const runs = Number(values.runs)
if (!Number.isInteger(runs) || runs < 1) {
  process.stderr.write(`--runs: '${values.runs}' is not a whole number of rounds; expected 1 or more.\n`)
  process.exit(2)
}
const infos = values.info.split(',').map((file) => ({ file, info: readInfo(file.trim()) }))
const root = resolve(new URL('../..', import.meta.url).pathname)
const work = mkdtempSync(join(tmpdir(), 'svcops-bench-backup-'))
const gnupgHome = join(work, 'gnupg')
const key = await generateBackupKey({ name: 'svcops bench' })
writeFileSync(join(work, 'bench.pub.asc'), key.publicKey)
writeFileSync(join(work, 'bench.key.asc'), key.privateKey, { mode: 0o600 })
await runCommand(local, ['mkdir', '-m', '0700', gnupgHome])
await runCommand(local, ['gpg', '--batch', '--import', join(work, 'bench.pub.asc')], { env: { GNUPGHOME: gnupgHome } })

/** A row of the table. */
interface Row extends Measured {
  name: string
  outBytes?: number
}

/** The bench's stack file for one database: its own store, the bench key as recipient, signer and identity. */
function writeStackFile(info: DatabaseInfo, dir: string): string {
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'db.pw'), info.password, { mode: 0o600 })
  const file = join(dir, 'Pulumi.bench.yaml')
  writeFileSync(
    file,
    stringify({
      config: {
        'svcops:recording': {
          version: '1.6.0',
          hosts: [{ name: 'rec1', url: 'http://127.0.0.1:9' }],
          database: { host: info.host, port: info.port, name: info.database, user: info.user, password: { file: join(dir, 'db.pw') } },
        },
        'svcops:backup': {
          store: { path: join(dir, 'store') },
          recipients: [join(work, 'bench.pub.asc')],
          identity: { file: join(work, 'bench.key.asc') },
        },
      },
    }),
  )
  return file
}

/** Runs a shell command line measured; the database's libpq settings only in the environment. */
async function measure(name: string, script: string, info: DatabaseInfo): Promise<Row> {
  const libpq = { PGHOST: info.host, PGPORT: String(info.port), PGUSER: info.user, PGPASSWORD: info.password, PGDATABASE: info.database }
  const r = await measureCommand(['bash', '-c', `set -o pipefail; ${script}`], { cwd: root, env: { ...libpq, GNUPGHOME: gnupgHome } })
  if (r.code !== 0) throw new Error(`${name} failed (exit ${r.code}): ${r.stderr.slice(-1000)}`)
  process.stderr.write(`${name}: ${r.wallS.toFixed(1)} s, CPU ${r.cpuS.toFixed(1)} s, ${r.rssMb.toFixed(0)} MB RSS\n`)
  return { ...r, name }
}

const mb = (b: number): string => (b / 1024 ** 2).toFixed(0)

/** The four rows on one database, and what they say against the targets. */
async function benchDatabase(info: DatabaseInfo, dir: string): Promise<string[]> {
  const client = new pg.Client({ host: info.host, port: info.port, user: info.user, password: info.password, database: info.database })
  await client.connect()
  const dbBytes = Number((await client.query<{ s: string }>('SELECT pg_database_size(current_database())::text AS s')).rows[0]?.s)
  await client.end()
  const envFile = writeStackFile(info, dir)
  const before = loadAverage()
  // Each round measures the four rows in turn, so that load on the machine falls on all of them alike.
  const rounds: Row[][] = []
  for (let round = 0; round < runs; round++) {
    const floor = await measure('`pg_dump -Fc -Z0 > /dev/null`', 'pg_dump -Fc -Z0 > /dev/null', info)
    const gpgOut = join(dir, 'usual.pgp')
    const usual = await measure(
      '`pg_dump -Fc \\| gpg --encrypt -r KEY`',
      `pg_dump -Fc | gpg --batch --trust-model always --encrypt -r ${key.fingerprint} > ${gpgOut}`,
      info,
    )
    usual.outBytes = statSync(gpgOut).size
    rmSync(gpgOut)
    const create = await measure('`svcops backup create`', `bin/svcops --stack-file ${envFile} --json backup create`, info)
    const manifest = (JSON.parse(create.stdout) as { backup: { id: string; sizes: { encrypted: number } } }).backup
    create.outBytes = manifest.sizes.encrypted
    const verify = await measure(
      '`svcops backup verify --restore-test`',
      `bin/svcops --stack-file ${envFile} --json backup verify ${manifest.id} --restore-test`,
      info,
    )
    rounds.push([floor, usual, create, verify])
  }
  // A row of medians (wall time and CPU; the largest peak RSS), the wall time of every run kept for the table.
  const rows: (Row & { walls: number[] })[] = [0, 1, 2, 3].map((i) => {
    const runsOfRow = rounds.map((r) => r[i] as Row)
    const first = runsOfRow[0] as Row
    return {
      ...first,
      wallS: median(runsOfRow.map((r) => r.wallS)),
      cpuS: median(runsOfRow.map((r) => r.cpuS)),
      rssMb: Math.max(...runsOfRow.map((r) => r.rssMb)),
      walls: runsOfRow.map((r) => r.wallS),
    }
  })
  const [, usual, create, verify] = rows as unknown as [Row, Row, Row, Row]
  const throughput = usual.wallS / create.wallS
  const size = (create.outBytes ?? NaN) / (usual.outBytes ?? NaN)
  const pgDumpVersion = /\d+\.\d+/.exec((await runCommand(local, ['pg_dump', '--version'])).stdout)?.[0] ?? ''
  return [
    `Database: ${mb(dbBytes)} MB (pg_database_size), PostgreSQL and pg_dump ${pgDumpVersion}, ${(await runCommand(local, ['nproc'])).stdout.trim()} cores; load average ${before} before, ${loadAverage()} after.` +
      (runs > 1
        ? ` ${runs} rounds of the four rows in turn; each cell the median (wall time: every run in brackets), peak RSS the largest.`
        : ''),
    '',
    '| row | wall time (s) | MB/s of database | output (MB) | peak RSS (MB) | client CPU (s) |',
    '|---|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${r.wallS.toFixed(1)}${runs > 1 ? ` (${r.walls.map((w) => w.toFixed(1)).join(' / ')})` : ''} | ${(dbBytes / 1024 ** 2 / r.wallS).toFixed(1)} | ${r.outBytes !== undefined ? mb(r.outBytes) : '–'} | ${r.rssMb.toFixed(0)} | ${r.cpuS.toFixed(1)} |`,
    ),
    '',
    `svcops backup create vs the usual pipeline: ${throughput.toFixed(2)}x the throughput (target >= 2), ${size.toFixed(3)}x the size (target <= 1.1); ` +
      `peak RSS ${create.rssMb.toFixed(0)} MB create (target < 150), ${verify.rssMb.toFixed(0)} MB verify --restore-test (target < 200); ` +
      `CPU ${(create.cpuS / usual.cpuS).toFixed(2)}x the pipeline's.`,
    '',
  ]
}

try {
  const out: string[] = []
  for (const [i, { file, info }] of infos.entries()) {
    process.stderr.write(`${file}\n`)
    out.push(...(await benchDatabase(info, join(work, `db${i}`))))
  }
  process.stdout.write(out.join('\n'))
  const first = infos[0]
  if (values.vs && first) {
    const envFile = join(work, 'db0', 'Pulumi.bench.yaml')
    process.stdout.write('\n' + (await alternate(resolve(values.vs), Number(values.rounds), envFile, first.info)) + '\n')
  }
} finally {
  // gpg started an agent for the bench's key ring; it must not outlive the run.
  await runCommand(local, ['gpgconf', '--kill', 'gpg-agent'], { env: { GNUPGHOME: gnupgHome }, check: false })
  if (!values.keep) rmSync(work, { recursive: true, force: true })
}

/** `--vs DIR`: create and verify of DIR's build (A) and this one (B), alternated; medians and B/A. */
async function alternate(other: string, rounds: number, envFile: string, info: DatabaseInfo): Promise<string> {
  // Builds before 2026-11-24 name the stack file option --env-file (Node 24 now takes that name).
  const help = (await runCommand(local, [join(other, 'bin/svcops'), '--help'], { cwd: other })).stdout
  const otherOption = help.includes('--stack-file') ? '--stack-file' : '--env-file'
  const builds = [
    { label: `A: ${other}`, bin: `${join(other, 'bin/svcops')} ${otherOption} ${envFile}` },
    { label: 'B: this checkout', bin: `${join(root, 'bin/svcops')} --stack-file ${envFile}` },
  ]
  const runs = builds.map(() => ({ create: [] as Row[], verify: [] as Row[] }))
  const before = loadAverage()
  for (let round = 0; round < rounds; round++) {
    for (const [i, build] of builds.entries()) {
      const made = await measure(`create ${build.label}`, `${build.bin} --json backup create`, info)
      const id = (JSON.parse(made.stdout) as { backup: { id: string } }).backup.id
      runs[i]?.create.push(made)
      runs[i]?.verify.push(await measure(`verify ${build.label}`, `${build.bin} --json backup verify ${id} --restore-test`, info))
    }
  }
  const cell = (rows: Row[], pick: (r: Row) => number, digits: number): string =>
    `${median(rows.map(pick)).toFixed(digits)} (${rows.map((r) => pick(r).toFixed(digits)).join(' / ')})`
  const lines = [
    `Alternated A B, ${rounds} rounds; median (every run). Load average ${before} before, ${loadAverage()} after.`,
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
