/**
 * The lease of a host lock (the live system's environment lock, a file on its host): its holder
 * renews the file's time while it runs, so another machine can tell a live holder from one that went
 * away, and — since a holder that slept past its lease may find the lock taken over — it renews,
 * releases and keeps acting only while the file still holds its own line (fencing, as etcd's leases
 * and Chubby's sequencers do): the line names run, holder, pid, when it was taken and a token no
 * other taker writes.
 */
import { randomBytes } from 'node:crypto'
import { isAlive } from '../core/process.ts'
import { events } from '../core/events.ts'
import { runCommand, type Transport } from '../core/runner.ts'
import { heldHere } from './run-presence.ts'

/** How long a host lock's lease lasts without renewal: past it, a holder on another machine counts as gone. */
export const HOST_LEASE_SECONDS = 60

/** How often a holder renews its lease: well inside HOST_LEASE_SECONDS, so a busy minute does not lose it. */
const RENEW_EVERY_MS = 10_000

/** Who a lease line names: the fields a lock file holds, in order. */
interface LeaseFields {
  runId: string
  holder: string
  pid: number
  since: string
}

/**
 * The line a holder writes into a leased lock file: `runId holder pid since takenAt token`. The
 * take-over time and a random token make it this taking's own, so a holder whose run was taken over
 * under the same run id (a resume elsewhere) never mistakes the new line for its own.
 */
export function leaseLine(holder: LeaseFields): string {
  return `${holder.runId} ${holder.holder} ${holder.pid} ${holder.since} ${new Date().toISOString()} ${randomBytes(6).toString('hex')}`
}

/**
 * Whether the holder named in a host lock (`who` = user@machine, `pid`) is still there. On this
 * machine its process says so (a dead or zombie pid is gone; a live one holds, whatever its lease).
 * Elsewhere only the lease can prove it gone: the lock file not renewed for HOST_LEASE_SECONDS,
 * measured by the host's own clock (no skew between machines).
 */
export async function holderPresence(
  transport: Transport,
  path: string,
  who: string,
  pid: number,
): Promise<{ gone: boolean; why: string }> {
  if (heldHere({ holder: who }))
    return isAlive(pid)
      ? { gone: false, why: `its process ${pid} runs on this machine` }
      : { gone: true, why: `its process ${pid} is gone` }
  const age = await runCommand(transport, ['sh', '-c', 'echo $(( $(date +%s) - $(stat -c %Y "$1") ))', 'sh', path], { check: false })
  const seconds = Number(age.stdout.trim())
  if (age.code !== 0 || age.stdout.trim() === '' || !Number.isFinite(seconds))
    return { gone: false, why: `the age of its lease could not be read (${age.stderr.trim() || `exit ${String(age.code)}`})` }
  return seconds > HOST_LEASE_SECONDS
    ? { gone: true, why: `its lease was last renewed ${seconds} s ago (it lasts ${HOST_LEASE_SECONDS} s)` }
    : { gone: false, why: `its lease was renewed ${seconds} s ago, within ${HOST_LEASE_SECONDS} s` }
}

/** A `sh -c` script that runs `command` on lock file `$1` only while its first line is `$2` (the holder's own). */
function ifOurs(command: string): string {
  return `if [ -f "$1" ] && [ "$(head -n 1 "$1")" = "$2" ]; then ${command}; else exit 3; fi`
}

/** Renews the lease of lock file `path` once, if it still holds `line`; false when it holds another (or none). */
export async function renewHostLeaseOnce(transport: Transport, path: string, line: string): Promise<boolean> {
  // Not through runCommand: a renewal every few seconds is no event of the run.
  const result = await transport.exec(['sh', '-c', ifOurs('touch -c "$1"'), 'sh', path, line], { check: false })
  return result.code === 0
}

/**
 * Keeps the lease of the host lock `path` whose holder wrote `line` (`leaseLine`): renewed every few
 * seconds while the file still holds that line — never a line another holder wrote after taking it
 * over. The timer does not keep the process alive.
 */
export function renewHostLease(transport: Transport, path: string, line: string): { stop(): void } {
  let warned = false
  const renew = () => {
    void renewHostLeaseOnce(transport, path, line)
      .then((renewed) => {
        if (renewed || warned) return
        warned = true
        events.warn(
          `The host lock ${path} on ${transport.host} no longer holds this run's line: its lease is not renewed, and the run stops at its next step.`,
          transport.host,
        )
      })
      .catch(() => undefined) // the transport closed under it: the run is ending
  }
  const timer = setInterval(renew, RENEW_EVERY_MS)
  timer.unref()
  return { stop: () => clearInterval(timer) }
}

/** Removes the leased host lock `path` only while it holds `line`: a lock taken over is the new holder's. */
export async function releaseHostLease(transport: Transport, path: string, line: string): Promise<void> {
  await runCommand(transport, ['sh', '-c', ifOurs('rm -f "$1"'), 'sh', path, line], { check: false })
}

/**
 * Undefined while lock file `path` still holds `line`; otherwise the sentence that stops the run:
 * who took the lock of `what` over and when, or that it is gone. A file that cannot be read (the
 * host unreachable) proves nothing: the run's own next command meets the same failure.
 */
export async function hostLeaseLost(transport: Transport, path: string, line: string, what: string): Promise<string | undefined> {
  const read = await transport.exec(['sh', '-c', '[ -e "$1" ] || exit 3; head -n 1 "$1"', 'sh', path], { check: false })
  if (read.code === 3) return `The lock of ${what} (${path} on ${transport.host}) was removed by another holder; this run stops here.`
  const current = read.stdout.trim()
  if (read.code !== 0 || current === line) return undefined
  const [, who = '?', pid = '?', , takenAt] = current.split(' ')
  return `The lock of ${what} was taken over by ${who} (pid ${pid}) at ${takenAt ?? 'an unknown time'}; this run stops here.`
}
