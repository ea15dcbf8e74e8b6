/**
 * Shared set-up of the recording tests: the real .deb packages (built once, cached), a token
 * issuer serving a JWKS on loopback, and starting a release's service from its installed bundle
 * in a `dpkg --root` sandbox, as a lab host runs it.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose'
import { startPostgres, type PostgresCluster } from '../../src/lab/lab-postgres.ts'
import { freePort } from '../../src/lab/ports.ts'
import { buildRecordingPackages, defaultServiceConfig, findRecordingRelease } from '../../src/lab/recording/index.ts'
import { local, runCommand } from '../../src/core/runner.ts'

export const READ = 'urn:svc:recorder:content:read'
export const WRITE = 'urn:svc:recorder:content:write'

/** The packages of every release; every test file shares one cached build (in the checkout's ignored .svcops/). */
export function recordingDebs(): Promise<Record<string, string>> {
  return buildRecordingPackages(fileURLToPath(new URL('../../.svcops/cache/test-recording-packages', import.meta.url)), {
    prefix: 'svc',
    dir: 'svc',
  })
}

export interface TestIssuer {
  url: string
  jwksUrl: string
  /** Signs an access token like the manager's (ES256, iss = url). */
  sign(claims: { scope: string; sub?: string; expiresInSeconds?: number; audience?: string }): Promise<string>
  close(): Promise<void>
}

/** A token issuer with its own key, publishing `/.well-known/jwks.json` on a free loopback port. */
export async function startTestIssuer(): Promise<TestIssuer> {
  const { privateKey, publicKey } = await generateKeyPair('ES256')
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid: 'test-key', alg: 'ES256', use: 'sig' }
  const server: Server = createServer((request, response) => {
    if (request.url === '/.well-known/jwks.json')
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }))
    else response.writeHead(404).end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
    jwksUrl: `${url}/.well-known/jwks.json`,
    sign: ({ scope, sub = 'tester@example.com', expiresInSeconds = 300, audience = 'urn:svc:recorder' }) => {
      const now = Math.floor(Date.now() / 1000)
      return new SignJWT({ scope, sid: 'test-session' })
        .setProtectedHeader({ alg: 'ES256', kid: 'test-key' })
        .setIssuer(url)
        .setAudience(audience)
        .setSubject(sub)
        .setIssuedAt(now - 5)
        .setExpirationTime(now + expiresInSeconds)
        .setJti(randomBytes(8).toString('hex'))
        .sign(privateKey)
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

const sandboxes = new Set<string>()

/** An empty `dpkg --root` sandbox (removed by stopAllServices). */
export function createSandbox(): string {
  const root = mkdtempSync(join(tmpdir(), 'svcops-rec-host-'))
  sandboxes.add(root)
  chmodSync(root, 0o755)
  mkdirSync(join(root, 'var/lib/dpkg/info'), { recursive: true })
  mkdirSync(join(root, 'var/lib/dpkg/updates'), { recursive: true })
  writeFileSync(join(root, 'var/lib/dpkg/status'), '')
  return root
}

/** Installs (or upgrades/downgrades to) a .deb in the sandbox with the real dpkg. */
export async function installDeb(root: string, deb: string): Promise<string> {
  const result = await runCommand(local, [
    'dpkg',
    `--root=${root}`,
    '--force-script-chrootless',
    '--force-confold',
    '--force-downgrade',
    '-i',
    deb,
  ])
  return result.stdout
}

/** A config file as tests edit it: the sections are objects, the values anything (tests write wrong ones). */
export type EditableConfig = Record<string, unknown> & {
  listen: Record<string, unknown>
  database: Record<string, unknown>
  auth: Record<string, unknown>
  storage: Record<string, unknown>
}

export interface ServiceDatabase {
  name: string
  user: string
  password: string
}

/** A fresh database with its own owner role. */
export async function createServiceDatabase(pg: PostgresCluster): Promise<ServiceDatabase> {
  const suffix = randomBytes(4).toString('hex')
  const database = { name: `rec_${suffix}`, user: `rec_${suffix}`, password: `pw-${randomBytes(12).toString('hex')}` }
  await pg.createDatabase(database.name, { user: database.user, password: database.password })
  return database
}

/** Writes the host's config: the release's default conffile with database, auth and port filled in, then `edit`. */
export function writeServiceConfig(
  root: string,
  options: {
    version: string
    pg: PostgresCluster
    database: ServiceDatabase
    issuer: { url: string; jwksUrl: string }
    port: number
    edit?: (config: EditableConfig) => void
  },
): string {
  const release = findRecordingRelease(options.version)
  if (!release) throw new Error(`no release ${options.version}`)
  const config = defaultServiceConfig(release, { dir: 'svc' }) as EditableConfig
  config.listen = { host: '127.0.0.1', port: options.port }
  config.database = {
    ...config.database,
    host: options.pg.info.host,
    port: options.pg.port,
    name: options.database.name,
    user: options.database.user,
  }
  config.auth = { ...config.auth, jwksUrl: options.issuer.jwksUrl, issuer: options.issuer.url }
  options.edit?.(config)
  const file = join(root, 'etc/opt/svc/recording.json')
  writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`)
  writeFileSync(join(root, 'etc/opt/svc/recording.dbpass'), `${options.database.password}\n`, { mode: 0o600 })
  return file
}

export interface RunningService {
  url: string
  root: string
  child: ChildProcess
  /** Resolves with the exit code when the process ends. */
  exited: Promise<number | null>
  log(): string
  stop(): Promise<void>
}

const started = new Set<RunningService>()

/**
 * Removes a sandbox. Started through `runuser`, the service's own process may still be closing its
 * files for a moment after `runuser` has exited, and a removal racing it sees a directory that is
 * not empty yet: it tries again (Node's `maxRetries`, for ENOTEMPTY among others).
 */
function removeSandbox(root: string): void {
  rmSync(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 })
}

/** Stops every service and removes every sandbox this test file started (for afterAll: a failed assertion must leave nothing behind). */
export async function stopAllServices(): Promise<void> {
  await Promise.all([...started].map((service) => service.stop()))
  for (const root of sandboxes) removeSandbox(root)
  sandboxes.clear()
}

/** Starts the installed bundle in `root` like supervisor does, and waits until it listens or exits. */
export async function runInstalledService(
  root: string,
  port: number,
  options: { user?: string; waitMs?: number } = {},
): Promise<RunningService> {
  const logFile = join(root, 'var/log/svc/recording.log')
  // Earlier runs in the same sandbox left lines: only lines after this offset belong to this run.
  const offset = existsSync(logFile) ? readFileSync(logFile).length : 0
  const argv = ['node', join(root, 'opt/svc/recording/service.mjs'), '--root', root, '--config', join(root, 'etc/opt/svc/recording.json')]
  const [command, ...args] = options.user ? ['runuser', '-u', options.user, '--', ...argv] : argv
  const child = spawn(command as string, args, { stdio: ['ignore', 'ignore', 'pipe'] })
  child.stderr?.resume()
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  let done = false
  void exited.then(() => (done = true))
  const url = `http://127.0.0.1:${port}`
  const service: RunningService = {
    url,
    root,
    child,
    exited,
    log: () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''),
    stop: async () => {
      if (!done) child.kill('SIGTERM')
      await exited
      started.delete(service)
    },
  }
  started.add(service)
  // Generous: on a loaded machine (another suite, a build) a start takes seconds; a service that
  // exits ends the wait at once, so only a hang costs the whole of it.
  const deadline = Date.now() + (options.waitMs ?? 45_000)
  while (!done && Date.now() < deadline) {
    if (/ INFO listening on /.test(service.log().slice(offset))) break
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  return service
}

/** A sandbox with `version` installed and configured, its service started. */
export async function startRecordingHost(options: {
  version: string
  pg: PostgresCluster
  database: ServiceDatabase
  issuer: { url: string; jwksUrl: string }
  edit?: (config: EditableConfig) => void
  waitMs?: number
}): Promise<RunningService & { port: number; cleanup(): Promise<void> }> {
  const debs = await recordingDebs()
  const deb = debs[options.version]
  if (!deb) throw new Error(`no package for ${options.version}`)
  const root = createSandbox()
  await installDeb(root, deb)
  const port = await freePort()
  writeServiceConfig(root, { ...options, port })
  const service = await runInstalledService(root, port, options.waitMs !== undefined ? { waitMs: options.waitMs } : {})
  return {
    ...service,
    port,
    cleanup: async () => {
      await service.stop()
      removeSandbox(root)
    },
  }
}

/** Waits until the service's log matches `pattern` (or `ms` pass); returns whether it did. */
export async function waitForLog(service: Pick<RunningService, 'log'>, pattern: RegExp, ms = 45_000): Promise<boolean> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (pattern.test(service.log())) return true
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  return false
}

export interface TestBed {
  pg: PostgresCluster
  issuer: TestIssuer
  /** A token with both scopes. */
  token: string
  /** Stops every service started, the issuer and PostgreSQL. */
  stop(): Promise<void>
}

/** PostgreSQL, a token issuer and the packages, started side by side. */
export async function startTestBed(): Promise<TestBed> {
  const [pg, issuer] = await Promise.all([startPostgres({ fsync: false }), startTestIssuer(), recordingDebs()])
  return {
    pg,
    issuer,
    token: await issuer.sign({ scope: `${READ} ${WRITE}` }),
    stop: async () => {
      await stopAllServices()
      await issuer.close()
      await pg.stop()
    },
  }
}
