/**
 * The cost of one local command: zx's `$` with its defaults, zx's `$` as svcops configures it
 * (src/core/shell.ts), and a hand-written `spawn` (the runner's local transport), side by side.
 * Each runs `true` N times in a row with the environment svcops gives children (childEnvironment);
 * `$` with zx's defaults also runs with this process's whole environment. Rounds alternate the
 * order, so a machine that slows down slows every row. Per command: wall time (median of the
 * rounds), this process's CPU and its children's CPU (from /proc: what the shell and its startup
 * files cost). Prints a Markdown table.
 *
 *   node bench/zx/run.ts [--commands 20] [--rounds 5]
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { parseArgs } from 'node:util'
import { $ as zxDefault } from 'zx'
import { $ } from '../../src/core/shell.ts'
import { childEnvironment, local, runCommand } from '../../src/core/runner.ts'
import { median } from '../measure.ts'

const { values } = parseArgs({ options: { commands: { type: 'string', default: '20' }, rounds: { type: 'string', default: '5' } } })
const commands = Number(values.commands)
const rounds = Number(values.rounds)
const reduced = childEnvironment()

/** CPU time (ms) of this process's children that have ended: /proc/self/stat cutime + cstime. */
function childrenCpuMs(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  const ticks = Number(fields[13]) + Number(fields[14]) // cutime, cstime (fields 16, 17 of stat)
  return (ticks * 1000) / 100 // USER_HZ is 100 on Linux
}

/** A bare spawn of `true`, as a reference below the runner. */
function spawnTrue(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('true', [], { env: reduced, stdio: ['pipe', 'pipe', 'pipe'] })
    child.on('error', reject)
    child.on('close', () => resolve())
    child.stdin.end()
  })
}

const variants: Array<{ name: string; run: () => Promise<unknown>; wall: number[]; cpu: number[]; childCpu: number[] }> = [
  { name: '`spawn` (node:child_process, bare)', run: spawnTrue },
  { name: '`runCommand(local, …)` (svcops runner, spawn)', run: () => runCommand(local, ['true']) },
  { name: '`$` as svcops configures it (src/core/shell.ts)', run: () => $`true` },
  { name: "`$` zx defaults, svcops' child environment", run: () => zxDefault({ quiet: true, env: reduced })`true` },
  { name: "`$` zx defaults, this process's environment", run: () => zxDefault({ quiet: true })`true` },
].map((v) => ({ ...v, wall: [], cpu: [], childCpu: [] }))
const loadBefore = loadavg()

for (const v of variants) await v.run() // the first call's set-up is not measured
for (let round = 0; round < rounds; round++) {
  for (const v of round % 2 ? [...variants].reverse() : variants) {
    const cpu = process.cpuUsage()
    const children = childrenCpuMs()
    const started = performance.now()
    for (let i = 0; i < commands; i++) await v.run()
    v.wall.push((performance.now() - started) / commands)
    const used = process.cpuUsage(cpu)
    v.cpu.push((used.user + used.system) / 1000 / commands)
    v.childCpu.push((childrenCpuMs() - children) / commands)
  }
}

const base = median(variants[0]?.wall ?? [])
const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ')
process.stdout.write(
  [
    `${cpus().length} CPUs, load average ${load(loadBefore)} before and ${load(loadavg())} after; \`true\` run ${commands} times in a row, median of ${rounds} rounds, Node ${process.version}.`,
    '',
    '| how | wall per command (median) | slowest round | CPU here | CPU of children | vs bare spawn |',
    '|---|---:|---:|---:|---:|---:|',
    ...variants.map(
      (v) =>
        `| ${v.name} | ${median(v.wall).toFixed(1)} ms | ${Math.max(...v.wall).toFixed(1)} ms | ${median(v.cpu).toFixed(1)} ms | ${median(v.childCpu).toFixed(1)} ms | ${(median(v.wall) / base).toFixed(1)}x |`,
    ),
    '',
  ].join('\n'),
)
