// The build in dist/ and how it is loaded. dist/sources.json (written by scripts/build.ts) lists every
// file the bundle was made from with its size and modification time; the bundle is one CommonJS file,
// compiled here with V8's code cache (dist/cli.cjs.cache, made at build time by
// scripts/train-code-cache.js), so a start neither parses nor compiles what the cache holds.
// Plain CommonJS with no imports of the project, so bin/svcops.cjs can use it before anything loads.
'use strict'
const { readFileSync, statSync } = require('node:fs')
const { createRequire } = require('node:module')
const { dirname, join } = require('node:path')
const vm = require('node:vm')

/**
 * The build when every source matches its record, else undefined. `root` is the project folder.
 * `entry` is the bundle's path, `cache` its code cache's (which may be missing).
 */
function currentBuild(root) {
  let manifest
  try {
    manifest = JSON.parse(readFileSync(join(root, 'dist/sources.json'), 'utf8'))
  } catch {
    return undefined // no build (a checkout without `npm install`)
  }
  // Joined by hand: path.join would normalize each of the ~120 paths again, at every start.
  const base = root.endsWith('/') ? root : `${root}/`
  for (const [file, seen] of Object.entries(manifest.inputs)) {
    const now = statSync(base + file, { throwIfNoEntry: false })
    if (!now || now.size !== seen.size || now.mtimeMs !== seen.mtimeMs) return undefined
  }
  const entry = join(root, 'dist', manifest.entry)
  return { entry, cache: `${entry}.cache` }
}

/**
 * Loads the bundle of `build` and returns its exports and compiled script. The code cache is used
 * when V8 accepts it: V8 refuses a cache made by another V8 version, with other V8 flags or for another
 * source, and then the bundle is simply compiled. `useCache: false` compiles without it (the training run).
 */
function loadBuild(build, { useCache = true } = {}) {
  const filename = build.entry
  let cachedData
  if (useCache) {
    try {
      cachedData = readFileSync(build.cache)
    } catch {
      cachedData = undefined // built without a cache (training failed): compile
    }
  }
  // The same wrapper as Node's own CommonJS loader. The bundle holds no import() (scripts/build.ts
  // turns them into require()), which a vm.Script could not resolve.
  const script = new vm.Script(`(function (exports, require, module, __filename, __dirname) {${readFileSync(filename, 'utf8')}\n})`, {
    filename,
    cachedData,
  })
  const module = { exports: {} }
  script.runInThisContext()(module.exports, createRequire(filename), module, filename, dirname(filename))
  return { exports: module.exports, script, cacheRejected: cachedData !== undefined && script.cachedDataRejected === true }
}

module.exports = { currentBuild, loadBuild }
