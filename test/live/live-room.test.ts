/**
 * The room a live upgrade needs on its hosts before anything is staged, as a specification: the
 * judgement (src/live/live-room.ts: more free than what is written plus 20%, the recording
 * service's margin), and the reading on a lab host (src/live/hosts/host-room.ts: the real `df -Pk`
 * of the folder, or of its nearest existing parent, through a local transport; folders on one
 * filesystem add up). The live lab proves the refusal end to end (test/live/live-safety.test.ts).
 */
import { mkdtempSync, statfsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { LocalTransport } from '../../src/core/runner.ts'
import { PACKAGE_CACHE } from '../../src/drivers/packages.ts'
import type { LiveHost } from '../../src/live/hosts/host-files.ts'
import { readRoom } from '../../src/live/hosts/host-room.ts'
import { LIVE_RUNS_PATH } from '../../src/live/hosts/live-host-run-store.ts'
import type { RoomReading } from '../../src/live/live-platform.ts'
import { judgeRoom } from '../../src/live/live-room.ts'

const MiB = 1 << 20

function reading(needed: number, free: number): RoomReading {
  return { host: 'live-1', paths: ['/var/cache/svcops/packages'], mount: '/', needed, free, what: ['the staged packages'] }
}

describe('the room a live upgrade needs on a host before anything is staged', () => {
  it('is enough when more is free than what the run writes there plus 20%', () => {
    const [v] = judgeRoom([reading(100 * MiB, 121 * MiB)])
    expect(v?.ok).toBe(true)
    expect(v?.wanted).toBe(120 * MiB)
    expect(v?.detail).toBe(
      'the filesystem / of /var/cache/svcops/packages on live-1: 126877696 bytes (121.0 MiB) free; the staged packages need 104857600 bytes (100.0 MiB), plus 20%',
    )
  })

  it('is short at exactly the margin and below it, naming the host, the folder, the bytes free and needed', () => {
    const [at, below] = judgeRoom([reading(100 * MiB, 120 * MiB), reading(100 * MiB, 110 * MiB)])
    expect(at?.ok).toBe(false)
    expect(below?.ok).toBe(false)
    expect(below?.detail).toBe(
      'the filesystem / of /var/cache/svcops/packages on live-1 has 115343360 bytes (110.0 MiB) free, and the staged packages need 104857600 bytes (100.0 MiB), 125829120 bytes (120.0 MiB) with the 20% margin',
    )
  })

  it('asks nothing of a filesystem the run writes nothing to, as long as anything is free', () => {
    expect(judgeRoom([reading(0, 4096)])[0]?.ok).toBe(true)
    expect(judgeRoom([reading(0, 0)])[0]?.ok).toBe(false)
  })
})

describe('the room as read on a lab host (sandbox root R, the real df through a local transport)', () => {
  it('reads the filesystem of each folder, or of its nearest existing parent, and adds up what goes to one filesystem', async () => {
    const root = mkdtempSync(join(tmpdir(), 'svcops-room-'))
    const host: LiveHost = { name: 'live-1', config: { name: 'live-1', root }, transport: new LocalTransport('live-1') }
    // Neither folder exists yet: the first staging and the first backup make them.
    const rows = await readRoom([
      { host, path: PACKAGE_CACHE, bytes: 30 * MiB, what: 'the staged packages' },
      { host, path: PACKAGE_CACHE, bytes: 20 * MiB, what: 'the staged packages' },
      { host, path: LIVE_RUNS_PATH, bytes: 4096, what: 'the copies of the settings and environment files' },
    ])
    expect(rows).toHaveLength(1) // one filesystem under R
    const [row] = rows
    expect(row?.host).toBe('live-1')
    expect(row?.paths).toEqual([join(root, PACKAGE_CACHE), join(root, LIVE_RUNS_PATH)])
    expect(row?.needed).toBe(50 * MiB + 4096)
    expect(row?.what).toEqual(['the staged packages', 'the copies of the settings and environment files'])
    // df's Available is the filesystem's blocks free to an unprivileged writer (statfs f_bavail), in KiB.
    const fs = statfsSync(root)
    expect(Math.abs((row?.free ?? 0) - fs.bavail * fs.bsize)).toBeLessThan(256 * MiB)
    expect((row?.free ?? 1) % 1024).toBe(0)
  })
})
