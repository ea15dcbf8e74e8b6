/**
 * The build in dist/ (scripts/build.ts, run by `npm install`) is what `svcops` starts from, but only
 * while it matches every source it was made from: an edited checkout runs its sources through tsx.
 * Tested on a copy of the project, so the real checkout's build is never touched.
 */
import { spawnSync } from 'node:child_process'
import { appendFileSync, cpSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ROOT } from '../support/cli.ts'

let copy: string

function svcopsIn(dir: string, args: string[], env: Record<string, string> = {}): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [join(dir, 'bin/svcops.cjs'), ...args], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, ...env },
  })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr }
}

/** Loads the copy's build as bin/svcops.cjs does, in a child process (here it would run in the test's). */
function loadInChild(): { entry: string; cacheRejected: boolean; main: string } {
  const state = pathToFileURL(join(copy, 'bin/build-state.cjs')).href
  const code = `import { currentBuild, loadBuild } from ${JSON.stringify(state)}
const build = currentBuild(${JSON.stringify(copy)})
const loaded = loadBuild(build)
console.log(JSON.stringify({ entry: build.entry, cacheRejected: loaded.cacheRejected, main: typeof loaded.exports.main }))`
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8' })
  expect(r.status, r.stderr).toBe(0)
  return JSON.parse(r.stdout) as { entry: string; cacheRejected: boolean; main: string }
}

describe('the svcops build (dist/)', () => {
  beforeAll(() => {
    copy = mkdtempSync(join(tmpdir(), 'svcops-build-'))
    for (const part of ['package.json', 'tsconfig.json', 'bin', 'src', 'playbooks', 'scripts'])
      cpSync(join(ROOT, part), join(copy, part), { recursive: true, preserveTimestamps: true })
    symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'))
    const built = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/build.ts'], { cwd: copy, encoding: 'utf8' })
    expect(built.status, built.stderr).toBe(0)
  }, 120_000)

  afterAll(() => {
    if (copy) rmSync(copy, { recursive: true, force: true })
  })

  it('writes a code cache that V8 accepts for the bundle', () => {
    expect(statSync(join(copy, 'dist/cli.cjs.cache')).size).toBeGreaterThan(100_000)
    expect(loadInChild()).toEqual({ entry: join(copy, 'dist/cli.cjs'), cacheRejected: false, main: 'function' })
    // Without its cache (a training run that failed) the bundle is compiled and runs all the same.
    const cache = readFileSync(join(copy, 'dist/cli.cjs.cache'))
    rmSync(join(copy, 'dist/cli.cjs.cache'))
    try {
      expect(loadInChild()).toMatchObject({ cacheRejected: false, main: 'function' })
      const run = svcopsIn(copy, ['--version'])
      expect(run.code, run.stderr).toBe(0)
      expect(run.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/)
    } finally {
      writeFileSync(join(copy, 'dist/cli.cjs.cache'), cache)
    }
  })

  it('records every bundled source with its size and time, and runs commands from the bundle', () => {
    const manifest = JSON.parse(readFileSync(join(copy, 'dist/sources.json'), 'utf8')) as { entry: string; inputs: Record<string, unknown> }
    expect(Object.keys(manifest.inputs)).toEqual(
      expect.arrayContaining(['package.json', 'src/cli.ts', 'src/commands/program.ts', 'src/releases/sdk-scan.ts']),
    )
    // A mark only the bundle prints: it is not a source, so the build still counts as current.
    appendFileSync(join(copy, 'dist', manifest.entry), "\nprocess.stderr.write('ran from dist\\n')\n")
    const run = svcopsIn(copy, ['psk', 'check', '--help'])
    expect(run.code).toBe(0)
    expect(run.stdout).toContain('Usage: svcops psk check')
    expect(run.stderr).toContain('ran from dist')
    // The cache no longer fits the changed bundle: V8 refuses it and the bundle is compiled instead.
    expect(loadInChild()).toMatchObject({ cacheRejected: true, main: 'function' })
  })

  it('runs the sources instead once a source file changed, or with SVCOPS_FROM_SOURCE=1', () => {
    expect(svcopsIn(copy, ['--version'], { SVCOPS_FROM_SOURCE: '1' }).stderr).not.toContain('ran from dist')
    const cli = join(copy, 'src/cli.ts')
    writeFileSync(cli, readFileSync(cli, 'utf8') + "\nprocess.stderr.write('ran from src\\n')\n")
    const run = svcopsIn(copy, ['--version'])
    expect(run.code).toBe(0)
    expect(run.stderr).toContain('ran from src')
    expect(run.stderr).not.toContain('ran from dist')
  })
})
