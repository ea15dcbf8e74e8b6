#!/usr/bin/env -S node --max-semi-space-size=1
// The `svcops` entry: runs the TypeScript CLI through tsx so users need no build step.
// A 1 MB young generation keeps streaming backups and restores in bounded memory (peak RSS under
// 150 MB for a backup, docs/benchmarks.md); a CLI loses nothing to the extra minor collections.
import { register } from 'tsx/esm/api'

register()
await import('../src/cli.ts')
