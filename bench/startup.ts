/**
 * svcops' start-up against Node's own: `svcops --version`, `svcops --help` and `svcops upgrade
 * recording --help`, each as a whole process paired with `node -e 0` on the same Node, the two run in
 * turn (A B A B ...) so that a machine slowing down slows both. Per command: CPU (user + system,
 * from the kernel's accounting through GNU time) and wall time as the ratio A/B of each pair, median
 * with min and max, after one warm-up pair that fills Node's compile cache. CPU is the figure to
 * compare on a shared machine. Prints a Markdown table (docs/benchmarks.md, "Start-up").
 *
 *   node bench/startup.ts [--pairs 10]
 */
import { cpus } from 'node:os'
import { parseArgs } from 'node:util'
import { svcopsCommand } from '../src/core/paths.ts'
import { loadAverage, measureCommand, median, type Measured } from './measure.ts'
import { requireTools, TOOLS } from './require-tools.ts'

requireTools('bench/startup.ts', TOOLS.time)

const { values } = parseArgs({ options: { pairs: { type: 'string', default: '10' } } })
const pairs = Number(values.pairs)
if (!Number.isInteger(pairs) || pairs < 1) {
  process.stderr.write(`bench/startup.ts: --pairs: '${values.pairs}' is not valid; expected a whole number of at least 1.\n`)
  process.exit(2)
}

/** The commands measured, as a user types them after `svcops`. */
const COMMANDS: string[][] = [['--version'], ['--help'], ['upgrade', 'recording', '--help']]
const bare = [process.execPath, '-e', '0']
const loadBefore = loadAverage()

/** The ratios A/B of `pairs` pairs of `args` against `node -e 0`, after a warm-up pair. */
async function paired(args: string[]): Promise<{ cpu: number[]; wall: number[] }> {
  const svcops = [...svcopsCommand(), ...args]
  const check = (m: Measured, what: string[]) => {
    if (m.code !== 0) throw new Error(`${what.join(' ')} exited ${m.code}: ${m.stderr.trim()}`)
  }
  check(await measureCommand(svcops), svcops)
  const cpu: number[] = []
  const wall: number[] = []
  for (let i = 0; i < pairs; i++) {
    const a = await measureCommand(svcops)
    const b = await measureCommand(bare)
    check(a, svcops)
    cpu.push(a.cpuS / b.cpuS)
    wall.push(a.wallS / b.wallS)
  }
  return { cpu, wall }
}

const rows: string[] = []
for (const args of COMMANDS) {
  const { cpu, wall } = await paired(args)
  const range = (xs: number[]) => `${median(xs).toFixed(2)} (${Math.min(...xs).toFixed(2)} – ${Math.max(...xs).toFixed(2)})`
  rows.push(`| \`svcops ${args.join(' ')}\` | \`node -e 0\` | ${range(cpu)} | ${range(wall)} |`)
}
process.stdout.write(
  [
    `${cpus().length} CPUs, load average ${loadBefore} before and ${loadAverage()} after; ${pairs} pairs each, Node ${process.version}.`,
    '',
    '| command (A) | against (B) | CPU A/B, median (min – max) | wall A/B, median (min – max) |',
    '|---|---|---:|---:|',
    ...rows,
    '',
  ].join('\n'),
)
