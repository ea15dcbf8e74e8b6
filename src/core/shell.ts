/**
 * zx, configured once for svcops: the `$` a playbook runs its own local commands with (a playbook
 * started as a script runs its CLI command through it). zx prints nothing by itself (quiet, not
 * verbose). The runner's local transport spawns directly instead (see runner.ts for why). Whatever zx does log — with `--verbose`, or a
 * playbook that turns it on — passes the one redaction layer first, so no secret reaches a terminal
 * or a CI log through zx.
 */
import { $ as zx, log as zxLog, type LogEntry } from 'zx'
import { redact } from './redact.ts'

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

/** The `$` svcops runs local commands with: never throws on a non-zero exit (the runner decides), never prints. */
export const $ = zx({ quiet: true, verbose: false, nothrow: true, log: redactedLog })
