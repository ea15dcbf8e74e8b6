/**
 * Processes of this machine, read from /proc: whether one is alive, when it started (with the pid,
 * what names it: pids are reused), its descendants, and how a group of them is stopped. A zombie
 * counts as dead everywhere: a daemon reparented to PID 1 in a container may never be reaped, and a
 * lock or a lab entry held by one is free.
 */
import { readdirSync, readFileSync } from 'node:fs'

/** The fields of /proc/<pid>/stat after the command name (which may hold spaces and parentheses), or undefined when gone. */
function statFields(pid: number | string): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  } catch {
    // No such process (or it exited while we read it).
    return undefined
  }
}

/** True while a process with this pid runs; a zombie does not count. */
export function isAlive(pid: number): boolean {
  const fields = statFields(pid)
  return fields !== undefined && fields[0] !== 'Z'
}

/** Start time of a live process in clock ticks since boot; undefined when it is gone or a zombie. */
export function processStartTicks(pid: number): string | undefined {
  const fields = statFields(pid)
  return fields === undefined || fields[0] === 'Z' ? undefined : fields[19]
}

/** Pids of the children (and their children) of `pid`. */
export function descendantsOf(pid: number): number[] {
  const children = new Map<number, number[]>()
  for (const entry of procEntries()) {
    const ppid = Number(statFields(entry)?.[1])
    // A process that exited while the table was read is no one's descendant any more.
    if (!ppid) continue
    children.set(ppid, [...(children.get(ppid) ?? []), entry])
  }
  const out: number[] = []
  const queue = [pid]
  while (queue.length > 0) {
    for (const child of children.get(queue.shift() ?? -1) ?? []) {
      out.push(child)
      queue.push(child)
    }
  }
  return out
}

/** Pids of every process of this machine (none without /proc). */
export function procEntries(): number[] {
  try {
    return readdirSync('/proc')
      .filter((n) => /^\d+$/.test(n))
      .map(Number)
  } catch {
    // No /proc (not Linux): nothing can be listed.
    return []
  }
}

/** How long a SIGKILLed process may take to be gone (the kernel ends it when next scheduled; a busy machine delays that). */
const KILLED_GONE_MS = 2000

/**
 * Sends SIGTERM to the given pids, waits up to `graceMs`, then SIGKILLs what is left and waits
 * (KILLED_GONE_MS at most) until it is gone: a caller removes the processes' files next.
 */
export async function terminatePids(pids: number[], graceMs = 3000): Promise<void> {
  for (const pid of pids) signal(pid, 'SIGTERM')
  await waitGone(pids, graceMs)
  const left = pids.filter(isAlive)
  for (const pid of left) signal(pid, 'SIGKILL')
  await waitGone(left, KILLED_GONE_MS)
}

async function waitGone(pids: number[], ms: number): Promise<void> {
  const deadline = Date.now() + ms
  while (pids.some(isAlive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25))
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig)
  } catch {
    // Already gone: that is what we wanted.
    return
  }
}
