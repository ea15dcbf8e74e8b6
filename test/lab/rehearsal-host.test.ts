/**
 * `svcops lab up --rehearsal-host`: one more sandbox host, rehearsal-1, named in the lab stack's
 * `recording.rehearsal` with its scratch database, set up as a site sets one up (its own storage
 * copy, its configuration on the scratch database, its service stopped, the database dropped again),
 * so that `svcops rehearse recording` runs on the lab as it is; refused with systemd hosts. On the
 * lab's real PostgreSQL, dpkg and supervisord.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadEnvironmentFile } from '../../src/config/load.ts'
import { readSecret } from '../../src/config/secrets.ts'
import { LAB_REHEARSAL_DATABASE, LAB_REHEARSAL_HOST } from '../../src/lab/lab-rehearsal-host.ts'
import { labDown, labStatus, labUp } from '../../src/lab/lab.ts'
import { recordingPackagePaths } from '../../src/lab/recording/index.ts'
import { LAB_RECORDING_PRODUCT } from '../../src/lab/hosts-lab.ts'
import { runSvcopsInProcess } from '../support/cli.ts'

const base = mkdtempSync(join(tmpdir(), 'svcops-lab-rehearsal-'))
const dirs = { dir: join(base, 'lab'), stacksDir: join(base, 'stacks') }
const envFile = join(dirs.stacksDir, 'Pulumi.lab.yaml')

describe('lab up --rehearsal-host refused where the lab cannot set one up', () => {
  it('with --host-kind systemd: one sentence, exit 2, nothing started', async () => {
    const other = { dir: join(base, 'refused'), stacksDir: join(base, 'refused-stacks') }
    const run = await runSvcopsInProcess(['lab', 'up', '--rehearsal-host', '--host-kind', 'systemd'], {
      env: { SVCOPS_LAB_DIR: other.dir, SVCOPS_STACKS_DIR: other.stacksDir },
    })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain(
      '--rehearsal-host: the lab sets one up beside sandbox recording hosts only; expected --host-kind sandbox and --hosts of at least 1.',
    )
    expect(existsSync(join(other.dir, 'state.json'))).toBe(false)
  })
})

describe('a lab with a rehearsal host', () => {
  beforeAll(async () => {
    process.env.SVCOPS_LAB_PACKAGES_DIR ??= join(tmpdir(), 'svcops-test-lab-packages')
    await labUp({ ...dirs, hosts: 2, version: '2.0.0', recordings: 3, rehearsalHost: true })
  }, 300_000)
  afterAll(async () => {
    await labDown(dirs)
  })

  it('names it in recording.rehearsal, keeps its own copy of the recordings, leaves its service stopped and no database of the scratch name', async () => {
    const env = loadEnvironmentFile(envFile, 'lab')
    const rehearsal = env.recording?.rehearsal
    expect(rehearsal).toMatchObject({ host: { name: LAB_REHEARSAL_HOST }, database: LAB_REHEARSAL_DATABASE })
    expect(env.recording?.hosts.map((h) => h.name)).toEqual(['rec-1', 'rec-2'])
    const root = rehearsal?.host?.root ?? ''
    const storage = join(root, recordingPackagePaths(LAB_RECORDING_PRODUCT).storage, 'main')
    expect(readdirSync(storage).length).toBeGreaterThanOrEqual(3)
    await expect(fetch(`${rehearsal?.host?.url ?? ''}/`)).rejects.toThrow()
    const db = env.recording!.database
    const client = new pg.Client({
      host: db.host,
      port: db.port,
      user: db.user,
      database: db.name,
      password: readSecret(db.password!, 'recording.database.password'),
    })
    await client.connect()
    try {
      const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [LAB_REHEARSAL_DATABASE])
      expect(found.rowCount).toBe(0)
    } finally {
      await client.end()
    }
    expect(labStatus(dirs).entries.find((e) => e.name === `host ${LAB_REHEARSAL_HOST}`)?.running).toBe(true)
  })

  it('svcops rehearse recording passes on it as the lab wrote it: the verdict and prediction printed, the stack file left as it was', async () => {
    const stack = readFileSync(envFile, 'utf8')
    const run = await runSvcopsInProcess(['--stack-file', envFile, 'rehearse', 'recording', '--to', '2.1.0', '--window', '30m'], {
      env: { SVCOPS_RUNS_DIR: join(base, 'runs') },
    })
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toMatch(/Rehearsal of 2\.0\.0 -> 2\.1\.0 on a copy .*: FITS/)
    expect(readFileSync(envFile, 'utf8')).toBe(stack)
  }, 600_000)
})
