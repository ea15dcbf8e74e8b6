// Writes dist/cli.cjs.cache, V8's code cache of the bundle, after a training run: the bundle is loaded
// and a few read-only commands run in this process (help of every command, a scan of a small C++
// tree, a release plan), so the cache holds the functions a start of the CLI compiles, not only the
// bundle's top level (a cache of the top level alone made starts slower, measured). Run by
// scripts/build.ts after each build, in a process of its own; its output is not shown.
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import process from 'node:process'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, URL } from 'node:url'
import { currentBuild, loadBuild } from '../bin/build-state.cjs'

const build = currentBuild(fileURLToPath(new URL('..', import.meta.url)))
if (!build) throw new Error('dist/ does not hold a current build; run `npm run build`.')
const { exports: cli, script } = loadBuild(build, { useCache: false })

const tree = mkdtempSync(join(tmpdir(), 'svcops-train-'))
const writes = [process.stdout.write, process.stderr.write]
try {
  writeFileSync(
    join(tree, 'render.cpp'),
    '// AlignedData in a comment\nvoid f(AlignedFrame& f) {\n  auto t = f.mPTS; // "mPTS"\n  std::shared_ptr<MediaReceiver> r;\n  r->start(settings);\n}\n',
  )
  // Commands print; the cache is what counts here.
  process.stdout.write = process.stderr.write = () => true
  for (const argv of [
    ['--help'],
    ['scan', 'sdk', tree, '--from', '1.0.0', '--to', '7.0.0'],
    ['--json', 'scan', 'sdk', tree, '--from', '1.0.0', '--to', '7.0.0'],
    ['plan', 'live', '--from', '1.0.0', '--to', '7.0.0'],
    ['psk', 'check', '--help'],
  ]) {
    await cli.main(argv)
  }
} finally {
  ;[process.stdout.write, process.stderr.write] = writes
  rmSync(tree, { recursive: true, force: true })
}
const cache = build.cache
writeFileSync(`${cache}.tmp`, script.createCachedData())
renameSync(`${cache}.tmp`, cache)
