/**
 * The folders of src/ and playbooks/ in layers, top down (docs/architecture.md draws them): a file
 * imports from its own layer or a lower one, never a higher one, and the engine (src/runs,
 * src/reports) never imports what observes its runs (src/notify, src/metrics) or starts them
 * (src/schedule): those are wired at the edge. Every import is read from the sources, static and
 * dynamic, so a new upward arrow fails here naming the file and what it imports.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ROOT } from '../support/cli.ts'

/** The layers, top down: a folder (or file) of src/, or playbooks/. */
export const LAYERS: readonly (readonly string[])[] = [
  // src/lab/command.ts is the lab's own command group (the registry loads it by path): the CLI's layer.
  ['src/cli.ts', 'src/commands', 'src/lab/command.ts'],
  ['playbooks'],
  // What the CLI and the playbooks run as scripts share: output, script mode, the wiring of run observers.
  ['src/edge'],
  ['src/recording', 'src/live', 'src/doctor', 'src/probe', 'src/backup', 'src/lab'],
  ['src/runs', 'src/reports', 'src/analysis', 'src/schedule', 'src/notify', 'src/metrics'],
  ['src/drivers', 'src/clients', 'src/infra'],
  ['src/config', 'src/releases'],
  ['src/core'],
]

/** Inside the runs layer: the engine and its views never import the observers of runs, nor what starts runs. */
const ENGINE = ['src/runs', 'src/reports']
const ABOVE_ENGINE = ['src/notify', 'src/metrics', 'src/schedule']

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? filesUnder(path) : path.endsWith('.ts') ? [path] : []
  })
}

/** The folder (or file) of `path` among the layers' entries, and its layer. */
function placeOf(path: string): { unit: string; layer: number } | undefined {
  const rel = relative(ROOT, path)
  for (const [layer, units] of LAYERS.entries())
    for (const unit of units) if (rel === unit || rel.startsWith(`${unit}/`)) return { unit, layer }
  return undefined
}

/** Every relative module a source file imports (static, type-only and dynamic). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8')
  const specs = [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^import\s+)(['"])(\.{1,2}\/[^'"]+)\1/gm)].map((m) => m[2] as string)
  return specs.map((s) => resolve(dirname(file), s))
}

/** Every import that runs up the layers, as "file -> target". */
export function upwardImports(): string[] {
  const files = [...filesUnder(join(ROOT, 'src')), ...filesUnder(join(ROOT, 'playbooks'))]
  const wrong: string[] = []
  for (const file of files) {
    const from = placeOf(file)
    if (!from) continue
    for (const target of importsOf(file)) {
      const to = placeOf(target)
      if (!to) continue
      const up = to.layer < from.layer
      const observed = ENGINE.includes(from.unit) && ABOVE_ENGINE.includes(to.unit)
      if (up || observed) wrong.push(`${relative(ROOT, file)} -> ${relative(ROOT, target)}`)
    }
  }
  return wrong
}

describe('the layers of src/', () => {
  it('places every folder of src/ in a layer', () => {
    const folders = readdirSync(join(ROOT, 'src')).map((n) => `src/${n}`)
    expect(folders.filter((f) => !placeOf(join(ROOT, f)))).toEqual([])
  })

  it('has no import from a lower layer to a higher one, and the engine imports none of its observers', () => {
    expect(upwardImports()).toEqual([])
  })

  it('ranks the edge above the systems, the systems above the engine, the engine above its drivers', () => {
    const layer = (path: string) => placeOf(join(ROOT, path))?.layer ?? -1
    expect(layer('src/commands/program.ts')).toBeLessThan(layer('src/recording/target-steps.ts'))
    expect(layer('src/recording/target-steps.ts')).toBeLessThan(layer('src/runs/engine.ts'))
    expect(layer('src/runs/engine.ts')).toBeLessThan(layer('src/drivers/ssh.ts'))
    expect(layer('src/drivers/ssh.ts')).toBeLessThan(layer('src/core/runner.ts'))
  })
})
