/**
 * Helpers for the tests of the live lab: a private lab (its own TMPDIR, lab dir and stacks dir),
 * and the ways a test acts on the live host from outside, as an operator would: the host's own
 * supervisorctl, real dpkg, the component files, the controller's REST API and each `/metrics`.
 */
import { execFileSync } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connect } from 'node:net'
import { loadEnvironment, requireSection } from '../../src/config/load.ts'
import type { LiveConfig } from '../../src/config/schema.ts'
import { runCommand } from '../../src/core/runner.ts'
import { supervisorSocketPath, transportFor } from '../../src/drivers/transports.ts'
import { encodeCall } from '../../src/drivers/supervisor-rpc.ts'
import { readServiceStatus, supervisorDriver } from '../../src/drivers/services.ts'
import { installLiveRelease, writeLiveHostFile } from '../../src/lab/live-lab.ts'
import { formatEnvFile, parseEnvFile } from '../../src/lab/live/env-file.ts'
import { liveComponentPaths, livePackageName, DEFAULT_LIVE_PRODUCT } from '../../src/lab/live/paths.ts'
import type { LiveComponent } from '../../src/lab/live/releases.ts'
import { supervisorctlArgv } from '../support/supervisorctl.ts'

export const PRODUCT = DEFAULT_LIVE_PRODUCT

/** A private TMPDIR, lab dir and stacks dir for one lab; packages shared by every lab test. */
export function liveLabEnv(base: string, name: string): Record<string, string> {
  const tmp = join(base, `${name}-tmp`)
  mkdirSync(tmp, { recursive: true })
  chmodSync(base, 0o755)
  chmodSync(tmp, 0o755)
  return {
    SVCOPS_LAB_DIR: join(base, `${name}-lab`),
    SVCOPS_STACKS_DIR: join(base, `${name}-stacks`),
    TMPDIR: tmp,
    SVCOPS_LAB_PACKAGES_DIR: join(tmpdir(), 'svcops-test-lab-packages'),
  }
}

/** The `svcops:live` section the lab wrote. */
export function liveSectionOf(env: Record<string, string>): LiveConfig {
  return requireSection(loadEnvironment({ stackFile: join(env.SVCOPS_STACKS_DIR ?? '', 'Pulumi.lab.yaml') }), 'live')
}

/** The live host as the lab describes it, with helpers acting on it. */
export class LiveHost {
  readonly live: LiveConfig
  readonly root: string
  readonly user: string
  constructor(live: LiveConfig) {
    this.live = live
    this.root = live.host.root ?? ''
    this.user = live.host.ssh?.user ?? 'svcops-lab'
  }

  private get info(): { name: string; root: string; user: string } {
    return { name: this.live.host.name, root: this.root, user: this.user }
  }

  file(path: string): string {
    return join(this.root, path)
  }

  /** supervisorctl on the host's own supervisord, as the host's user. */
  async supervisorctl(args: string[]): Promise<string> {
    const t = transportFor({ name: this.live.host.name, url: 'http://127.0.0.1:1', root: this.root, canary: false })
    try {
      const r = await runCommand(t, supervisorctlArgv({ root: this.root }, args), { check: false })
      return r.stdout + r.stderr
    } finally {
      await t.close()
    }
  }

  /** The supervisor state of a component (RUNNING, EXITED, FATAL, STARTING, STOPPED...). */
  async state(component: LiveComponent): Promise<string> {
    // supervisord's XML-RPC through curl, as the service driver asks it: a poll without a Python start each time.
    const t = transportFor({ name: this.live.host.name, url: 'http://127.0.0.1:1', root: this.root, canary: false })
    try {
      const { status } = await readServiceStatus(
        supervisorDriver,
        t,
        { name: this.live.host.name, root: this.root },
        livePackageName(PRODUCT.prefix, component),
      )
      return status.split(' ')[0] ?? status
    } finally {
      await t.close()
    }
  }

  /**
   * One call to the host's supervisord over its XML-RPC socket (what supervisorctl sends, without
   * its Python start-up), as the host's user; waits like supervisorctl does. Faults are ignored:
   * the tests read the state afterwards.
   */
  async rpc(method: string, params: Array<string | boolean>): Promise<void> {
    const t = transportFor({ name: this.live.host.name, url: 'http://127.0.0.1:1', root: this.root, canary: false })
    try {
      const argv = ['curl', '--silent', '--max-time', '60', '--unix-socket', supervisorSocketPath({ root: this.root })]
      await runCommand(t, [...argv, '--header', 'Content-Type: text/xml', '--data-binary', '@-', 'http://localhost/RPC2'], {
        input: encodeCall(method, params),
        check: false,
      })
    } finally {
      await t.close()
    }
  }

  /** Stops every component, installs the four packages of `version` with dpkg, and starts them again. */
  async switchRelease(version: string, edit: () => void = () => undefined): Promise<void> {
    await this.rpc('supervisor.stopAllProcesses', [true])
    await installLiveRelease(this.info, this.live.packageDir ?? '', version)
    edit()
    await this.rpc('supervisor.startAllProcesses', [true])
  }

  async restart(component: LiveComponent): Promise<void> {
    await this.rpc('supervisor.stopProcess', [livePackageName(PRODUCT.prefix, component), true])
    await this.rpc('supervisor.startProcess', [livePackageName(PRODUCT.prefix, component), true])
  }

  readEnv(component: LiveComponent): Record<string, string> {
    return parseEnvFile(readFileSync(this.file(liveComponentPaths(PRODUCT, component).envFile), 'utf8'))
  }

  writeEnv(component: LiveComponent, vars: Record<string, string>): void {
    writeLiveHostFile(this.info, liveComponentPaths(PRODUCT, component).envFile, formatEnvFile(vars), 0o600)
  }

  writeFile(path: string, text: string): void {
    writeLiveHostFile(this.info, path, text, 0o600)
  }

  move(from: string, to: string): void {
    mkdirSync(join(this.file(to), '..'), { recursive: true })
    renameSync(this.file(from), this.file(to))
  }

  /** Log lines of a component (empty before it wrote any). */
  log(component: LiveComponent): string[] {
    const file = this.file(liveComponentPaths(PRODUCT, component).log)
    return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []
  }

  /** Lines of the component's log written after `mark` lines (see `logMark`) that start with ERROR. */
  errorsSince(component: LiveComponent, mark: number): string[] {
    return this.log(component)
      .slice(mark)
      .filter((l) => l.startsWith('ERROR'))
  }

  logMark(component: LiveComponent): number {
    return this.log(component).length
  }

  /** GET on the controller; the status and the JSON body (undefined when not JSON). */
  async controller(path: string): Promise<{ status: number; body: unknown }> {
    const r = await fetch(`${this.live.controllerUrl}${path}`, { signal: AbortSignal.timeout(2000) })
    const text = await r.text()
    try {
      return { status: r.status, body: JSON.parse(text) as unknown }
    } catch {
      return { status: r.status, body: undefined }
    }
  }

  async metrics(component: LiveComponent): Promise<string> {
    const r = await fetch(`http://127.0.0.1:${this.live.metricsPorts[component]}/metrics`, { signal: AbortSignal.timeout(2000) })
    return r.text()
  }

  async health(component: LiveComponent): Promise<{ version: string; connected: boolean } | undefined> {
    try {
      const r = await fetch(`http://127.0.0.1:${this.live.metricsPorts[component]}/health`, { signal: AbortSignal.timeout(1000) })
      return (await r.json()) as { version: string; connected: boolean }
    } catch {
      return undefined
    }
  }
}

/** Polls `check` until it returns a value other than undefined/false, or throws after `timeoutMs` with `what`. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined && value !== false) return value
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}.`)
    await new Promise((r) => setTimeout(r, 150))
  }
}

/** Whether something accepts TCP connections at `host:port`. */
export function accepts(endpoint: string): Promise<boolean> {
  const [host = '', port = '0'] = endpoint.split(':')
  return new Promise((resolve) => {
    const socket = connect({ host, port: Number(port) })
    socket.setTimeout(1000)
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
    socket.once('timeout', () => {
      socket.destroy()
      resolve(false)
    })
  })
}

/** Every process command line (ps), to search for secrets. */
export function processArguments(): string {
  return execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
}
