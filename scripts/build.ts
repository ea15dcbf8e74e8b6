/**
 * Builds the CLI into dist/ so that `svcops` starts in tens of milliseconds instead of compiling
 * TypeScript through tsx on every run (it matters for `scan sdk` in CI and for schedulers calling
 * it often). Runs at `npm install` (the `prepare` script) and by hand with `npm run build`.
 *
 * One CommonJS bundle of src/cli.ts, dist/cli.cjs: commands still load lazily (each command group's
 * module is initialised on first use), npm packages stay external (loaded from node_modules when a
 * command needs them). CommonJS because V8's code cache can be given to it (bin/build-state.cjs); ES
 * modules have no such door in Node 20. Then a training run (scripts/train-code-cache.js) writes
 * dist/cli.cjs.cache. dist/sources.json lists every source file the bundle was made from with its
 * size and modification time: bin/svcops.cjs runs the build only while all of them are unchanged, and
 * the sources through tsx otherwise, so an edited checkout never runs stale code.
 */
import { build, type Plugin } from 'esbuild'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { PROJECT_ROOT } from '../src/core/paths.ts'

/** Packages bundled into dist/cli.cjs instead of loaded from node_modules. */
const BUNDLED_PACKAGES = ['commander', 'jose']

/**
 * commander requires child_process when it loads, for executable subcommands, which svcops does not
 * have; loading it (with net, dgram and streams) costs every start ~4 ms. The require is deferred to
 * the first spawn. Should commander change that line, the build keeps it as it is and says so.
 */
const lazyChildProcess: Plugin = {
  name: 'commander-lazy-child-process',
  setup(b) {
    b.onLoad({ filter: /[\\/]commander[\\/]lib[\\/]command\.js$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8')
      const eager = "const childProcess = require('node:child_process');"
      if (!text.includes(eager)) {
        process.stderr.write(`svcops: ${args.path} no longer holds \`${eager}\`; child_process stays loaded at start.\n`)
        return { contents: text, loader: 'js' }
      }
      return {
        contents: text.replace(eager, "const childProcess = { spawn: (...a) => require('node:child_process').spawn(...a) };"),
        loader: 'js',
      }
    })
  },
}

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
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    // commander is in every start, so it is bundled; jose is an ES module only (require() of it fails
    // in Node 20), so it is bundled too. Everything else loads from node_modules when a command needs it.
    external: Object.keys(
      (JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies,
    ).filter((d) => !BUNDLED_PACKAGES.includes(d)),
    // The sources are ES modules: import.meta.url becomes the bundle's own URL.
    define: { 'import.meta.url': '__svcopsUrl' },
    // import() of a package becomes require(): the bundle runs as a vm.Script, whose import() would
    // need Node's experimental main-context loader (and loses it in code-cached functions).
    supported: { 'dynamic-import': false },
    banner: { js: "const __svcopsUrl = require('node:url').pathToFileURL(__filename).href;" },
    outExtension: { '.js': '.cjs' },
    sourcemap: 'linked',
    plugins: [lazyChildProcess],
    metafile: true,
    legalComments: 'none',
    logLevel: 'warning',
  })
  const inputs: Record<string, { size: number; mtimeMs: number }> = {}
  for (const file of [...Object.keys(result.metafile.inputs), 'package.json'].sort()) {
    const stat = statSync(join(PROJECT_ROOT, file))
    inputs[file] = { size: stat.size, mtimeMs: stat.mtimeMs }
  }
  writeFileSync(join(staging, 'sources.json'), JSON.stringify({ entry: 'cli.cjs', inputs }, null, 1) + '\n')
  rmSync(out, { recursive: true, force: true })
  renameSync(staging, out)
  // The training run loads the bundle where it now lies: the cache is made for that file.
  const trained = spawnSync(process.execPath, [join(PROJECT_ROOT, 'scripts/train-code-cache.js')], { encoding: 'utf8' })
  const cache = trained.status === 0 ? `, code cache ${Math.round(statSync(join(out, 'cli.cjs.cache')).size / 1024)} KiB` : ''
  if (trained.status !== 0)
    process.stderr.write(
      `svcops: no code cache for dist/cli.cjs (the CLI works, and starts ~20 ms slower): ${trained.stderr.trim().split('\n').at(-1) ?? 'no message'}\n`,
    )
  process.stderr.write(
    `svcops: built dist/ from ${Object.keys(inputs).length} source files in ${Math.round(performance.now() - started)} ms${cache}.\n`,
  )
} finally {
  rmSync(staging, { recursive: true, force: true })
}
