import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { generatePsk } from '../../src/releases/pre-shared-key.ts'
import { clearSecretsForTests } from '../../src/core/redact.ts'
import { migrateEnvFile, migrateEnvText } from '../../src/releases/env.ts'

const strong = generatePsk()
const dirs: string[] = []
afterAll(() => {
  dirs.forEach((d) => rmSync(d, { recursive: true, force: true }))
  clearSecretsForTests()
})

describe('svcops migrate env', () => {
  it('renames SVC_TCP_ENDPOINTS to SVC_TCP_ENDPOINT from 6.0, leaving every other byte alone', () => {
    const text = `# rendering engine\nexport SVC_TCP_ENDPOINTS="0.0.0.0:7000"   # control panel\nSVC_SYSTEM_CONTROLLER_PSK=${strong}\nOTHER=1\n`
    const m = migrateEnvText(text, 'engine.env', '5.2.0', '6.0.0')
    expect(m.problems).toEqual([])
    expect(m.changes).toEqual([{ line: 2, rule: '6.0.0/tcp-endpoint', from: 'SVC_TCP_ENDPOINTS', to: 'SVC_TCP_ENDPOINT' }])
    expect(m.after).toBe(text.replace('SVC_TCP_ENDPOINTS=', 'SVC_TCP_ENDPOINT='))
    expect(m.checks.join(' ')).toMatch(/passes the entropy check/)
  })

  it.each([
    ['commas', 'a:7000,b:7001', 'a:7000, b:7001'],
    ['spaces', '"10.0.0.1:7000 10.0.0.2:7000"', '10.0.0.1:7000, 10.0.0.2:7000'],
  ])('refuses more than one endpoint (%s), naming them', (_sep, value, named) => {
    const m = migrateEnvText(`SVC_TCP_ENDPOINTS=${value}\nSVC_SYSTEM_CONTROLLER_PSK=${strong}\n`, 'engine.env', '5.0.0', '7.0.0')
    expect(m.changes).toEqual([])
    expect(m.problems).toEqual([
      {
        rule: '6.0.0/tcp-endpoint',
        message: `engine.env:1: SVC_TCP_ENDPOINTS lists 2 endpoints (${named}), but SVC_TCP_ENDPOINT takes exactly one endpoint, which accepts many connections; keep one of them.`,
      },
    ])
  })

  it('keeps the old name for a target before 6.0', () => {
    expect(migrateEnvText(`SVC_TCP_ENDPOINTS=a:1,b:2\nSVC_SYSTEM_CONTROLLER_PSK=${strong}\n`, 'e.env', '3.0.0', '5.9.0')).toMatchObject({
      changes: [],
      problems: [],
    })
  })

  it('requires the PSK from 2.0 and its strength from 6.0, never printing it', () => {
    expect(migrateEnvText('X=1\n', 'e.env', '1.0.0', '1.5.0').problems).toEqual([])
    expect(migrateEnvText('X=1\n', 'e.env', '1.0.0', '2.0.0').problems[0]).toEqual({
      rule: '2.0.0/psk-env',
      message: 'e.env does not set SVC_SYSTEM_CONTROLLER_PSK: from 2.0.0 a component without it logs an error and stops.',
    })
    const weak = 'password-password-1234'
    expect(migrateEnvText(`SVC_SYSTEM_CONTROLLER_PSK=${weak}\n`, 'e.env', '4.0.0', '5.0.0').problems).toEqual([])
    const m = migrateEnvText(`SVC_SYSTEM_CONTROLLER_PSK='${weak}'\n`, 'e.env', '5.0.0', '6.0.0')
    expect(m.problems[0]?.rule).toBe('6.0.0/psk-entropy')
    expect(m.problems[0]?.message).toMatch(/would stop the system controller from starting in 6\.0\.0/)
    expect(JSON.stringify({ problems: m.problems, checks: m.checks, changes: m.changes })).not.toContain(weak)
  })

  it('uses the product prefix from config', () => {
    const m = migrateEnvText(`ACME_TCP_ENDPOINTS=a:1\nACME_SYSTEM_CONTROLLER_PSK=${strong}\n`, 'e.env', '5.0.0', '6.0.0', {
      product: { prefix: 'acme', dir: 'acme' },
    })
    expect(m.after).toBe(`ACME_TCP_ENDPOINT=a:1\nACME_SYSTEM_CONTROLLER_PSK=${strong}\n`)
  })

  it('checks the settings file against the 6.0 search path', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svcops-env-'))
    dirs.push(dir)
    const old = join(dir, 'opt', 'svc', 'config')
    mkdirSync(old, { recursive: true })
    const file = join(dir, 'engine.env')
    writeFileSync(file, `SVC_SYSTEM_CONTROLLER_PSK=${strong}\n`)
    const moved = migrateEnvFile(file, '5.0.0', '6.0.0', { settings: join(old, 'svc_sc_settings.json') })
    expect(moved.problems).toEqual([
      {
        rule: '6.0.0/settings-search-path',
        message: `svc_sc_settings.json in ${old} is not searched from 6.0.0: move it to ${process.cwd()} or /etc/opt/svc, or start the system controller with --settings-path ${old}.`,
      },
    ])
    expect(migrateEnvFile(file, '5.0.0', '6.0.0', { settings: old, workdir: old }).problems).toEqual([])
    expect(migrateEnvFile(file, '5.0.0', '6.0.0', { settings: '/etc/opt/svc/svc_sc_settings.json' }).problems).toEqual([])
    expect(() => migrateEnvFile(join(dir, 'missing.env'), '5.0.0', '6.0.0')).toThrow(/cannot be read: ENOENT/)
  })
})
