#!/usr/bin/env node
// The `svcops` entry. It runs the build in dist/ (made by `npm install`, scripts/build.ts) while every
// source file it was made from is unchanged, and the TypeScript sources through tsx otherwise (an
// edited checkout, or SVCOPS_FROM_SOURCE=1), so no build step is ever needed and none is ever stale.
// Users run it through bin/svcops, which adds the Node flags a command needs.
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
