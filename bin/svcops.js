#!/usr/bin/env node
// The `svcops` entry. It runs the build in dist/ (made by `npm install`, scripts/build.ts) while every
// source file it was made from is unchanged, and the TypeScript sources through tsx otherwise (an
// edited checkout, or SVCOPS_FROM_SOURCE=1), so no build step is ever needed and none is ever stale.
// Users run it through bin/svcops, which adds the Node flags a command needs.
import { createRequire } from 'node:module'
import process from 'node:process'
import { fileURLToPath, URL } from 'node:url'
import { currentBuild, loadBuild } from './build-state.js'

const build = process.env.SVCOPS_FROM_SOURCE ? undefined : currentBuild(new URL('../', import.meta.url))
if (build) {
  // SVCOPS_DEBUG: through Node's own loader, which maps stack traces to the sources (no code cache).
  const debug = process.env.SVCOPS_DEBUG && process.setSourceMapsEnabled(true) === undefined
  const bundle = debug ? createRequire(import.meta.url)(fileURLToPath(build.entry)) : loadBuild(build).exports
  await bundle.run()
} else {
  const { register } = await import('tsx/esm/api')
  register()
  const { run } = await import('../src/cli.ts')
  await run()
}
