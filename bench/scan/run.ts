/**
 * `svcops scan sdk` against `rg` on the same generated C++ tree with the same symbol list, side by
 * side in one run. The tree is deterministic (seeded): ordinary code, comments and string literals
 * that mention the symbols (traps), similarly named identifiers, and real uses in a few files.
 * Prints a Markdown table: median wall time of the CLI as a user runs it, lines per second, and
 * findings; plus the scan phase of svcops measured in-process (without Node and tsx start-up).
 *
 *   npx tsx bench/scan/run.ts [--lines 400000] [--runs 5] [--from 1.0.0] [--to 7.0.0] [--keep]
 */
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { findBinary } from '../../src/ops/runner.ts'
import { CPP_EXTENSIONS, scanSdk, sdkSymbolRules } from '../../src/releases/sdk-scan.ts'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const CLI = join(ROOT, 'bin/svcops.js')
const { values } = parseArgs({ options: { lines: { type: 'string', default: '400000' }, runs: { type: 'string', default: '5' }, from: { type: 'string', default: '1.0.0' }, to: { type: 'string', default: '7.0.0' }, keep: { type: 'boolean', default: false } } })
const targetLines = Number(values.lines)
const runs = Number(values.runs)

if (!findBinary('rg')) {
  process.stderr.write('rg is not installed: sudo apt-get install -y ripgrep\n')
  process.exit(2)
}

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
  '  uint64_t timestampOffset = 1\'000\'000;',
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
  const lines = [`// Generated file ${index} of the scan benchmark.`, '#include <memory>', '#include <vector>', `#include "engine/module_${index % 97}.h"`, '', `namespace engine::module${index} {`, '']
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

const dir = mkdtempSync(join(tmpdir(), 'svcops-bench-scan-'))
let lines = 0
let files = 0
while (lines < targetLines) {
  const sub = join(dir, `component${files % 40}`, `part${Math.floor(files / 40) % 10}`)
  if (files < 400) mkdirSync(sub, { recursive: true })
  const text = makeFile(files)
  writeFileSync(join(sub, `module${files}.${files % 5 === 0 ? 'h' : 'cpp'}`), text)
  lines += text.split('\n').length - 1
  files++
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

const globs = CPP_EXTENSIONS.flatMap((e) => ['-g', `*${e}`])
const rgArgv = ['rg', '--no-heading', '--line-number', '--column', '--word-regexp', '--fixed-strings', ...globs, ...symbols.flatMap((s) => ['-e', s]), dir]
const svcopsArgv = [process.execPath, CLI, 'scan', 'sdk', dir, '--from', values.from, '--to', values.to]
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN

const results: Record<'rg' | 'svcops', { ms: number[]; findings: number }> = { rg: { ms: [], findings: 0 }, svcops: { ms: [], findings: 0 } }
await timed(rgArgv) // warm the page cache for both
await timed(svcopsArgv) // and tsx's transform cache
for (let r = 0; r < runs; r++) {
  // Alternate, so neither tool always runs on a cache the other just warmed.
  for (const tool of r % 2 ? (['svcops', 'rg'] as const) : (['rg', 'svcops'] as const)) {
    const run = await timed(tool === 'rg' ? rgArgv : svcopsArgv)
    results[tool].ms.push(run.ms)
    results[tool].findings = tool === 'rg' ? run.stdout.split('\n').filter(Boolean).length : run.stdout.split('\n').filter((l) => /:\d+:\d+: /.test(l)).length
  }
}
const startup: number[] = []
for (let r = 0; r < runs; r++) startup.push((await timed([process.execPath, CLI, '--version'])).ms)
const inProcess: number[] = []
let scanFindings = 0
for (let r = 0; r < runs; r++) {
  const started = performance.now()
  scanFindings = scanSdk(dir, values.from, values.to).findings.length
  inProcess.push(performance.now() - started)
}
if (values.keep) process.stderr.write(`tree kept in ${dir}\n`)
else rmSync(dir, { recursive: true, force: true })

const fmt = (ms: number): string => `${ms.toFixed(0)} ms`
const rate = (ms: number): string => `${((lines / ms) * 1000 / 1e6).toFixed(2)} M`
const rg = median(results.rg.ms)
const sv = median(results.svcops.ms)
const phase = median(inProcess)
process.stdout.write(
  [
    `Tree: ${files} C++ files, ${lines} lines, ${symbols.length} symbols (${values.from} -> ${values.to}); ${cpus().length} CPUs; median of ${runs} runs.`,
    '',
    '| tool | what is measured | wall time | lines/s | matches | comment/string aware |',
    '|---|---|---|---|---|---|',
    `| rg (${cpus().length} threads) | CLI, fixed strings, whole words | ${fmt(rg)} | ${rate(rg)} | ${results.rg.findings} | no |`,
    `| svcops scan sdk | CLI (Node + tsx start-up included) | ${fmt(sv)} | ${rate(sv)} | ${results.svcops.findings} | yes |`,
    `| svcops scan sdk | scan phase in-process (read + lex + match) | ${fmt(phase)} | ${rate(phase)} | ${scanFindings} | yes |`,
    `| svcops --version | CLI start-up alone (no scan) | ${fmt(median(startup))} | | | |`,
    '',
    `svcops CLI / rg speed: ${(rg / sv).toFixed(2)}; svcops scan phase / rg speed: ${(rg / phase).toFixed(2)} (target >= 0.5).`,
    '',
  ].join('\n'),
)
