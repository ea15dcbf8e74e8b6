/**
 * "The service does not start (check logs, ...)", as the host's service manager and its disks see
 * it: the service is not failing its start (systemd: `failed`, its start limit hit, or exited and
 * about to be restarted by `Restart=`; supervisor: FATAL, EXITED, BACKOFF), and the filesystems
 * the service and the package manager write to are not full (its log directory, the package
 * caches, dpkg's database).
 */
import { dirname } from 'node:path'
import { lastTelling } from '../../drivers/services.ts'
import { PACKAGE_CACHE } from '../../drivers/packages.ts'
import { fine, skipped } from '../../doctor/outcome.ts'
import { startErrors } from './startup.ts'
import type { Cause, HostView } from './cause-types.ts'

/** A service manager's states of a service that fails its start (drivers/services.ts's status lines). */
const FAILING = /\bfailed\b|auto-restart|\bFATAL\b|\bEXITED\b|\bBACKOFF\b/
/** The restarts `Restart=` made since the service was last started (systemd's NRestarts, as the status line says it). */
const RESTARTED = /restarted (\d+) times?/
/**
 * How long the doctor watches a service that was restarted: a unit of `Type=simple` counts as
 * running from its exec on, so a release that exits at every start shows mostly as `active
 * (running)`; its restart counter going up while watched is the crash loop.
 */
const WATCH_READS = 4
const WATCH_MS = 1000
/** Journal lines read for the evidence. */
const EVIDENCE_LINES = 20

const restartsOf = (status: string): number => Number(RESTARTED.exec(status)?.[1] ?? 0)

/** Whether the service fails its start now, and the sentence that says what shows it. */
async function watchStart(service: NonNullable<HostView['service']>): Promise<{ failing?: string; status: string }> {
  let { running, status } = await service.status()
  if (FAILING.test(status) && !running) return { failing: `its service manager shows it ${status}`, status }
  const before = restartsOf(status)
  // Not restarted since its start: it runs, or it was stopped (nothing says it failed).
  for (let i = 0; before > 0 && i < WATCH_READS; i++) {
    await new Promise((r) => setTimeout(r, WATCH_MS))
    ;({ running, status } = await service.status())
    if (FAILING.test(status) && !running) return { failing: `its service manager shows it ${status}`, status }
    if (restartsOf(status) > before) return { failing: `its service manager restarted it while the doctor watched (now ${status})`, status }
  }
  return { status }
}

export const serviceStart: Cause = {
  id: 'service-start',
  problem: 'problem-no-start',
  check:
    'the service manager does not show the service failing its start (failed, start limit hit, about to be restarted or restarted again while watched by Restart=, FATAL, EXITED)',
  beforeStop: false,
  async run(view) {
    const service = view.service
    if (!service) return skipped('the service and its driver are not known here (recording.service, recording.serviceDriver)')
    const { failing, status } = await watchStart(service)
    // One that a restart by Restart= brought back and that stays up crashed once: the run's status
    // check names that (restarted N times); the doctor looks for a service that does not start.
    if (!failing) return fine(`${service.name}: ${status}`)
    const lines = await service.logs(EVIDENCE_LINES)
    const last = lastTelling(lines)
    const startLimit = lines.some((l) => /Start request repeated too quickly|start-limit-hit/.test(l))
    const evidence = [
      `service manager: ${service.name} ${status}`,
      ...(startLimit ? ['journal: the start limit was hit (Start request repeated too quickly)'] : []),
      ...(last ? [`last log line: ${last}`] : []),
      ...startErrors(view),
    ]
    return fine(`${service.name}: ${status}`, [
      {
        severity: 'error',
        summary: `${service.name} fails its start: ${failing}${startLimit ? ', and systemd gave up (start limit hit)' : ''}.`,
        evidence,
        remedy: `Fix what its last log lines and the other findings name, then start it again (systemd: systemctl reset-failed ${service.name} and systemctl start ${service.name}); or go back to the release that ran: svcops rollback recording.`,
      },
    ])
  },
}

/** A filesystem is full below this many free KiB, or below FULL_PERCENT of its size. */
const FULL_KIB = 1024
const FULL_PERCENT = 1

export const diskSpace: Cause = {
  id: 'disk-space',
  problem: 'problem-no-start',
  check: "free space where the service writes its log and where packages are downloaded and installed (each folder's filesystem, df)",
  beforeStop: true,
  async run(view) {
    const folders = [
      { path: dirname(view.logPath), what: "the service's log directory" },
      { path: '/var/cache/apt/archives', what: "apt's package cache" },
      { path: PACKAGE_CACHE, what: "svcops' package cache" },
      { path: '/var/lib/dpkg', what: "dpkg's database" },
    ]
    const dfs = await view.shEach(
      'if [ -d "$1" ]; then df -Pk -- "$1" | tail -n 1; else echo absent; fi',
      folders.map((f) => [view.path(f.path)]),
    )
    const seen = new Set<string>()
    const checked: string[] = []
    const findings = []
    for (const [i, f] of folders.entries()) {
      const df = (dfs[i]?.stdout ?? '').trim()
      if (!df || df === 'absent') continue
      const [fs = '?', sizeKib = '0', , availKib = '0', , mount = '?'] = df.split(/\s+/)
      if (seen.has(`${fs} ${mount}`)) continue
      seen.add(`${fs} ${mount}`)
      const size = Number(sizeKib)
      const avail = Number(availKib)
      checked.push(`${f.path}: ${avail} KiB free of ${size} KiB`)
      if (avail < FULL_KIB || avail * 100 < size * FULL_PERCENT)
        findings.push({
          severity: 'error' as const,
          summary: `The filesystem of ${f.what} ${f.path} is full: ${avail} KiB free of ${size} KiB (mounted at ${mount}).`,
          evidence: [`df ${f.path}: ${df}`],
          remedy: `Free space on the filesystem mounted at ${mount} (apt-get clean empties apt's package cache; old logs can go) or grow it, then start the service.`,
        })
    }
    if (!checked.length) return skipped('none of the folders exists on the host')
    return fine(checked.join('; '), findings)
  },
}
