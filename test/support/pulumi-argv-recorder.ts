/**
 * An ARGV RECORDER named `pulumi`, put first on PATH by a test: it is not Pulumi and does nothing
 * Pulumi does. It appends the arguments it was started with, its working directory and the names
 * of its environment variables to a log, prints a canned answer for the subcommand (`version`,
 * `stack`, `preview`; empty for the others) and exits with a canned code. The tests use it only at
 * the CLI seam: to see the exact argv svcops starts, where, and with which variables.
 */
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface RecordedCall {
  argv: string[]
  cwd: string
  envNames: string[]
}

export interface ArgvRecorder {
  /** Put this first on PATH. */
  binDir: string
  /** Sets the answer (stdout) and exit code of a subcommand, and how long it takes (a test that kills svcops meanwhile). */
  answer(subcommand: 'version' | 'stack' | 'preview' | 'config' | 'up', stdout: string, code?: number, delayMs?: number): void
  calls(): RecordedCall[]
}

export function createPulumiArgvRecorder(): ArgvRecorder {
  const dir = mkdtempSync(join(tmpdir(), 'svcops-pulumi-recorder-'))
  const log = join(dir, 'calls.jsonl')
  writeFileSync(log, '')
  const script = join(dir, 'pulumi')
  writeFileSync(
    script,
    [
      `#!${process.execPath}`,
      "const fs = require('node:fs')",
      "const path = require('node:path')",
      'const argv = process.argv.slice(2)',
      `fs.appendFileSync(${JSON.stringify(log)}, JSON.stringify({ argv, cwd: process.cwd(), envNames: Object.keys(process.env).sort() }) + '\\n')`,
      `const answer = path.join(${JSON.stringify(dir)}, 'answer-' + argv[0])`,
      "if (fs.existsSync(answer + '.out')) process.stdout.write(fs.readFileSync(answer + '.out'))",
      "process.exitCode = fs.existsSync(answer + '.code') ? Number(fs.readFileSync(answer + '.code', 'utf8')) : 0",
      "if (fs.existsSync(answer + '.delay')) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Number(fs.readFileSync(answer + '.delay', 'utf8')))",
      '',
    ].join('\n'),
  )
  chmodSync(script, 0o755)
  return {
    binDir: dir,
    answer(subcommand, stdout, code = 0, delayMs = 0) {
      writeFileSync(join(dir, `answer-${subcommand}.out`), stdout)
      writeFileSync(join(dir, `answer-${subcommand}.code`), String(code))
      writeFileSync(join(dir, `answer-${subcommand}.delay`), String(delayMs))
    },
    calls: () =>
      readFileSync(log, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as RecordedCall),
  }
}
