import { lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { ManagerClient } from '../../src/clients/manager-client.ts'
import { SvcopsError } from '../../src/core/errors.ts'
import { collect, formatEvent } from '../../src/core/events.ts'
import { redact } from '../../src/core/redact.ts'
import { processesMentioning, svcops, type CliResult } from '../lab/labcore-helpers.ts'
import { OPERATOR, READ, READER, startTestManager, WRITE } from './helpers.ts'
import { startResourceServer } from './resource.ts'

/** Every place a secret could leak to: the text of errors (message, hint, stack), events as text and as JSON. */
function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  return [error.message, error.stack ?? '', error instanceof SvcopsError ? (error.hint ?? '') : ''].join('\n')
}

function expectNoSecrets(text: string, secrets: string[], where: string): void {
  for (const secret of secrets) {
    expect(text.includes(secret), `${where} contains a secret (${secret.length} chars, starting ${secret.slice(0, 3)}...)`).toBe(false)
  }
  expect(text, `${where} contains a JWT`).not.toMatch(/eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\./)
}

/** Files under `dir`, skipping `skip` (the 0600 secret files' directory). */
function filesUnder(dir: string, skip: string[] = []): string[] {
  const out: string[] = []
  const walk = (path: string) => {
    if (skip.includes(path)) return
    const stat = lstatSync(path, { throwIfNoEntry: false })
    if (!stat) return
    if (stat.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name))
    else if (stat.isFile()) out.push(path)
  }
  walk(dir)
  return out
}

describe('redaction: the manager flows with known secrets leak none of them', () => {
  it('keeps passwords, session tokens and access tokens out of events and errors (in process)', async () => {
    const manager = await startTestManager({ tokenLifetimeSeconds: 120 })
    const resource = await startResourceServer(manager.url)
    const log = collect()
    const errors: unknown[] = []
    const wrongPassword = 'known-wrong-password-b7d1e9'
    const retry = { attempts: 2, baseDelayMs: 1, maxDelayMs: 2 }
    const tokens: string[] = []
    try {
      // The full flow, with a 401 from the resource server and re-authentication.
      const operator = new ManagerClient({ url: manager.url, email: OPERATOR.email, password: () => OPERATOR.password, retry })
      tokens.push(await operator.accessToken([READ, WRITE]))
      resource.rejectNext = 1
      expect(
        (
          await operator.authorizedRequest([READ], {
            peer: 'recording-service',
            method: 'GET',
            url: `${resource.url}/api/v1/content?limit=5`,
          })
        ).status,
      ).toBe(200)
      await operator.logout()

      // Wrong password, missing scope, backend failures on each endpoint.
      const failures: Array<() => Promise<unknown>> = [
        () => new ManagerClient({ url: manager.url, email: OPERATOR.email, password: () => wrongPassword, retry }).accessToken([READ]),
        () => new ManagerClient({ url: manager.url, email: READER.email, password: () => READER.password, retry }).accessToken([WRITE]),
        async () => {
          manager.setFault({ endpoints: ['login'] })
          return new ManagerClient({ url: manager.url, email: OPERATOR.email, password: () => OPERATOR.password, retry }).accessToken([
            READ,
          ])
        },
        async () => {
          const client = new ManagerClient({ url: manager.url, email: OPERATOR.email, password: () => OPERATOR.password, retry })
          manager.setFault(undefined)
          tokens.push(await client.accessToken([READ]))
          manager.setFault({ endpoints: ['token', 'logout'] })
          await client.accessToken([WRITE]).catch((e: unknown) => errors.push(e))
          return client.logout()
        },
      ]
      for (const fail of failures)
        await fail().then(
          () => errors.push(new Error('expected a failure')),
          (e: unknown) => errors.push(e),
        )
      manager.setFault(undefined)
    } finally {
      log.stop()
      await resource.close()
      await manager.close()
    }
    const secrets = [OPERATOR.password, READER.password, wrongPassword, ...tokens, ...manager.issuedSecrets()]
    expect(manager.issuedSecrets().length).toBeGreaterThan(4)
    expect(errors).toHaveLength(5)
    expect(errors.every((e) => e instanceof SvcopsError)).toBe(true)
    expect(log.events.some((e) => e.kind === 'retry')).toBe(true)
    expectNoSecrets(errors.map(describeError).join('\n'), secrets, 'an error')
    expectNoSecrets(log.events.map(formatEvent).join('\n') + JSON.stringify(log.events), secrets, 'the event log')
    // Tokens were registered the moment they arrived, so any later output that quotes one is redacted.
    for (const secret of manager.issuedSecrets()) expect(redact(`value=${secret}`)).toBe('value=[REDACTED]')
  })

  it('keeps a secret in a malformed answer out of the ProtocolError', async () => {
    const secret = 'known-session-token-in-a-bad-answer-4411'
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ session_id: 'ses_1', session_token: secret, verified_at: 3, expires_at: null }))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const log = collect()
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      const error = await new ManagerClient({ url, email: OPERATOR.email, password: () => 'known-password-for-bad-answer' })
        .accessToken([READ])
        .catch((e: unknown) => e)
      expectNoSecrets(describeError(error), [secret, 'known-password-for-bad-answer'], 'the ProtocolError')
      expectNoSecrets(JSON.stringify(log.events), [secret, 'known-password-for-bad-answer'], 'the event log')
    } finally {
      log.stop()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  })

  describe('through the CLI: lab up, auth check, lab down as subprocesses', () => {
    const base = mkdtempSync(join(tmpdir(), 'svcops-redaction-'))
    const env = { SVCOPS_LAB_DIR: join(base, 'lab'), SVCOPS_STACKS_DIR: join(base, 'stacks') }
    afterAll(async () => {
      await svcops(['lab', 'down'], env)
      rmSync(base, { recursive: true, force: true })
    })

    it('prints, logs and writes no password or token anywhere but the 0600 secret files', async () => {
      const outputs: CliResult[] = []
      const run = async (args: string[], extra: Record<string, string> = {}) => {
        const result = await svcops(args, { ...env, ...extra })
        outputs.push(result)
        return result
      }
      const up = await run(['lab', 'up', '--hosts', '1', '--recordings', '0', '--verbose'])
      expect(up.code, up.stderr).toBe(0)
      const secretsDir = join(env.SVCOPS_LAB_DIR, 'secrets')
      const secretFiles = readdirSync(secretsDir).map((name) => join(secretsDir, name))
      for (const file of secretFiles) expect(lstatSync(file).mode & 0o777, file).toBe(0o600)
      const labPasswords = secretFiles.map((file) => readFileSync(file, 'utf8').trim())
      const wrongPassword = 'known-wrong-password-cli-5e02'
      const operatorPassword = readFileSync(join(secretsDir, 'manager-operator-password'), 'utf8').trim()
      const envFile = join(env.SVCOPS_STACKS_DIR, 'Pulumi.lab.yaml')
      const byEnv = join(base, 'Pulumi.byenv.yaml')
      const labYaml = readFileSync(envFile, 'utf8')
      writeFileSync(byEnv, labYaml.replace(/(password:\n\s+)file: .*/, '$1env: SVCOPS_TEST_MANAGER_PASSWORD'))

      expect((await run(['auth', 'check', '--env', 'lab', '--verbose'])).code).toBe(0)
      expect((await run(['auth', 'check', '--env', 'lab', '--json', '--verbose'])).code).toBe(0)
      expect(
        (await run(['auth', 'check', '--stack-file', byEnv, '--verbose', '--json'], { SVCOPS_TEST_MANAGER_PASSWORD: operatorPassword }))
          .code,
      ).toBe(0)
      expect((await run(['auth', 'check', '--stack-file', byEnv, '--verbose'], { SVCOPS_TEST_MANAGER_PASSWORD: wrongPassword })).code).toBe(
        1,
      )
      expect((await run(['auth', 'check', '--stack-file', byEnv, '--json'], { SVCOPS_TEST_MANAGER_PASSWORD: wrongPassword })).code).toBe(1)
      expect((await run(['lab', 'status', '--json'])).code).toBe(0)
      // Backups sign with the lab's signing key and verify with its private key: neither may show anywhere.
      const created = await run(['backup', 'create', '--env', 'lab', '--json', '--verbose'])
      expect(created.code, created.stderr).toBe(0)
      const backupId = (JSON.parse(created.stdout) as { backup: { id: string } }).backup.id
      expect((await run(['backup', 'verify', backupId, '--env', 'lab', '--verbose'])).code).toBe(0)
      const keysDir = join(env.SVCOPS_LAB_DIR, 'keys')
      const keyLines = readdirSync(keysDir)
        .filter((name) => name.endsWith('.key.asc'))
        .flatMap((name) =>
          readFileSync(join(keysDir, name), 'utf8')
            .split('\n')
            .filter((line) => /^[A-Za-z0-9+/=]{40,}$/.test(line)),
        )
      expect(keyLines.length).toBeGreaterThan(0)

      const secrets = [...labPasswords, wrongPassword, ...keyLines]
      const postgresLog = String(
        (
          JSON.parse(readFileSync(join(env.SVCOPS_LAB_DIR, 'state.json'), 'utf8')) as { entries: { kind: string; log?: string }[] }
        ).entries.find((e) => e.kind === 'postgres')?.log,
      )
      const written = [...filesUnder(env.SVCOPS_LAB_DIR, [secretsDir, keysDir]), ...filesUnder(env.SVCOPS_STACKS_DIR), postgresLog]
      expect(written).toContain(join(env.SVCOPS_LAB_DIR, 'logs', 'manager.log'))
      for (const file of written) expectNoSecrets(readFileSync(file).toString('latin1'), secrets, file)

      const down = await run(['lab', 'down', '--verbose'])
      expect(down.code, down.stderr).toBe(0)
      outputs.forEach((o, i) => expectNoSecrets(o.stdout + o.stderr, secrets, `the output of CLI run ${i + 1}`))
      expect(processesMentioning(env.SVCOPS_LAB_DIR)).toEqual([])
    }, 180_000)
  })
})
