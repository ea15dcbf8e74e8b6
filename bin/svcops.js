#!/usr/bin/env node
// The `svcops` entry: runs the TypeScript CLI through tsx so users need no build step.
import { register } from 'tsx/esm/api'

register()
await import('../src/cli.ts')
