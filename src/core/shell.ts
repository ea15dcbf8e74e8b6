/**
 * zx, configured once for svcops: every local command goes through this `$` (the runner's local
 * transport, the playbooks' own local steps). zx prints nothing by itself (quiet, not verbose): the
 * runner emits one `command` event per command instead. Whatever zx does log — with `--verbose`, or a
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
