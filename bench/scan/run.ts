/**
 * `svcops scan sdk` against `rg` on the same generated C++ tree with the same symbol list, side by
 * side in one run. The tree is deterministic (seeded): ordinary code, comments and string literals
 * that mention the symbols (traps), similarly named identifiers, and real uses in a few files.
 * Prints a Markdown table per tree size: median wall time of the CLI as a user runs it
 * (`node bin/svcops`, on the Node running this file), lines per second and findings; the scan phase
 * of svcops measured in-process (warm, no start-up); and the start-up of Node alone and of svcops.
 *
 *   node bench/scan/run.ts [--lines 400000,2000000] [--runs 11] [--from 1.0.0] [--to 7.0.0] [--keep]
 */
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { svcopsCommand } from '../../src/core/paths.ts'
import { CPP_EXTENSIONS, scanSdk, sdkSymbolRules } from '../../src/releases/sdk-scan.ts'
import { requireTools, TOOLS } from '../require-tools.ts'
import { median } from '../measure.ts'

requireTools('bench/scan/run.ts', TOOLS.ripgrep)

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const CLI = svcopsCommand() // bin/svcops with the flags of its #! line, on this Node
const { values } = parseArgs({
  options: {
    lines: { type: 'string', default: '400000,2000000' },
    runs: { type: 'string', default: '11' },
    from: { type: 'string', default: '1.0.0' },
    to: { type: 'string', default: '7.0.0' },
    keep: { type: 'boolean', default: false },
  },
})
const sizes = values.lines.split(',').map(Number)
const runs = Number(values.runs)

// Deterministic pseudo-random numbers (mulberry32), so every run scans the same tree.
let seed = 0x5eed
function random(): number {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T

const symbols = [...new Set(sdkSymbolRules(values.from, values.to).map((r) => r.symbol))]
const ordinary = [
  '  for (size_t i = 0; i < frames.size(); ++i) { total += frames[i].mSize; }',
  '  if (!settings.mEnabled) { return false; }',
  '  std::lock_guard<std::mutex> lock(mMutex);',
  '  const auto now = std::chrono::steady_clock::now();',
  '  mQueue.push_back(std::move(frame));',
  '  LOG_DEBUG("queue depth {}", mQueue.size());',
  '  auto result = encoder->encode(frame, mOptions);',
  '  mStats.framesRendered++;',
  '  return std::make_shared<Renderer>(config, device);',
  "  uint64_t timestampOffset = 1'000'000;",
]
const traps = [
  (s: string) => `  // TODO: ${s} is gone after the upgrade, see the release notes`,
  (s: string) => `  /* was: ${s}(frame) */`,
  (s: string) => `  LOG_INFO("migrating away from ${s}");`,
  (s: string) => `  const char* query = R"json({"field": "${s}"})json";`,
  (s: string) => `  int ${s.split('::').at(-1) ?? s}Legacy = 0;`,
]
const uses = [
  (s: string) => `  auto value = ${s.includes('::') ? s : `frame->${s}`};`,
  (s: string) => `  ${s.includes('::') ? `${s}(settings)` : `iface->${s}(msg)`};`,
]

function makeFile(index: number): string {
  const lines = [
    `// Generated file ${index} of the scan benchmark.`,
    '#include <memory>',
    '#include <vector>',
    `#include "engine/module_${index % 97}.h"`,
    '',
    `namespace engine::module${index} {`,
    '',
  ]
  const functions = 6 + Math.floor(random() * 6)
  const hasTraps = random() < 0.25
  const hasUses = random() < 0.05
  for (let f = 0; f < functions; f++) {
    lines.push(`// Renders step ${f} of module ${index}.`, `bool Module${index}::step${f}(Frame& frame) {`)
    const body = 10 + Math.floor(random() * 20)
    for (let b = 0; b < body; b++) {
      const roll = random()
      if (hasTraps && roll < 0.08) lines.push(pick(traps)(pick(symbols)))
      else if (hasUses && roll > 0.985) lines.push(pick(uses)(pick(symbols)))
      else lines.push(pick(ordinary))
    }
    lines.push('  return true;', '}', '')
  }
  lines.push(`}  // namespace engine::module${index}`, '')
  return lines.join('\n')
}

/** Generates a tree of at least `target` lines; returns its folder, files and lines. */
function generateTree(target: number): { dir: string; files: number; lines: number } {
  const dir = mkdtempSync(join(tmpdir(), 'svcops-bench-scan-'))
  let lines = 0
  let files = 0
  while (lines < target) {
    const sub = join(dir, `component${files % 40}`, `part${Math.floor(files / 40) % 10}`)
    if (files < 400) mkdirSync(sub, { recursive: true })
    const text = makeFile(files)
    writeFileSync(join(sub, `module${files}.${files % 5 === 0 ? 'h' : 'cpp'}`), text)
    lines += text.split('\n').length - 1
    files++
  }
  return { dir, files, lines }
}

function timed(argv: string[]): Promise<{ ms: number; stdout: string; code: number | null }> {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0] ?? '', argv.slice(1), { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] })
    let stdout = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.on('error', reject)
    child.on('close', (code) => resolve({ ms: performance.now() - started, stdout, code }))
  })
}
const fmt = (ms: number): string => `${ms.toFixed(0)} ms`
const globs = CPP_EXTENSIONS.flatMap((e) => ['-g', `*${e}`])

const startup = { node: [] as number[], svcops: [] as number[] }
for (let r = 0; r < runs; r++) {
  startup.node.push((await timed([process.execPath, '-e', '0'])).ms)
  startup.svcops.push((await timed([...CLI, '--version'])).ms)
}

const out: string[] = [
  `${cpus().length} CPUs; median of ${runs} runs; symbols ${values.from} -> ${values.to}; Node ${process.version}, svcops from its sources (compile cache in node_modules/.cache).`,
  '',
]
for (const target of sizes) {
  const tree = generateTree(target)
  const rgArgv = [
    'rg',
    '--no-heading',
    '--line-number',
    '--column',
    '--word-regexp',
    '--fixed-strings',
    ...globs,
    ...symbols.flatMap((s) => ['-e', s]),
    tree.dir,
  ]
  // As a user runs it: bin/svcops, on the same Node as `node -e 0` above.
  const svcopsArgv = [...CLI, 'scan', 'sdk', tree.dir, '--from', values.from, '--to', values.to]
  const results: Record<'rg' | 'svcops', { ms: number[]; findings: number }> = {
    rg: { ms: [], findings: 0 },
    svcops: { ms: [], findings: 0 },
  }
  await timed(rgArgv) // warm the page cache for both
  await timed(svcopsArgv)
  for (let r = 0; r < runs; r++) {
    // Alternate, so neither tool always runs on a cache the other just warmed.
    for (const tool of r % 2 ? (['svcops', 'rg'] as const) : (['rg', 'svcops'] as const)) {
      const run = await timed(tool === 'rg' ? rgArgv : svcopsArgv)
      results[tool].ms.push(run.ms)
      results[tool].findings =
        tool === 'rg' ? run.stdout.split('\n').filter(Boolean).length : run.stdout.split('\n').filter((l) => /:\d+:\d+: /.test(l)).length
    }
  }
  const inProcess: number[] = []
  let scanFindings = 0
  for (let r = 0; r < runs; r++) {
    const started = performance.now()
    scanFindings = scanSdk(tree.dir, values.from, values.to).findings.length
    inProcess.push(performance.now() - started)
  }
  if (values.keep) process.stderr.write(`tree kept in ${tree.dir}\n`)
  else rmSync(tree.dir, { recursive: true, force: true })

  const rate = (ms: number): string => `${(((tree.lines / ms) * 1000) / 1e6).toFixed(2)} M`
  const rg = median(results.rg.ms)
  const sv = median(results.svcops.ms)
  const phase = median(inProcess)
  out.push(
    `Tree: ${tree.files} C++ files, ${tree.lines} lines, ${symbols.length} symbols.`,
    '',
    '| tool | what is measured | wall time | lines/s | matches | comment/string aware | speed vs rg |',
    '|---|---|---|---|---|---|---|',
    `| rg (${cpus().length} threads) | CLI, fixed strings, whole words | ${fmt(rg)} | ${rate(rg)} | ${results.rg.findings} | no | 1.00 |`,
    `| svcops scan sdk | CLI as users run it (start-up included) | ${fmt(sv)} | ${rate(sv)} | ${results.svcops.findings} | yes | ${(rg / sv).toFixed(2)} |`,
    `| svcops scan sdk | scan phase in-process (list + read + lex + match, warm) | ${fmt(phase)} | ${rate(phase)} | ${scanFindings} | yes | ${(rg / phase).toFixed(2)} |`,
    '',
  )
}
out.push(
  `Start-up: node -e 0 ${fmt(median(startup.node))}; svcops --version ${fmt(median(startup.svcops))}. Target: svcops at least 0.5x rg's speed.`,
  '',
)
process.stdout.write(out.join('\n'))
