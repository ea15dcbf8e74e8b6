/**
 * How the recording service's steps judge what a platform read — a start that will not come up, a
 * service that does not run or logs errors, a version record that disagrees with what runs — the
 * same on hosts and on Kubernetes: one verdict, whatever the platform (recording-platform.ts).
 */
import { findLogErrors, lastTelling } from '../drivers/services.ts'
import { HostFailure } from '../runs/engine.ts'
import type { TargetStatus, VersionRecord } from './recording-platform.ts'

/** A target and how sentences name its service ("svc-recording on rec-1", "the Deployment svc-recording"). */
export interface Judged {
  name: string
  label: string
}

/**
 * While waiting for a start: how many reads in a row found the service neither running nor on its
 * way up (two mean it stopped), or whether it gave up (FATAL, CrashLoopBackOff) — a crash, not a
 * slow start. Returns the new count, or `stopped` when waiting is pointless. A service the service
 * manager is about to start again (`restarting`) crashed: on the way up that fails the start at
 * once; on the way back (`rollingBack`) the previous release is given its next start until it gives
 * up or the health wait ends, since a rollback that fails at once leaves nothing running.
 */
export function judgeStarting(status: TargetStatus, notRunning: number, rollingBack = false): { notRunning: number; stopped: boolean } {
  const restarting = status.restarting === true
  const count = status.running || status.starting || (restarting && rollingBack) ? 0 : notRunning + 1
  return { notRunning: count, stopped: status.gaveUp || (restarting && !rollingBack) || count >= 2 }
}

/** The failure of a start that stopped running, with the last error line it logged (or its last line). */
export function stoppedAfterStart(t: Judged, status: TargetStatus, lines: string[]): HostFailure {
  const last = lastTelling(lines) ?? 'no log lines'
  return new HostFailure(t.name, 'wait-healthy', `${t.label} stopped running after the start (${status.status}); last log line: ${last}`)
}

/** The failure of a start that did not answer its health check in time. */
export function notHealthyInTime(t: Judged, timeoutMs: number, lastError: string): HostFailure {
  const seconds = Math.round(timeoutMs / 1000)
  return new HostFailure(t.name, 'wait-healthy', `${t.label} did not become healthy within ${seconds} s: ${lastError.replace(/\.$/, '')}.`)
}

/**
 * After a start: the service runs, logged no error line since, and the platform's record of the
 * version (the stack file on Kubernetes) holds what the target runs. Throws the first that fails;
 * returns what the journal keeps.
 */
export function judgeStarted(
  t: Judged,
  read: { status: TargetStatus; lines: string[]; errorPatterns: string[]; record: VersionRecord | undefined; running: string | undefined },
): Record<string, unknown> {
  const { status, lines, record, running } = read
  if (!status.running) throw new HostFailure(t.name, 'check-logs', `${t.label} is not running after the start: ${status.status}.`)
  const errors = findLogErrors(lines, read.errorPatterns)
  if (errors.length)
    throw new HostFailure(
      t.name,
      'check-logs',
      `The log of ${t.label} has ${errors.length} error line(s) since the start, first: ${errors[0]}`,
    )
  if (record && record.version !== (running ?? null))
    throw new HostFailure(
      t.name,
      'check-logs',
      `${capital(record.what)} ${record.file} holds ${record.key} = ${record.version ?? 'nothing'}, but ${t.name} runs ${running ?? 'no known version'}.`,
    )
  return {
    status: status.status,
    lastLines: lines.slice(-10),
    ...(record ? { stackFile: recordData(record, running) } : {}),
  }
}

/**
 * The fleet after the rollout: every target of the run on `target` but those whose failure was
 * tolerated, and the platform's record holding `target`. Throws naming what differs.
 */
export function judgeFleet(
  names: string[],
  versions: Record<string, string>,
  target: string,
  record: VersionRecord | undefined,
  tolerated: string[],
): void {
  const wrong = names.filter((n) => versions[n] !== target && !tolerated.includes(n))
  if (wrong.length)
    throw new HostFailure(
      wrong[0] ?? '?',
      'verify',
      `${wrong.map((n) => `${n} runs ${versions[n] ?? 'nothing'}`).join(', ')}; expected ${target}.`,
    )
  if (record && record.version !== target)
    throw new HostFailure(
      names[0] ?? '?',
      'verify',
      `${capital(record.what)} ${record.file} holds ${record.key} = ${record.version ?? 'nothing'}, not ${target}.`,
    )
}

/** The record as the journal keeps it (and the report shows it): the file, the key, its version, what runs. */
export function recordData(record: VersionRecord, running: string | undefined): Record<string, unknown> {
  return { file: record.file, key: record.key, version: record.version, deployment: running ?? null }
}

function capital(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1)
}
