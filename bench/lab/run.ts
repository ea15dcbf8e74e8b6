/**
 * Time of `svcops lab up` (and `lab down`) for 1 and 10 hosts, run as a user runs it: the CLI as a
 * subprocess, each run in its own lab dir and TMPDIR. The recording packages are built once before
 * the first measured run (the lab caches them; a cold build adds a few seconds to the first lab up
 * after a change of the service's sources). Prints a Markdown table plus the slowest steps.
 *
 * With `--host-kind sandbox,systemd` both kinds of host side by side (systemd: hosts booted with
 * systemd-nspawn, apt from the lab's signed repository; root only). With `--live V`, each kind's
 * lab up is also timed for the live system alone (`--hosts 0 --live V --live-hosts N`, N from
 * `--live-hosts`, 2 unless given), its packages built once before the first run as the recording's are.
 *
 *   node bench/lab/run.ts [--hosts 1,10] [--runs 3] [--host-kind sandbox,systemd] [--live 1.0.0 [--live-hosts 2]]
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { buildLivePackages } from '../../src/lab/live/package.ts'
import { DEFAULT_LIVE_PRODUCT } from '../../src/lab/live/paths.ts'
import { buildRecordingPackages } from '../../src/lab/recording/index.ts'
import { svcops as runCli, type CliResult } from '../../test/lab/labcore-helpers.ts'
import { requireTools, TOOLS } from '../require-tools.ts'
import { median } from '../measure.ts'

requireTools('bench/lab/run.ts', TOOLS.postgresServer, TOOLS.postgresClient, TOOLS.sshServer, TOOLS.labHost)

const { values } = parseArgs({
  options: {
    hosts: { type: 'string', default: '1,10' },
    runs: { type: 'string', default: '3' },
    'host-kind': { type: 'string', default: 'sandbox' },
    live: { type: 'string' },
    'live-hosts': { type: 'string', default: '2' },
  },
})
const hostCounts = values.hosts.split(',').map(Number)
const kinds = values['host-kind'].split(',')
const runs = Number(values.runs)

/** The CLI as a subprocess (the lab tests' runner), timed. */
async function svcops(args: string[], env: Record<string, string>): Promise<CliResult & { ms: number }> {
  const started = performance.now()
  const result = await runCli(args, env)
  return { ...result, ms: performance.now() - started }
}

/** Durations of the top-level steps from the progress lines ("✓ start PostgreSQL (1.9 s)"). */
function stepTimes(stderr: string): Map<string, number> {
  const out = new Map<string, number>()
  for (const m of stderr.matchAll(/^✓ (.+?) \((\d+(?:\.\d+)?) (ms|s)\)$/gm)) {
    out.set(m[1] ?? '', Number(m[2]) * (m[3] === 's' ? 1000 : 1))
  }
  return out
}
const s = (ms: number): string => (ms / 1000).toFixed(1)

const packagesDir = join(tmpdir(), 'svcops-bench-lab-packages')
await buildRecordingPackages(packagesDir)
// Where lab up looks for the live packages under SVCOPS_LAB_PACKAGES_DIR (src/lab/live-lab.ts).
if (values.live) await buildLivePackages(join(packagesDir, 'live'), DEFAULT_LIVE_PRODUCT)

/** One row per lab: the system it starts, the kind of host, the recording hosts, and the extra arguments of lab up. */
interface Lab {
  system: string
  kind: string
  hosts: number
  args: string[]
}
const labs: Lab[] = kinds.flatMap((kind) => [
  ...hostCounts.map((hosts) => ({ system: 'recording', kind, hosts, args: [] })),
  ...(values.live
    ? [
        {
          system: `live ${values.live} on ${values['live-hosts']} hosts`,
          kind,
          hosts: 0,
          args: ['--live', values.live, '--live-hosts', values['live-hosts']],
        },
      ]
    : []),
])

const rows: string[] = []
const details: string[] = []
for (const { system, kind, hosts, args } of labs) {
  const up: number[] = []
  const down: number[] = []
  const steps = new Map<string, number[]>()
  for (let i = 0; i < runs; i++) {
    const base = mkdtempSync(join(tmpdir(), 'svcops-bench-lab-'))
    chmodSync(base, 0o755)
    mkdirSync(join(base, 'tmp'), { mode: 0o755 })
    const env = {
      SVCOPS_LAB_DIR: join(base, 'lab'),
      SVCOPS_STACKS_DIR: join(base, 'stacks'),
      TMPDIR: join(base, 'tmp'),
      SVCOPS_LAB_PACKAGES_DIR: packagesDir,
    }
    try {
      const result = await svcops(
        ['lab', 'up', '--hosts', String(hosts), '--host-kind', kind, '--recordings', '0', ...args, '--json', '--verbose'],
        env,
      )
      if (result.code !== 0)
        throw new Error(
          `lab up --hosts ${hosts} --host-kind ${kind} ${args.join(' ')} failed (exit ${result.code}): ${result.stderr.slice(-2000)}`,
        )
      up.push(result.ms)
      for (const [step, ms] of stepTimes(result.stderr)) steps.set(step, [...(steps.get(step) ?? []), ms])
    } finally {
      const result = await svcops(['lab', 'down'], env)
      down.push(result.ms)
      rmSync(base, { recursive: true, force: true })
    }
    process.stderr.write(
      `${system} ${kind} hosts=${hosts} run ${i + 1}/${runs}: up ${s(up.at(-1) ?? NaN)} s, down ${s(down.at(-1) ?? NaN)} s\n`,
    )
  }
  rows.push(
    `| ${system} | ${kind} | ${hosts} | ${runs} | ${s(median(up))} | ${s(Math.min(...up))} – ${s(Math.max(...up))} | ${s(median(down))} |`,
  )
  const top = [...steps.entries()].filter(([name]) => !/^host rec-/.test(name)).map(([name, xs]) => `${name} ${s(median(xs))} s`)
  details.push(`- ${system}, ${kind}, ${hosts} host${hosts === 1 ? '' : 's'}: ${top.join('; ')}`)
}

process.stdout.write(
  [
    `lab up/down on ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown CPU'}), packages prebuilt, --recordings 0, median of ${runs}:`,
    '',
    '| system | kind | recording hosts | runs | lab up (s, median) | lab up (s, min – max) | lab down (s, median) |',
    '|---|---|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    'Steps of lab up (median):',
    ...details,
    '',
  ].join('\n'),
)
