#!/usr/bin/env -S node --max-semi-space-size=1
// The `svcops` entry. It runs the build in dist/ (made by `npm install`, scripts/build.ts) while every
// source file it was made from is unchanged, and the TypeScript sources through tsx otherwise (an
// edited checkout, or SVCOPS_FROM_SOURCE=1), so no build step is ever needed and none is ever stale.
// A 1 MB young generation keeps streaming backups and restores in bounded memory (peak RSS under
// 150 MB for a backup, docs/benchmarks.md); a CLI loses nothing to the extra minor collections.
import { readFileSync, statSync } from 'node:fs'
import process from 'node:process'
import { URL } from 'node:url'

const root = new URL('../', import.meta.url)

/** The build's entry when dist/sources.json matches every source's size and modification time. */
function currentBuild() {
  if (process.env.SVCOPS_FROM_SOURCE) return undefined
  let manifest
  try {
    manifest = JSON.parse(readFileSync(new URL('dist/sources.json', root), 'utf8'))
  } catch {
    return undefined // no build (a checkout without `npm install`): run the sources
  }
  for (const [file, seen] of Object.entries(manifest.inputs)) {
    const now = statSync(new URL(file, root), { throwIfNoEntry: false })
    if (!now || now.size !== seen.size || now.mtimeMs !== seen.mtimeMs) return undefined
  }
  return new URL(`dist/${manifest.entry}`, root)
}

const build = currentBuild()
if (build) {
  if (process.env.SVCOPS_DEBUG) process.setSourceMapsEnabled(true)
  await import(build.href)
} else {
  const { register } = await import('tsx/esm/api')
  register()
  await import('../src/cli.ts')
}
