/**
 * zx, configured once for svcops: the `$` playbooks and site steps run their local commands with.
 *
 * Why it is configured, measured in bench/zx/run.ts (docs/benchmarks.md): zx 8 runs every command
 * as `bash -c 'set -euo pipefail;CMD'` with its stdin on a pipe, and Node's pipes are socket pairs.
 * Bash takes a socket on stdin for a remote shell started by rshd or sshd and, when SHLVL says it is
 * a top-level shell (the reduced environment svcops gives children has no SHLVL), sources
 * /etc/bash.bashrc and ~/.bashrc before the command: the operator's shell set-up (pyenv, nvm, conda
 * ...) ran before every command, hundreds of milliseconds to seconds each. Started here with
 * `--norc --noprofile`, bash reads no startup file, and `$` costs what a spawn of bash costs.
 *
 * The rest is set for what svcops expects of a command: children get the reduced environment
 * (`childEnvironment`: no credential svcops read reaches them unless passed in `env`), a non-zero
 * exit does not throw (the caller decides), and zx prints nothing by itself (quiet, not verbose).
 * Whatever zx does log — with `verbose`, or a playbook that turns it on — passes the one redaction
 * layer first, so no secret reaches a terminal or a CI log through zx.
 */
import { spawn, type SpawnOptions } from 'node:child_process'
import { $ as zx, log as zxLog, type LogEntry, type Options } from 'zx/core'
import { redact } from './redact.ts'
import { childEnvironment } from './runner.ts'

/** zx's own log line, redacted: the command line and any output it shows pass `redact`. */
export function redactedLog(entry: LogEntry): void {
  if (!entry.verbose) return
  const redacted: LogEntry =
    entry.kind === 'cmd'
      ? { ...entry, cmd: redact(entry.cmd) }
      : entry.kind === 'stdout' || entry.kind === 'stderr'
        ? { ...entry, data: Buffer.from(redact(entry.data.toString('utf8'))) }
        : entry
  zxLog(redacted)
}

/**
 * zx's spawn, with bash told to read no startup file: zx hands Node the command and `shell: <bash>`,
 * which Node runs as `<bash> -c CMD`; this runs `<bash> --norc --noprofile -c CMD` instead.
 */
export const spawnWithoutStartupFiles = ((command: string, args: readonly string[], options: SpawnOptions) => {
  const { shell, ...rest } = options
  if (typeof shell !== 'string') return spawn(command, args, options)
  return spawn(shell, ['--norc', '--noprofile', '-c', [command, ...args].join(' ')], rest)
}) as Options['spawn']

/** What the svcops `$` is made of (bench/zx/run.ts measures it against zx's defaults). */
export const shellOptions: Partial<Options> = {
  spawn: spawnWithoutStartupFiles,
  env: childEnvironment(),
  quiet: true,
  verbose: false,
  nothrow: true,
  log: redactedLog,
}

/** The `$` svcops runs local commands with: never throws on a non-zero exit (the caller decides), never prints. */
export const $ = zx(shellOptions)
