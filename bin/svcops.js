#!/usr/bin/env -S node --max-semi-space-size=1
// The `svcops` entry. It runs the build in dist/ (made by `npm install`, scripts/build.ts) while every
// source file it was made from is unchanged, and the TypeScript sources through tsx otherwise (an
// edited checkout, or SVCOPS_FROM_SOURCE=1), so no build step is ever needed and none is ever stale.
// A 1 MB young generation keeps streaming backups and restores in bounded memory (peak RSS under
// 150 MB for a backup, docs/benchmarks.md); a CLI loses nothing to the extra minor collections.
import process from 'node:process'
import { URL } from 'node:url'
import { currentBuild } from './build-state.js'

const build = process.env.SVCOPS_FROM_SOURCE ? undefined : currentBuild(new URL('../', import.meta.url))
if (build) {
  if (process.env.SVCOPS_DEBUG) process.setSourceMapsEnabled(true)
  await import(build.href)
} else {
  const { register } = await import('tsx/esm/api')
  register()
  await import('../src/cli.ts')
}
