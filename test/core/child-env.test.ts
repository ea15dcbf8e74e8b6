/**
 * Children get the environment they need, not svcops' own: a manager password or backup passphrase
 * read from an environment variable must not be visible in /proc/<pid>/environ of pg_dump, psql,
 * pg_restore or any command the runner starts.
 */
import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { local, runCommand } from '../../src/core/runner.ts'
import { spawnPgTool } from '../../src/drivers/postgres.ts'

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
    const tool = spawnPgTool(['sleep', '30'], { PGHOST: '127.0.0.1', PGPASSWORD: 'the-one-it-needs' }, { stdin: false, stdout: false })
    try {
      const pid = tool.child.pid
      if (pid === undefined) throw new Error('no pid')
      const env = environOf(pid)
      expect(env.PATH).toBe(process.env.PATH)
      expect(env.PGHOST).toBe('127.0.0.1')
      expect(env.PGPASSWORD).toBe('the-one-it-needs')
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
