/**
 * A host lock taken with `lease` (the live system's environment lock) is taken over only when its
 * holder is proven gone — its process dead on this machine, or its lease not renewed for
 * HOST_LEASE_SECONDS by a holder elsewhere — never because the run asking names it (a resume). On
 * this machine's files through the local transport, with the host's own `sh`, `stat` and `date`.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect, it } from 'vitest'
import { InterruptedError, LockedError } from '../../src/core/errors.ts'
import { local } from '../../src/core/runner.ts'
import { Run } from '../../src/runs/engine.ts'
import { HOST_LEASE_SECONDS, hostLeaseLost, releaseHostLease, renewHostLeaseOnce } from '../../src/runs/host-lease.ts'
import { Journal } from '../../src/runs/journal.ts'
import { acquireHostLock } from '../../src/runs/lock.ts'
import { newRunRecord } from '../../src/runs/run-record.ts'
import { defineStep } from '../../src/runs/step.ts'

const RUN = '20261202T010000Z-abc123'
const resumer = { runId: RUN, holder: `ops@${hostname()}`, pid: process.pid + 1_000_000, since: '2026-12-02T02:00:00.000Z' }

function lockFile(content: string, ageSeconds = 0): string {
  const path = join(mkdtempSync(join(tmpdir(), 'svcops-host-lock-')), 'live-upgrade.lock')
  writeFileSync(path, `${content}\n`)
  if (ageSeconds > 0) spawnSync('touch', ['-d', `@${Math.floor(Date.now() / 1000) - ageSeconds}`, path])
  return path
}

/** A pid that was a process of this machine and has ended (reaped). */
function deadPid(): number {
  const child = spawnSync('sh', ['-c', 'echo $$'], { encoding: 'utf8' })
  return Number(child.stdout.trim())
}

it('refuses a resume of the run while its holder process lives on this machine, naming it; takes it over once that process is gone', async () => {
  const alive = lockFile(`${RUN} ops@${hostname()} ${process.pid} 2026-12-02T01:00:00.000Z`)
  const refused = acquireHostLock(local, alive, resumer, { takeOver: [RUN], lease: true })
  await expect(refused).rejects.toThrow(LockedError)
  await expect(refused).rejects.toThrow(
    `is locked by run ${RUN} (ops@${hostname()}, pid ${process.pid}) since 2026-12-02T01:00:00.000Z, whose holder is alive: its process ${process.pid} runs on this machine.`,
  )
  expect(readFileSync(alive, 'utf8')).toContain(` ${process.pid} `)

  const gone = lockFile(`${RUN} ops@${hostname()} ${deadPid()} 2026-12-02T01:00:00.000Z`)
  await acquireHostLock(local, gone, resumer, { takeOver: [RUN], lease: true })
  expect(readFileSync(gone, 'utf8')).toMatch(new RegExp(`^${RUN} ${resumer.holder} ${resumer.pid} ${resumer.since} \\S+ [0-9a-f]{12}\n$`))
})

it('a holder on another machine: refused while its lease is fresh, taken over once it was not renewed for the lease', async () => {
  const fresh = lockFile(`${RUN} ops@another-machine 4242 2026-12-02T01:00:00.000Z`)
  await expect(acquireHostLock(local, fresh, resumer, { takeOver: [RUN], lease: true })).rejects.toThrow(
    new RegExp(`whose holder is alive: its lease was renewed \\d+ s ago, within ${HOST_LEASE_SECONDS} s\\.$`),
  )
  const lapsed = lockFile(`${RUN} ops@another-machine 4242 2026-12-02T01:00:00.000Z`, HOST_LEASE_SECONDS + 30)
  await acquireHostLock(local, lapsed, resumer, { takeOver: [RUN], lease: true })
  expect(readFileSync(lapsed, 'utf8')).toContain(`${RUN} ${resumer.holder} `)
})

it('another run than the one resumed is refused even when its holder is gone', async () => {
  const other = '20261202T000000Z-def456'
  const path = lockFile(`${other} ops@${hostname()} ${deadPid()} 2026-12-02T00:00:00.000Z`)
  await expect(acquireHostLock(local, path, resumer, { takeOver: [RUN], lease: true })).rejects.toThrow(`is locked by run ${other}`)
  expect(readFileSync(path, 'utf8')).toContain(other)
})

it("a holder taken over after its lease lapsed neither renews nor removes the new holder's lock, and stops at its next step", async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'svcops-host-lock-')), 'live-upgrade.lock')
  // Machine A takes the lock, then sleeps past its lease (its file not renewed for longer than it lasts).
  const sleeper = { runId: RUN, holder: 'ops@machine-a', pid: 4242, since: '2026-12-02T01:00:00.000Z' }
  const lineA = await acquireHostLock(local, path, sleeper, { lease: true })
  spawnSync('touch', ['-d', `@${Math.floor(Date.now() / 1000) - HOST_LEASE_SECONDS - 30}`, path])
  // Machine B resumes the same run: the lease lapsed, so it takes the lock over.
  const taker = { runId: RUN, holder: 'ops@machine-b', pid: 5151, since: sleeper.since }
  const lineB = await acquireHostLock(local, path, taker, { takeOver: [RUN], lease: true })
  expect(lineB).not.toBe(lineA)
  const aged = statSync(path).mtimeMs

  // A wakes: its renewal finds B's line and touches nothing; its release leaves B's lock in place.
  expect(await renewHostLeaseOnce(local, path, lineA)).toBe(false)
  expect(statSync(path).mtimeMs).toBe(aged)
  await releaseHostLease(local, path, lineA)
  expect(readFileSync(path, 'utf8')).toBe(`${lineB}\n`)

  // At its next step boundary A learns who took the lock over and stops before the step acts.
  const takenAt = lineB.split(' ')[4]
  const sentence = `The lock of live system 'lab' was taken over by ops@machine-b (pid 5151) at ${takenAt}; this run stops here.`
  expect(await hostLeaseLost(local, path, lineA, "live system 'lab'")).toBe(sentence)
  expect(await hostLeaseLost(local, path, lineB, "live system 'lab'")).toBeUndefined()
  let acted = 0
  const step = defineStep<object, [], Record<string, never>>({
    id: 'stop-controller',
    title: 'stop the controller',
    describe: () => ['stop the controller'],
    act: () => {
      acted++
      return Promise.resolve({})
    },
  })
  const journal = Journal.inMemory(newRunRecord({ kind: 'upgrade', system: 'live', environment: 'lab', envFile: 'lab.yaml', params: {} }))
  const runA = new Run({}, journal, { mode: 'act', lockLost: () => hostLeaseLost(local, path, lineA, "live system 'lab'") })
  const stopped = await runA.step(step).then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(stopped).toBeInstanceOf(InterruptedError)
  expect((stopped as Error).message).toBe(sentence)
  expect(acted).toBe(0)
  // B, whose line it is, acts.
  await new Run({}, journal, { mode: 'act', lockLost: () => hostLeaseLost(local, path, lineB, "live system 'lab'") }).step(step)
  expect(acted).toBe(1)
  expect(readFileSync(path, 'utf8')).toBe(`${lineB}\n`)
})
