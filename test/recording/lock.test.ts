import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DatabaseConfig } from '../../src/config/schema.ts'
import { startPostgres, type PostgresCluster } from '../../src/lab/lab-postgres.ts'
import { LockedError } from '../../src/core/errors.ts'
import { acquireEnvironmentLock, acquireHostLock, readEnvironmentLock, releaseHostLock } from '../../src/runs/lock.ts'
import { local } from '../../src/core/runner.ts'

let pg: PostgresCluster
let db: DatabaseConfig

const holder = (runId: string) => ({ runId, holder: 'tester@box', pid: process.pid, since: new Date().toISOString() })

beforeAll(async () => {
  pg = await startPostgres({ fsync: false })
  await pg.createDatabase('recording', { user: 'recorder', password: 'lock-test-password-1' })
  process.env.SVCOPS_TEST_LOCK_DB_PASSWORD = 'lock-test-password-1'
  db = { host: '127.0.0.1', port: pg.port, name: 'recording', user: 'recorder', password: { env: 'SVCOPS_TEST_LOCK_DB_PASSWORD' } }
})

afterAll(async () => {
  await pg?.stop()
})

describe('environment lock in the database', () => {
  it('refuses a second run, naming the holder, since when and the run id', async () => {
    const first = await acquireEnvironmentLock(db, { environment: 'lab', holder: holder('20261122T030000Z-aaaaaa') })
    const refused = await acquireEnvironmentLock(db, { environment: 'lab', holder: holder('20261122T030001Z-bbbbbb') }).catch(
      (e: unknown) => e,
    )
    expect(refused).toBeInstanceOf(LockedError)
    expect((refused as LockedError).exitCode).toBe(3)
    expect((refused as Error).message).toMatch(/locked by run 20261122T030000Z-aaaaaa \(tester@box, pid \d+\) since \d{4}-/)
    // Another environment in the same database is independent.
    const other = await acquireEnvironmentLock(db, { environment: 'staging', holder: holder('20261122T030002Z-cccccc') })
    await other.release()
    await first.release()
    const again = await acquireEnvironmentLock(db, { environment: 'lab', holder: holder('20261122T030003Z-dddddd') })
    expect(again.deadHolder).toBeUndefined()
    await again.release()
  })

  it('detects a holder that died (killed with SIGKILL) and lets --break-lock take a live one', async () => {
    // A separate process takes the lock and is killed: PostgreSQL frees the advisory lock, the row stays.
    const script = `
      import { acquireEnvironmentLock } from ${JSON.stringify(join(process.cwd(), 'src/runs/lock.ts'))}
      await acquireEnvironmentLock(${JSON.stringify(db)}, { environment: 'lab', holder: { runId: '20261122T031000Z-deadde', holder: 'dead@box', pid: process.pid, since: new Date().toISOString() } })
      process.stdout.write('locked\\n')
      setInterval(() => undefined, 1000)`
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      env: process.env,
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    await new Promise<void>((resolve) => child.stdout.on('data', (d: Buffer) => d.toString().includes('locked') && resolve()))
    const live = await readEnvironmentLock(db, 'lab')
    expect(live).toMatchObject({ runId: '20261122T031000Z-deadde', alive: true })
    child.kill('SIGKILL')
    await new Promise((r) => child.on('exit', r))
    let state = await readEnvironmentLock(db, 'lab')
    for (let i = 0; i < 20 && state?.alive; i++) {
      await new Promise((r) => setTimeout(r, 100))
      state = await readEnvironmentLock(db, 'lab')
    }
    expect(state).toMatchObject({ runId: '20261122T031000Z-deadde', alive: false })
    const taken = await acquireEnvironmentLock(db, { environment: 'lab', holder: holder('20261122T031001Z-eeeeee') })
    expect(taken.deadHolder?.runId).toBe('20261122T031000Z-deadde')
    // Now a live holder: --break-lock alone is refused (its run is unfinished), naming the risk and --force.
    const refused = await acquireEnvironmentLock(db, {
      environment: 'lab',
      holder: holder('20261122T031002Z-ffffff'),
      lockPolicy: 'break-finished',
    }).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(LockedError)
    expect((refused as LockedError).hint).toContain('--force')
    // --break-lock --force takes it, and says whose lock it broke.
    const broken = await acquireEnvironmentLock(db, {
      environment: 'lab',
      holder: holder('20261122T031002Z-ffffff'),
      lockPolicy: 'break-any',
    })
    expect(broken.broken?.runId).toBe('20261122T031001Z-eeeeee')
    await broken.release()
    await taken.release().catch(() => undefined)
  })
})

describe('host lock', () => {
  it('is exclusive per run, replaceable by the run it belongs to, and released only by it', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'svcops-hostlock-')), 'var/lib/svcops/upgrade.lock')
    await acquireHostLock(local, path, holder('20261122T032000Z-111111'))
    expect(readFileSync(path, 'utf8')).toMatch(/^20261122T032000Z-111111 tester@box/)
    const refused = await acquireHostLock(local, path, holder('20261122T032001Z-222222')).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(LockedError)
    expect((refused as Error).message).toMatch(/locked by run 20261122T032000Z-111111/)
    await acquireHostLock(local, path, holder('20261122T032001Z-222222'), { takeOver: ['20261122T032000Z-111111'] })
    await releaseHostLock(local, path, '20261122T032000Z-111111')
    expect(readFileSync(path, 'utf8')).toMatch(/^20261122T032001Z-222222/)
    await releaseHostLock(local, path, '20261122T032001Z-222222')
    await acquireHostLock(local, path, holder('20261122T032002Z-333333'))
  })
})
