/**
 * The one live-lab fixture of the tests: a live lab (a sandboxed host with real dpkg, supervisord
 * and sshd, the four components of a release) and what a test does from outside, as an operator
 * would — svcops through its command line, the host's own supervisorctl and supervisord's XML-RPC,
 * real dpkg, the files on the host, the controller's REST API and each component's `/metrics`.
 *
 *   useLiveLab / startLiveLab   one lab per test file, started in the test's process (`labUp --live V`);
 *                               every PSK the host ever held is collected, so a test can search
 *                               every output and run file for it (test/live/*)
 *   liveLabEnv / LiveHost       a lab started through `svcops lab up` in private dirs, and the
 *                               operator's hands on its host (test/lab/live.test.ts)
 */
import { execFileSync } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { afterAll, beforeAll } from 'vitest'
import { loadEnvironment, loadEnvironmentFile } from '../../src/config/load.ts'
import { liveHostsSection } from '../../src/live/live-platforms.ts'
import type { LiveConfig } from '../../src/config/schema.ts'
import { runCommand } from '../../src/core/runner.ts'
import { readServiceStatus, supervisorDriver } from '../../src/drivers/services.ts'
import { encodeCall } from '../../src/drivers/supervisor-rpc.ts'
import { supervisorSocketPath, transportFor } from '../../src/drivers/transports.ts'
import { labDown, labUp } from '../../src/lab/lab.ts'
import { installLiveRelease, writeLiveHostFile } from '../../src/lab/live-lab.ts'
import { formatEnvFile, parseEnvFile } from '../../src/lab/live/env-file.ts'
import { DEFAULT_LIVE_PRODUCT, liveComponentPaths, livePackageName } from '../../src/lab/live/paths.ts'
import type { LiveComponent } from '../../src/lab/live/releases.ts'
import { gateItems } from '../../src/live/gates.ts'
import { envValue } from '../../src/live/hosts/host-files.ts'
import {
  componentEnvFile,
  componentLog,
  componentPackage,
  LIVE_COMPONENTS,
  productOf,
  settingsCandidates,
  type LiveComponentName,
} from '../../src/live/layout.ts'
import { runSvcops, runSvcopsInProcess, runSvcopsKilledAt, runSvcopsKilledInRun, sampleProcessArguments, type CliRun } from './cli.ts'
import { processInfo, supervisorctlArgv } from './supervisorctl.ts'

export { LIVE_COMPONENTS, type LiveComponentName }

export interface LiveLab {
  envFile: string
  runsDir: string
  live(): LiveConfig
  /** A host path inside the sandbox. */
  file(path: string): string
  /** The host file's text, or undefined. */
  read(path: string): string | undefined
  /** Every settings and environment file of the host, by path (absent ones undefined). */
  snapshot(): Record<string, string | undefined>
  /** The settings file's path and JSON, wherever it is. */
  settings(): { path: string; json: { psk?: string; listen?: unknown } } | undefined
  env(component: LiveComponentName): string
  setEnv(component: LiveComponentName, text: string): void
  versions(): Record<LiveComponentName, string | undefined>
  /** The component's supervisor state (RUNNING, EXITED, FATAL, BACKOFF, STOPPED...), '?' when supervisord does not say. */
  state(component: LiveComponentName): string
  /** The component's pid, 0 when it does not run. */
  pid(component: LiveComponentName): number
  supervisorctl(args: string[]): string
  log(component: LiveComponentName): string[]
  controller(path: string): Promise<{ status: number; body: unknown }>
  /** Edits the stack file's live section (gate inputs, timeouts) for the next runs. */
  setLive(fields: Record<string, unknown>): void
  /**
   * `svcops --stack-file <lab> ...args`; its output is kept for the secrets check. A child process,
   * or a run in the test's process with the lab's `cli: 'in-process'` (`runSvcopsInProcess`).
   */
  svcops(args: string[]): Promise<CliRun>
  /** `svcops` as a child process whatever the lab's `cli`: the run that follows a kill, as an operator starts it. */
  svcopsProcess(args: string[]): Promise<CliRun>
  svcopsKilledAt(args: string[], boundary: string): Promise<CliRun>
  /** `svcops ...args` continuing run `id` (a rollback, a resume), killed once its journal shows `boundary` (`step@component`) finished by this command (`runSvcopsKilledInRun`). */
  svcopsKilledInRun(args: string[], id: string, boundary: string): Promise<CliRun>
  /** Every PSK seen on the host so far (collected at each call of svcops and snapshot). */
  psks(): string[]
  /** Every output of svcops so far, the process arguments seen while it ran, and every run file except the backups (which hold the files, PSK included). */
  everythingPrinted(): string[]
  stop(): Promise<void>
}

/** Every gate id of an upgrade from `from` to `to` (what `--ack` may take). */
export function gateIds(live: LiveConfig, from: string, to: string): string[] {
  return gateItems(from, to, live).map((g) => g.id)
}

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return []
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? (name === 'backup' ? [] : filesUnder(path)) : [path]
  })
}

/** A live lab for the test file: started before its first test, stopped after its last. */
export function useLiveLab(options: Parameters<typeof startLiveLab>[0]): () => LiveLab {
  let lab: LiveLab | undefined
  beforeAll(async () => {
    lab = await startLiveLab(options)
  }, 240_000)
  afterAll(async () => {
    await lab?.stop()
  })
  return () => {
    if (!lab) throw new Error('The live lab of this file did not start (see beforeAll).')
    return lab
  }
}

/** Starts a lab with the live system on `version`. */
export async function startLiveLab(options: {
  version: string
  weakPsk?: boolean
  tcpEndpoints?: number
  /**
   * How `svcops` runs: a child process (the default), or in the test's process, for a file whose
   * cases read only its answer, exit code and the files it leaves (a start of the CLI is ~0.3 s of
   * CPU to load its modules). The killed runs are child processes either way.
   */
  cli?: 'process' | 'in-process'
}): Promise<LiveLab> {
  const dir = mkdtempSync(join(tmpdir(), 'svcops-live-'))
  const labDir = join(dir, 'lab')
  const stacksDir = join(dir, 'stacks')
  const runsDir = join(dir, 'runs')
  // One package cache for every lab of this test run (TMPDIR is the run's own), built once: labs of
  // parallel files wait for it under the build lock instead of building the same packages at once.
  process.env.SVCOPS_LAB_PACKAGES_DIR ??= join(tmpdir(), 'svcops-test-lab-packages')
  await labUp({
    dir: labDir,
    stacksDir,
    hosts: 0,
    live: options.version,
    ...(options.weakPsk ? { liveWeakPsk: true } : {}),
    ...(options.tcpEndpoints !== undefined ? { liveTcpEndpoints: options.tcpEndpoints } : {}),
  })
  const envFile = join(stacksDir, 'Pulumi.lab.yaml')
  const outputs: string[] = []
  const seen = new Set<string>()
  const live = (): LiveConfig => liveHostsSection(loadEnvironmentFile(envFile, 'lab'))
  const root = oneLiveHost(live()).root ?? ''
  const file = (path: string): string => join(root, path)
  const read = (path: string): string | undefined => (existsSync(file(path)) ? readFileSync(file(path), 'utf8') : undefined)
  const product = productOf(live())
  const paths = (): string[] => [...settingsCandidates(live()), ...LIVE_COMPONENTS.map((c) => componentEnvFile(product, c))]
  const collect = (): void => {
    for (const p of paths()) {
      const text = read(p)
      if (!text) continue
      const psk = p.endsWith('.json')
        ? (JSON.parse(text) as { psk?: string }).psk
        : envValue(text, `${product.prefix.toUpperCase()}_SYSTEM_CONTROLLER_PSK`)
      if (psk) seen.add(psk)
    }
  }
  const supervisorctl = (args: string[]): string => {
    const [cmd = '', ...rest] = supervisorctlArgv({ root }, args)
    try {
      return execFileSync(cmd, rest, { encoding: 'utf8' })
    } catch (error) {
      // supervisorctl exits non-zero for a program that is not running; its output says which state.
      return String((error as { stdout?: string }).stdout ?? '')
    }
  }
  /** `svcops --stack-file <lab> ...args` as a child process or in this process; its output kept for the secrets check. */
  const svcops = async (args: string[], how: 'process' | 'in-process'): Promise<CliRun> => {
    collect()
    // What every process on the machine was started with, sampled while svcops runs: no PSK in any argv.
    const sampler = sampleProcessArguments(100, (args) => outputs.push(args))
    try {
      const run = await (how === 'in-process' ? runSvcopsInProcess : runSvcops)(['--stack-file', envFile, ...args], {
        env: { SVCOPS_RUNS_DIR: runsDir },
      })
      outputs.push(run.stdout, run.stderr)
      return run
    } finally {
      sampler.stop()
      collect()
    }
  }
  collect()
  const lab: LiveLab = {
    envFile,
    runsDir,
    live,
    file,
    read,
    snapshot() {
      collect()
      return Object.fromEntries(paths().map((p) => [p, read(p)]))
    },
    settings() {
      for (const p of settingsCandidates(live())) {
        const text = read(p)
        if (text) return { path: p, json: JSON.parse(text) as { psk?: string } }
      }
      return undefined
    },
    env: (c) => read(componentEnvFile(product, c)) ?? '',
    setEnv: (c, text) => writeFileSync(file(componentEnvFile(product, c)), text),
    versions() {
      const out = {} as Record<LiveComponentName, string | undefined>
      for (const c of LIVE_COMPONENTS) {
        const r = execFileSync(
          'dpkg-query',
          [`--admindir=${join(root, 'var/lib/dpkg')}`, '-W', '-f=${Version}', componentPackage(product, c)],
          {
            encoding: 'utf8',
          },
        )
        out[c] = r.trim() || undefined
      }
      return out
    },
    state: (c) => processInfo({ root }, componentPackage(product, c)).state,
    pid: (c) => processInfo({ root }, componentPackage(product, c)).pid,
    supervisorctl,
    log: (c) => (read(componentLog(product, c)) ?? '').split('\n').filter(Boolean),
    async controller(path) {
      const r = await fetch(`${live().controllerUrl}${path}`, { signal: AbortSignal.timeout(3000) })
      const text = await r.text()
      try {
        return { status: r.status, body: JSON.parse(text) as unknown }
      } catch {
        return { status: r.status, body: text }
      }
    },
    setLive(fields) {
      const doc = parseYaml(readFileSync(envFile, 'utf8')) as { config: Record<string, unknown> }
      doc.config['svcops:live'] = { ...(doc.config['svcops:live'] as object), ...fields }
      writeFileSync(envFile, toYaml(doc))
    },
    svcops: (args) => svcops(args, options.cli ?? 'process'),
    svcopsProcess: (args) => svcops(args, 'process'),
    async svcopsKilledAt(args, boundary) {
      collect()
      const run = await runSvcopsKilledAt(['--stack-file', envFile, ...args], boundary, runsDir)
      outputs.push(run.stdout, run.stderr)
      collect()
      return run
    },
    async svcopsKilledInRun(args, id, boundary) {
      collect()
      const run = await runSvcopsKilledInRun(['--stack-file', envFile, ...args], id, boundary, runsDir)
      outputs.push(run.stdout, run.stderr)
      collect()
      return run
    },
    psks: () => [...seen],
    everythingPrinted: () => [...outputs, ...filesUnder(runsDir).map((f) => readFileSync(f, 'utf8'))],
    async stop() {
      await labDown({ dir: labDir, stacksDir })
    },
  }
  lab.setLive({ connectTimeoutSeconds: 8 })
  return lab
}

/** The one host of a live section of the one-host form (`live.host`, what `lab up --live V` writes). */
export function oneLiveHost(live: LiveConfig): NonNullable<LiveConfig['host']> {
  if (!live.host) throw new Error('The live section has no live.host: it spreads the system over live.hosts.')
  return live.host
}

/** Polls `check` until it is true (a component coming up or going down takes a moment). */
export async function waitUntil(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  await waitFor(what, check, timeoutMs)
}

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
  return liveHostsSection(loadEnvironment({ stackFile: join(env.SVCOPS_STACKS_DIR ?? '', 'Pulumi.lab.yaml') }))
}

/** The live host as the lab describes it, with helpers acting on it. */
export class LiveHost {
  readonly live: LiveConfig
  readonly root: string
  readonly user: string
  constructor(live: LiveConfig) {
    this.live = live
    this.root = oneLiveHost(live).root ?? ''
    this.user = oneLiveHost(live).ssh?.user ?? 'svcops-lab'
  }

  private get info(): { name: string; root: string; user: string } {
    return { name: oneLiveHost(this.live).name, root: this.root, user: this.user }
  }

  file(path: string): string {
    return join(this.root, path)
  }

  /** supervisorctl on the host's own supervisord, as the host's user. */
  async supervisorctl(args: string[]): Promise<string> {
    const t = transportFor({ name: oneLiveHost(this.live).name, url: 'http://127.0.0.1:1', root: this.root, canary: false })
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
    const t = transportFor({ name: oneLiveHost(this.live).name, url: 'http://127.0.0.1:1', root: this.root, canary: false })
    try {
      const { status } = await readServiceStatus(
        supervisorDriver,
        t,
        { name: oneLiveHost(this.live).name, root: this.root },
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
    const t = transportFor({ name: oneLiveHost(this.live).name, url: 'http://127.0.0.1:1', root: this.root, canary: false })
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

  /** Records of the component's log written after `mark` lines (see `logMark`) whose level is ERROR (`<ISO time> ERROR ...`). */
  errorsSince(component: LiveComponent, mark: number): string[] {
    return this.log(component)
      .slice(mark)
      .filter((l) => /^\S+ ERROR /.test(l))
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
    const r = await fetch(`http://127.0.0.1:${this.live.metricsPorts?.[component]}/metrics`, { signal: AbortSignal.timeout(2000) })
    return r.text()
  }

  async health(component: LiveComponent): Promise<{ version: string; connected: boolean } | undefined> {
    try {
      const r = await fetch(`http://127.0.0.1:${this.live.metricsPorts?.[component]}/health`, { signal: AbortSignal.timeout(1000) })
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
