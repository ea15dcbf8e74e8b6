#!/usr/bin/env node
// The `svcops` entry. It runs the build in dist/ (made by `npm install`, scripts/build.ts) while every
// source file it was made from is unchanged, and the TypeScript sources through tsx otherwise (an
// edited checkout, or SVCOPS_FROM_SOURCE=1), so no build step is ever needed and none is ever stale.
// Users run it through bin/svcops, which adds the Node flags a command needs. CommonJS: an ES module
// entry costs every start ~15 ms more (the ES module loader is not needed to run the build).
'use strict'
const process = require('node:process')
const { join } = require('node:path')
const { currentBuild, loadBuild } = require('./build-state.cjs')

const build = process.env.SVCOPS_FROM_SOURCE ? undefined : currentBuild(join(__dirname, '..'))
if (build && process.env.SVCOPS_DEBUG) {
  // Through Node's own loader, which maps stack traces to the sources (no code cache).
  process.setSourceMapsEnabled(true)
  void require(build.entry).run()
} else if (build) {
  void loadBuild(build).exports.run()
} else {
  void import('tsx/esm/api')
    .then(({ register }) => {
      register()
      return import('../src/cli.ts')
    })
    .then(({ run }) => run())
}
