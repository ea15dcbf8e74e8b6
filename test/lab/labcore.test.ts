import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadEnvironmentFile } from '../../src/config/load.ts'
import { labStateSchema, type LabState } from '../../src/lab/state.ts'
import { isRunning, processesMentioning, svcops, type CliResult } from './labcore-helpers.ts'

const READ = 'urn:svc:recorder:content:read'
const WRITE = 'urn:svc:recorder:content:write'
const SMALL = ['--hosts', '1', '--recordings', '0']

function readState(dir: string): LabState {
  return labStateSchema.parse(JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')))
}

describe('svcops lab up / status / down and auth check (manager as auth API revision 1.4.1)', () => {
  const base = mkdtempSync(join(tmpdir(), 'svcops-labcore-'))
  const env = { SVCOPS_LAB_DIR: join(base, 'lab'), SVCOPS_STACKS_DIR: join(base, 'stacks') }
  const envFile = join(base, 'stacks', 'Pulumi.lab.yaml')
  let up: CliResult
  let state: LabState

  beforeAll(async () => {
    // The smallest lab that still has every part: this suite is about the lab core and the manager.
    up = await svcops(['lab', 'up', ...SMALL, '--manager-revision', '1.4.1', '--json'], env)
    if (up.code === 0) state = readState(env.SVCOPS_LAB_DIR)
  })
  afterAll(async () => {
    await svcops(['lab', 'down'], env)
    rmSync(base, { recursive: true, force: true })
  })

  it('starts PostgreSQL and the manager emulator as processes that outlive the CLI', () => {
    expect(up.code, up.stderr).toBe(0)
    const answer = JSON.parse(up.stdout) as { ok: boolean; envFile: string; services: { name: string; pid?: number; port?: number }[] }
    expect(answer).toMatchObject({ ok: true, envFile })
    expect(answer.services.map((s) => s.name)).toEqual(expect.arrayContaining(['PostgreSQL', 'manager emulator']))
    const manager = state.entries.find((e) => e.kind === 'process')
    expect(manager?.pid && isRunning(manager.pid)).toBe(true)
    const postgres = state.entries.find((e) => e.kind === 'postgres')
    expect(postgres?.info.dataDir).toEqual(expect.any(String))
    expect(existsSync(join(String(postgres?.info.dataDir), 'postmaster.pid'))).toBe(true)
    expect(readFileSync(join(String(postgres?.info.dataDir), 'postgresql.auto.conf'), 'utf8') + JSON.stringify(postgres)).not.toContain(
      'fsync=off',
    )
  })

  it('writes an environment file that --env lab reads, with passwords in 0600 files', () => {
    const lab = loadEnvironmentFile(envFile, 'lab')
    expect(lab.manager).toMatchObject({ email: 'operator@lab.svcops.test', apiRevision: '1.4.1' })
    const ref = lab.manager?.password
    expect(ref && 'file' in ref).toBe(true)
    if (ref && 'file' in ref) expect(statSync(ref.file).mode & 0o777).toBe(0o600)
    expect(statSync(join(env.SVCOPS_LAB_DIR, 'state.json')).mode & 0o777).toBe(0o600)
  })

  it('reports every part running in lab status', async () => {
    const status = await svcops(['lab', 'status', '--json'], env)
    const body = JSON.parse(status.stdout) as { up: boolean; complete: boolean; entries: { name: string; running: boolean }[] }
    expect(body).toMatchObject({ up: true, complete: true })
    expect(body.entries.every((e) => e.running)).toBe(true)
  })

  it('refuses a second lab up in the same directory and changes nothing', async () => {
    const again = await svcops(['lab', 'up', ...SMALL], env)
    expect(again.code).toBe(1)
    expect(again.stderr).toContain(`A lab is already up in ${env.SVCOPS_LAB_DIR}`)
    expect(readState(env.SVCOPS_LAB_DIR)).toEqual(state)
  })

  it('auth check prints granted scopes and expiry (300 s as revision 1.4.1), never a token, and logs out', async () => {
    const managerLog = join(env.SVCOPS_LAB_DIR, 'logs', 'manager.log')
    const logoutsBefore = readFileSync(managerLog, 'utf8').match(/POST \/api\/v1\/auth\/logout 200/g)?.length ?? 0
    const check = await svcops(['auth', 'check', '--env', 'lab', '--json'], env)
    expect(check.code, check.stderr).toBe(0)
    const report = JSON.parse(check.stdout) as Record<string, unknown>
    expect(report).toMatchObject({
      ok: true,
      email: 'operator@lab.svcops.test',
      apiRevision: '1.4.1',
      granted: [READ, WRITE],
      expiresIn: 300,
      loggedOut: true,
    })
    expect(check.stdout + check.stderr).not.toMatch(/eyJ|session_token|access_token/)
    const human = await svcops(['auth', 'check', '--env', 'lab', '--scope', READ], env)
    expect(human.stdout).toContain(`Granted scopes: ${READ}\n`)
    const logouts = readFileSync(managerLog, 'utf8').match(/POST \/api\/v1\/auth\/logout 200/g)?.length ?? 0
    expect(logouts - logoutsBefore).toBe(2)
  })

  it('auth check exits 1 with one sentence for a wrong password', async () => {
    const wrong = join(base, 'Pulumi.wrong.yaml')
    writeFileSync(wrong, readFileSync(envFile, 'utf8').replace(/file: .*/, 'env: SVCOPS_TEST_WRONG_PASSWORD'))
    const check = await svcops(['auth', 'check', '--stack-file', wrong], {
      ...env,
      SVCOPS_TEST_WRONG_PASSWORD: 'wrong-password-for-the-test',
    })
    expect(check.code).toBe(1)
    expect(check.stdout).toBe('')
    expect(check.stderr).toMatch(
      /^svcops: The manager at http:\/\/127\.0\.0\.1:\d+ refused the credentials of 'operator@lab\.svcops\.test' \(401 at login\)\.\n$/,
    )
  })

  it('auth check exits 1 naming the scope the operator lacks', async () => {
    const check = await svcops(['auth', 'check', '--env', 'lab', '--scope', READ, 'urn:svc:recorder:admin:write'], env)
    expect(check.code).toBe(1)
    expect(check.stderr.split('\n')[0]).toBe(
      `svcops: The manager user 'operator@lab.svcops.test' lacks the scope urn:svc:recorder:admin:write (granted: ${READ}).`,
    )
  })

  it('lab down stops everything it started, removes its files, and is idempotent', async () => {
    const dryRun = await svcops(['lab', 'down', '--dry-run'], env)
    expect(dryRun.stdout).toContain('manager emulator: SIGTERM to pid')
    expect(readState(env.SVCOPS_LAB_DIR)).toEqual(state)

    const pids = state.entries.flatMap((e) => (e.pid ? [e.pid] : []))
    const pgDir = String(state.entries.find((e) => e.kind === 'postgres')?.info.dir)
    const down = await svcops(['lab', 'down'], env)
    expect(down.code, down.stderr).toBe(0)
    // What is stopped is listed; the order follows the lab's dependencies and is not the point here.
    const stopped = /^Stopped: (.*)\.$/m.exec(down.stdout)?.[1]?.split(', ') ?? []
    expect(stopped).toEqual(expect.arrayContaining(['environment file', 'manager emulator', 'PostgreSQL', 'lab files']))
    expect(pids.filter(isRunning)).toEqual([])
    expect(processesMentioning(env.SVCOPS_LAB_DIR)).toEqual([])
    expect(processesMentioning(pgDir)).toEqual([])
    expect(existsSync(env.SVCOPS_LAB_DIR)).toBe(false)
    expect(existsSync(envFile)).toBe(false)
    expect(existsSync(pgDir)).toBe(false)

    const again = await svcops(['lab', 'down'], env)
    expect(again.code).toBe(0)
    expect(again.stdout).toContain('The lab was not up; nothing to stop.')
  })
})

describe('svcops lab up interrupted, dry-run and refused', () => {
  const base = mkdtempSync(join(tmpdir(), 'svcops-labcore-int-'))
  afterAll(() => rmSync(base, { recursive: true, force: true }))

  it('prints the steps with --dry-run and starts nothing', async () => {
    const env = { SVCOPS_LAB_DIR: join(base, 'dry-lab'), SVCOPS_STACKS_DIR: join(base, 'dry-stacks') }
    const plan = await svcops(['lab', 'up', ...SMALL, '--manager-revision', '1.4.1', '--dry-run', '--json'], env)
    expect(plan.code, plan.stderr).toBe(0)
    const { steps } = JSON.parse(plan.stdout) as { steps: string[] }
    expect(steps[0]).toMatch(/^start PostgreSQL \(fsync on\)/)
    expect(steps.some((s) => s.startsWith('start the manager emulator (auth API revision 1.4.1)'))).toBe(true)
    expect(steps.at(-1)).toBe(`write the environment file ${join(env.SVCOPS_STACKS_DIR, 'Pulumi.lab.yaml')}`)
    expect(existsSync(env.SVCOPS_LAB_DIR)).toBe(false)
    expect(processesMentioning(env.SVCOPS_LAB_DIR)).toEqual([])
  })

  it('refuses to overwrite a Pulumi.lab.yaml it did not write, before starting anything', async () => {
    const env = { SVCOPS_LAB_DIR: join(base, 'own-lab'), SVCOPS_STACKS_DIR: join(base, 'own-stacks') }
    const own = join(env.SVCOPS_STACKS_DIR, 'Pulumi.lab.yaml')
    mkdirSync(env.SVCOPS_STACKS_DIR, { recursive: true })
    writeFileSync(own, 'config:\n  svcops:environment: lab\n')
    const up = await svcops(['lab', 'up', ...SMALL], env)
    expect(up.code).toBe(1)
    expect(up.stderr.split('\n')[0]).toBe(
      `svcops: The environment file ${own} exists and was not written by svcops lab up; it is left alone.`,
    )
    expect(readFileSync(own, 'utf8')).toBe('config:\n  svcops:environment: lab\n')
    expect(existsSync(join(env.SVCOPS_LAB_DIR, 'state.json'))).toBe(false)
    expect(processesMentioning(env.SVCOPS_LAB_DIR)).toEqual([])
  })

  it('stops what it had started when a later step fails half-way, says so, and keeps the failure as its error', async () => {
    // Its last step writes the environment file; a stacks folder under a regular file makes it fail
    // after PostgreSQL and the manager emulator run.
    const notADir = join(base, 'not-a-dir')
    writeFileSync(notADir, '')
    const env = { SVCOPS_LAB_DIR: join(base, 'half-lab'), SVCOPS_STACKS_DIR: join(notADir, 'stacks') }
    let started: LabState | undefined
    const result = await svcops(['lab', 'up', '--hosts', '0'], env, (pid) => {
      const poll = setInterval(() => {
        try {
          const state = readState(env.SVCOPS_LAB_DIR)
          if (state.entries.some((e) => e.kind === 'process')) started = state
        } catch {
          // The state file is not there (or being replaced) yet, or any more.
        }
        if (!isRunning(pid)) clearInterval(poll)
      }, 20)
    })
    expect(result.code, result.stderr).toBe(1)
    expect(result.stderr).toMatch(/^✗ write the lab environment file .*ENOTDIR/m)
    expect(result.stderr).toMatch(/^lab up stopped what it had started: manager emulator, PostgreSQL, lab files\.$/m)
    expect(result.stderr).toMatch(/^svcops: ENOTDIR: not a directory/m)
    const pids = started?.entries.flatMap((e) => (e.pid ? [e.pid] : [])) ?? []
    const pgDir = String(started?.entries.find((e) => e.kind === 'postgres')?.info.dir)
    expect(pids.length, 'the manager emulator was running before the failure').toBe(1)
    expect(pids.filter(isRunning)).toEqual([])
    expect(processesMentioning(pgDir)).toEqual([])
    expect(processesMentioning(env.SVCOPS_LAB_DIR)).toEqual([])
    expect(existsSync(pgDir)).toBe(false)
    expect(existsSync(env.SVCOPS_LAB_DIR)).toBe(false)
  }, 120_000)

  it('stops what it already started when interrupted with Ctrl-C (SIGINT)', async () => {
    const env = { SVCOPS_LAB_DIR: join(base, 'int-lab'), SVCOPS_STACKS_DIR: join(base, 'int-stacks') }
    const stateFile = join(env.SVCOPS_LAB_DIR, 'state.json')
    let seen: LabState | undefined
    const result = await svcops(['lab', 'up', ...SMALL], env, (pid) => {
      const poll = setInterval(() => {
        try {
          const state = readState(env.SVCOPS_LAB_DIR)
          if (state.entries.some((e) => e.kind === 'postgres')) {
            seen = state
            clearInterval(poll)
            process.kill(pid, 'SIGINT')
          }
        } catch {
          // The state file is not there (or being replaced) yet.
          if (!isRunning(pid)) clearInterval(poll)
        }
      }, 20)
    })
    expect(seen, result.stderr).toBeDefined()
    expect(result.code).toBe(130)
    expect(result.stderr).toContain('SIGINT: stopping what this run started')
    const pgDir = String(seen?.entries.find((e) => e.kind === 'postgres')?.info.dir)
    expect(processesMentioning(pgDir)).toEqual([])
    expect(processesMentioning(env.SVCOPS_LAB_DIR)).toEqual([])
    expect(existsSync(stateFile)).toBe(false)
    expect(existsSync(pgDir)).toBe(false)
    expect(existsSync(join(env.SVCOPS_STACKS_DIR, 'Pulumi.lab.yaml'))).toBe(false)
  }, 120_000)
})
