/**
 * Children get the environment they need, not svcops' own: a manager password or backup passphrase
 * read from an environment variable must not be visible in /proc/<pid>/environ of pg_dump, psql,
 * pg_restore or any command the runner starts. The database password is in no child's environment
 * either (the same user reads /proc/<pid>/environ): the PostgreSQL tools read it from a 0600
 * password file (PGPASSFILE) in the 0700 run folder, or a 0700 private temp folder without a run,
 * that exists only while the tool runs — checked with real psql against a real server.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { createServer, connect, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { usePrivateFolder } from '../../src/core/private-files.ts'
import { local, runCommand } from '../../src/core/runner.ts'
import { findPgTool, spawnPgTool, type DatabaseTarget } from '../../src/drivers/postgres.ts'
import { startPostgres, type PostgresCluster } from '../../src/lab/lab-postgres.ts'

const PLANTED = {
  SVCOPS_MANAGER_PASSWORD: 'manager-password-env-Q7z1',
  SVCOPS_BACKUP_PASSPHRASE: 'backup-passphrase-env-W3k8',
  PGPASSWORD: 'ambient-pgpassword-R5t2',
}

function environOf(pid: number): Record<string, string> {
  return Object.fromEntries(
    readFileSync(`/proc/${pid}/environ`, 'utf8')
      .split('\0')
      .filter(Boolean)
      .map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
  )
}

describe('least environment for children', () => {
  beforeAll(() => Object.assign(process.env, PLANTED))
  afterAll(() => {
    for (const key of Object.keys(PLANTED)) delete process.env[key]
  })

  it('a PostgreSQL client tool gets PATH, locale and its own libpq settings, and no credential it was not given', async () => {
    const target: DatabaseTarget = { host: '127.0.0.1', port: 5432, name: 'recordings', user: 'recorder', password: 'the-one-it-needs' }
    const tool = spawnPgTool(['sleep', '30'], { target }, { stdin: false, stdout: false })
    try {
      const pid = tool.child.pid
      if (pid === undefined) throw new Error('no pid')
      const env = environOf(pid)
      expect(env.PATH).toBe(process.env.PATH)
      expect(env.PGHOST).toBe('127.0.0.1')
      expect(env.PGPASSWORD).toBeUndefined()
      expect(env.PGPASSFILE).toMatch(/\.pgpass\.[0-9a-f]{12}$/)
      expect(readFileSync(`/proc/${pid}/environ`, 'utf8')).not.toContain('the-one-it-needs')
      expect(env.SVCOPS_MANAGER_PASSWORD).toBeUndefined()
      expect(env.SVCOPS_BACKUP_PASSPHRASE).toBeUndefined()
      const all = readFileSync(`/proc/${pid}/environ`, 'utf8')
      for (const secret of Object.values(PLANTED)) expect(all).not.toContain(secret)
    } finally {
      tool.child.kill('SIGKILL')
      await tool.exited.catch(() => undefined)
    }
  })

  it('a command the runner starts on this machine sees none of svcops’ credentials', async () => {
    const result = await runCommand(local, ['sh', '-c', 'cat /proc/$$/environ'])
    const keys = result.stdout.split('\0').map((e) => e.slice(0, e.indexOf('=')))
    expect(keys).toContain('PATH')
    for (const key of Object.keys(PLANTED)) expect(keys).not.toContain(key)
    for (const secret of Object.values(PLANTED)) expect(result.stdout).not.toContain(secret)
  })
})

describe('the database password reaches the PostgreSQL tools through a password file only', () => {
  // `:` and `\` are escaped in a password file; a password holding both proves the escaping.
  const PASSWORD = 'pass:word\\with-colon-Q4v8'
  let cluster: PostgresCluster
  let target: DatabaseTarget
  let psql: string
  let runFolder: string

  beforeAll(async () => {
    cluster = await startPostgres({ fsync: false })
    await cluster.createDatabase('recordings', { user: 'recorder', password: PASSWORD })
    target = { host: cluster.info.host, port: cluster.port, name: 'recordings', user: 'recorder', password: PASSWORD }
    psql = (await findPgTool('psql')).path
    runFolder = join(mkdtempSync(join(tmpdir(), 'svcops-runs-')), '20261124T023000Z-a1b2c3')
    mkdirSync(runFolder, { mode: 0o700 })
  })
  afterAll(async () => {
    await cluster?.stop()
    rmSync(dirname(runFolder), { recursive: true, force: true })
  })

  /**
   * psql, held before the server answers (so that its environment and file can be read, also when
   * its login then fails and it exits at once), then given `sql` and closed. It connects through a
   * pass-through on loopback that forwards to the server only once both were read.
   */
  async function psqlWith(sql: string, connection: { target: DatabaseTarget }) {
    let release = (): void => undefined
    const released = new Promise<void>((resolve) => (release = resolve))
    const held = createServer((client) => {
      client.pause()
      void released.then(() => {
        const server = connect(cluster.port, cluster.info.host)
        client.pipe(server).pipe(client)
        client.resume()
        const end = (): void => {
          client.destroy()
          server.destroy()
        }
        client.on('error', end).on('close', end)
        server.on('error', end).on('close', end)
      })
    })
    await new Promise<void>((resolve) => held.listen(0, '127.0.0.1', resolve))
    try {
      const target = { ...connection.target, host: '127.0.0.1', port: (held.address() as AddressInfo).port }
      const tool = spawnPgTool([psql, '-X', '-At', '-v', 'ON_ERROR_STOP=1', '-f', '-'], { target }, { stdin: true, stdout: true })
      const pid = tool.child.pid as number
      const environ = readFileSync(`/proc/${pid}/environ`, 'utf8')
      const passfile = environOf(pid).PGPASSFILE as string
      const file = {
        path: passfile,
        mode: statSync(passfile).mode & 0o777,
        dirMode: statSync(dirname(passfile)).mode & 0o777,
        text: readFileSync(passfile, 'utf8'),
      }
      release()
      let out = ''
      tool.child.stdout?.on('data', (d: Buffer) => (out += d.toString()))
      tool.child.stdin?.end(sql)
      const exit = await tool.exited
      return { environ, file, exit, out }
    } finally {
      release()
      await new Promise<void>((resolve) => held.close(() => resolve()))
    }
  }

  it('psql logs in with it, sees no password in its environment, and the file is gone when it exits', async () => {
    const run = await psqlWith('SELECT current_user;', { target })
    expect(run.exit.code, run.exit.stderr).toBe(0)
    expect(run.out.trim()).toBe('recorder')
    expect(run.environ).not.toContain(PASSWORD)
    expect(run.environ).not.toContain('PGPASSWORD')
    expect(run.file.mode).toBe(0o600)
    expect(run.file.dirMode).toBe(0o700)
    expect(run.file.text).toBe('*:*:*:*:pass\\:word\\\\with-colon-Q4v8\n')
    // Without a run: a private temporary folder, removed with the file.
    expect(dirname(run.file.path).startsWith(join(tmpdir(), 'svcops-private-'))).toBe(true)
    expect(existsSync(run.file.path)).toBe(false)
    expect(existsSync(dirname(run.file.path))).toBe(false)
  })

  it('in a run, the file is in the 0700 run folder, and is removed after a failed login too', async () => {
    usePrivateFolder(runFolder)
    try {
      const run = await psqlWith('SELECT 1;', { target })
      expect(run.exit.code, run.exit.stderr).toBe(0)
      expect(dirname(run.file.path)).toBe(runFolder)
      const refused = await psqlWith('SELECT 1;', { target: { ...target, password: 'not:the\\password' } })
      expect(refused.exit.code).not.toBe(0)
      expect(refused.exit.stderr).toMatch(/password authentication failed/)
      expect(refused.environ).not.toContain('not:the')
      expect(readdirSync(runFolder)).toEqual([])
    } finally {
      usePrivateFolder(undefined)
    }
  })
})
