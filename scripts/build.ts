/**
 * Builds the CLI into dist/ so that `svcops` starts in tens of milliseconds instead of compiling
 * TypeScript through tsx on every run (it matters for `scan sdk` in CI and for schedulers calling
 * it often). Runs at `npm install` (the `prepare` script) and by hand with `npm run build`.
 *
 * One ES module bundle of src/cli.ts, split at every dynamic import so a command loads only what it
 * uses; npm packages stay external (resolved from node_modules at run time). dist/sources.json lists
 * every source file the bundle was made from with its size and modification time: bin/svcops.js
 * runs the build only while all of them are unchanged, and the sources through tsx otherwise, so an
 * edited checkout never runs stale code.
 */
import { build } from 'esbuild'
import { mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { PROJECT_ROOT } from '../src/paths.ts'

const started = performance.now()
const out = join(PROJECT_ROOT, 'dist')
// Built beside dist/ and swapped in by rename: a CLI starting meanwhile sees the old build or the new one, never half of one.
const staging = mkdtempSync(join(PROJECT_ROOT, '.dist-'))
try {
  const result = await build({
    absWorkingDir: PROJECT_ROOT,
    entryPoints: { cli: 'src/cli.ts' },
    outdir: staging,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // commander is in every start, so it is bundled (one file to load instead of six CommonJS modules);
    // everything else loads from node_modules when a command needs it.
    external: Object.keys((JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies).filter((d) => d !== 'commander'),
    banner: { js: "import { createRequire as __svcopsRequire } from 'node:module'; const require = __svcopsRequire(import.meta.url);" },
    outExtension: { '.js': '.mjs' },
    chunkNames: 'chunks/[name]-[hash]',
    sourcemap: 'linked',
    metafile: true,
    legalComments: 'none',
    logLevel: 'warning',
  })
  const inputs: Record<string, { size: number; mtimeMs: number }> = {}
  for (const file of [...Object.keys(result.metafile.inputs), 'package.json'].sort()) {
    const stat = statSync(join(PROJECT_ROOT, file))
    inputs[file] = { size: stat.size, mtimeMs: stat.mtimeMs }
  }
  writeFileSync(join(staging, 'sources.json'), JSON.stringify({ entry: 'cli.mjs', inputs }, null, 1) + '\n')
  rmSync(out, { recursive: true, force: true })
  renameSync(staging, out)
  process.stderr.write(`svcops: built dist/ from ${Object.keys(inputs).length} source files in ${Math.round(performance.now() - started)} ms.\n`)
} finally {
  rmSync(staging, { recursive: true, force: true })
}
