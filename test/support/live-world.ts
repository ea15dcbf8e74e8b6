/**
 * The live production system in memory, for the crash matrix (test/runs/crash-matrix-live.test.ts):
 * a `LivePlatform` (src/live/live-platform.ts) over one world of its instances and the files they
 * read, with no process and no host: the four components on one host, or spread over three as
 * `lab up --live-hosts 3` places them (the system controller on live-1; an ingest, a pipeline and a
 * control panel on live-2 and on live-3), each instance reading the environment file of its own
 * host and the controller's settings file on live-1. It records what each call did (`did`), and
 * fails the way the real parts do where the playbooks rely on it, from the release catalog (src/releases):
 *
 *   - a component starts only on the configuration its release reads: the settings file where the
 *     release looks for it (the former fixed directory before 6.0), the PSK in the settings file
 *     and in its environment file when the release requires one, strong when it is enforced, the
 *     pipeline's TCP endpoint under the release's variable; otherwise it exits with an ERROR line;
 *   - an instance is connected only to a running controller of its own release;
 *   - a package is installed only once staged, and only a release the package directory holds;
 *   - the run's copy of the files is kept apart from the journal, as the host keeps it in the run
 *     folder: the PSK never reaches a journal.
 *
 * `freeze()` is the kill (test/support/crash-point.ts): from then on every call throws and changes
 * nothing; `thaw()` lets the next process act.
 */
import { liveUnits, type LiveUnit } from '../../src/live/live-placement.ts'
import { randomBytes } from 'node:crypto'
import { parseEnvironment } from '../../src/config/load.ts'
import type { Environment, LiveConfig } from '../../src/config/schema.ts'
import { BadInputError, LockedError, OperationError } from '../../src/core/errors.ts'
import { productOf, type LiveComponentName } from '../../src/live/layout.ts'
import type { LiveContext } from '../../src/live/live-context.ts'
import type { CheckResult } from '../../src/live/live-judge.ts'
import type { LiveParams } from '../../src/live/live-params.ts'
import type { LivePlatform } from '../../src/live/live-platform.ts'
import {
  pskEntropyEnforced,
  pskRequired,
  pskVariable,
  settingsFileName,
  supportsSettingsPathFlag,
  tcpEndpointSingleValue,
  tcpEndpointVariable,
} from '../../src/releases/versions.ts'
import type { Journal } from '../../src/runs/journal.ts'
import type { HeldLock, Opened } from '../../src/runs/playbook.ts'

type C = LiveComponentName

const LEGACY_SETTINGS = `/opt/svc/system-controller/etc/${settingsFileName()}`
const ETC_SETTINGS = `/etc/opt/svc/${settingsFileName()}`
const CONTROLLER_HOST = 'live-1'
/** A file of the world, by host and path (`live-2:/etc/default/svc-ingest`). */
const at = (host: string, path: string) => `${host}:${path}`
/** The environment file of unit `u`, on its host. */
const envFile = (u: LiveUnit) => at(u.host, `/etc/default/svc-${u.component}`)

/** Where a controller of `version` reads its settings file. */
const settingsPath = (version: string) => at(CONTROLLER_HOST, supportsSettingsPathFlag(version) ? ETC_SETTINGS : LEGACY_SETTINGS)

/** The files a system of `version` runs with on its `units`, sharing `psk` (none before the PSK). */
function configFor(units: LiveUnit[], version: string, psk: string | undefined): Record<string, string> {
  const files: Record<string, string> = { [settingsPath(version)]: JSON.stringify(psk ? { psk } : {}) }
  for (const u of units) {
    const lines = psk ? [`${pskVariable()}=${psk}`] : []
    if (u.component === 'pipeline') lines.push(`${tcpEndpointVariable(version)}=0.0.0.0:7000`)
    files[envFile(u)] = lines.join('\n')
  }
  return files
}

/** The one host of `lab up --live`, or the three of `lab up --live-hosts 3`. */
function placement(hosts: 1 | 3): Record<string, unknown> {
  if (hosts === 1)
    return {
      host: { name: CONTROLLER_HOST, transport: 'local' },
      metricsPorts: { 'system-controller': 9101, ingest: 9102, pipeline: 9103, 'control-panel': 9104 },
    }
  const instances = { ingest: 9102, pipeline: 9103, 'control-panel': 9104 }
  return {
    hosts: [
      { name: CONTROLLER_HOST, transport: 'local', components: { 'system-controller': 9101 } },
      { name: 'live-2', transport: 'local', components: instances },
      { name: 'live-3', transport: 'local', components: instances },
    ],
  }
}

const variable = (text: string | undefined, name: string) =>
  (text ?? '')
    .split('\n')
    .find((l) => l.startsWith(`${name}=`))
    ?.slice(name.length + 1)

interface ComponentState {
  version: string
  running: boolean
  staged: Set<string>
  log: string[]
}

export interface LiveWorldOptions {
  version: string
  /** Releases in the package directory. */
  releases: string[]
  /** A component whose start of a release fails (it exits with an ERROR line): every instance of it. */
  failing?: { component: C; version: string }
  /** One host (the default), or three as `lab up --live-hosts 3` places the instances. */
  hosts?: 1 | 3
}

/** The live system's world: its instances, the files they read, the run's copies of them, its lock. */
export class LiveWorld {
  readonly env: Environment
  readonly live: LiveConfig
  /** Each instance by its unit's name (`ingest` on one host, `live-2/ingest` across hosts). */
  readonly components = new Map<string, ComponentState>()
  files: Record<string, string>
  /** The files before any run: what a rollback puts back byte for byte. */
  readonly before: Record<string, string>
  /** The run folder's copies of the files (by run id): kept on the host, never in the journal. */
  readonly copies = new Map<string, Record<string, string>>()
  /** The PSKs the world has held: none may reach a journal or a report. */
  readonly psks: string[] = []
  envLock: string | undefined
  readonly did: string[] = []
  private dead = false
  private readonly options: LiveWorldOptions

  constructor(options: LiveWorldOptions) {
    this.options = options
    this.env = parseEnvironment(
      {
        'svcops:live': {
          version: options.version,
          ...placement(options.hosts ?? 1),
          controllerUrl: 'http://live-1.invalid:7000',
          tcpEndpoints: ['0.0.0.0:7000'],
        },
      },
      'matrix',
      '/nonexistent/Pulumi.matrix.yaml',
    )
    this.live = this.env.live as LiveConfig
    this.units = liveUnits(this.live)
    for (const u of this.units) this.components.set(u.name, { version: options.version, running: true, staged: new Set(), log: [] })
    this.files = configFor(this.units, options.version, pskRequired(options.version) ? this.newPsk() : undefined)
    this.before = { ...this.files }
  }

  private newPsk(): string {
    const psk = randomBytes(30).toString('base64url')
    this.psks.push(psk)
    return psk
  }

  freeze(): void {
    this.dead = true
  }

  thaw(): void {
    this.dead = false
  }

  private alive(): void {
    if (this.dead) throw new OperationError('svcops was killed: this call never reached the live host.')
  }

  private component(u: LiveUnit): ComponentState {
    return this.components.get(u.name) as ComponentState
  }

  private controller(): ComponentState {
    return this.component(this.units[0] as LiveUnit)
  }

  /** The release of each instance, by its unit's name. */
  versions(): Record<string, string> {
    return Object.fromEntries([...this.components.entries()].map(([name, s]) => [name, s.version]))
  }

  /** Every instance on `version`, by its unit's name. */
  allOn(version: string): Record<string, string> {
    return Object.fromEntries(this.units.map((u) => [u.name, version]))
  }

  private psk(): string | undefined {
    const settings = this.files[at(CONTROLLER_HOST, ETC_SETTINGS)] ?? this.files[at(CONTROLLER_HOST, LEGACY_SETTINGS)]
    return settings ? (JSON.parse(settings) as { psk?: string }).psk : undefined
  }

  /** Why instance `u` of `version` cannot run on the files as they are, or undefined. */
  misfit(u: LiveUnit, version: string): string | undefined {
    if (u.component === 'system-controller' && this.files[settingsPath(version)] === undefined)
      return `no settings file at ${settingsPath(version)}`
    const psk = this.psk()
    if (pskRequired(version)) {
      if (!psk) return 'no PSK in the settings file'
      if (variable(this.files[envFile(u)], pskVariable()) !== psk) return `the PSK of ${envFile(u)} is not the settings file's`
      if (pskEntropyEnforced(version) && psk.length < 32) return 'the PSK is too weak'
    }
    if (u.component === 'pipeline') {
      const endpoints = variable(this.files[envFile(u)], tcpEndpointVariable(version))
      if (!endpoints) return `no ${tcpEndpointVariable(version)}`
      if (tcpEndpointSingleValue(version) && endpoints.includes(',')) return 'several TCP endpoints'
    }
    return undefined
  }

  /** True when every instance runs `version` on files it reads. */
  whole(version: string): boolean {
    return this.units.every((u) => {
      const s = this.component(u)
      return s.version === version && s.running && !this.misfit(u, version)
    })
  }

  takeLock(runId: string, resuming?: string): HeldLock {
    this.alive()
    if (this.envLock && this.envLock !== runId && this.envLock !== resuming)
      throw new LockedError(`The live system is locked by run ${this.envLock}.`)
    this.envLock = runId
    return {
      release: () => {
        if (!this.dead && this.envLock === runId) this.envLock = undefined
        return Promise.resolve()
      },
      leave: () => Promise.resolve(),
    }
  }

  /** The run's units, as src/live/live-placement.ts names and orders them from the world's `svcops:live`. */
  readonly units: LiveUnit[]

  opener(): (journal: Journal<LiveParams>) => Promise<Opened<LiveContext>> {
    return (journal) => {
      const ctx: LiveContext = {
        env: this.env,
        live: this.live,
        product: productOf(this.live),
        journal,
        platform: this.platform(journal),
        units: this.units,
      }
      return Promise.resolve({ ctx, close: () => Promise.resolve() })
    }
  }

  private check(u: LiveUnit, version: string, cursor: number): CheckResult[] {
    const s = this.component(u)
    const controller = this.controller()
    const errors = s.log.slice(cursor).filter((l) => l.startsWith('ERROR'))
    return [
      { check: `${u.name} installed ${version}`, ok: s.version === version, detail: s.version },
      { check: `${u.name} running`, ok: s.running },
      { check: `${u.name} logged no error`, ok: errors.length === 0, ...(errors[0] ? { detail: errors[0] } : {}) },
      { check: `${u.name} connected on ${version}`, ok: controller.running && controller.version === version && s.running },
    ]
  }

  platform(journal: Journal<LiveParams>): LivePlatform {
    const act = <T>(fn: () => T): Promise<T> => {
      try {
        this.alive()
        return Promise.resolve(fn())
      } catch (error) {
        return Promise.reject(error instanceof Error ? error : new Error(String(error)))
      }
    }
    const available = (v: string) => this.options.releases.includes(v)
    return {
      where: [...new Set(this.units.map((u) => u.host))].join(', '),
      connectTimeoutMs: 1,
      close: () => Promise.resolve(),
      units: this.units,
      installedVersion: (u) => act(() => this.component(u).version),
      assertAvailable(u, v) {
        if (!available(v)) throw new BadInputError(`live.packageDir: version ${v} of svc-${u.component} is not there.`)
      },
      describePreflight: () => ({ versionCheck: '', more: [] }),
      checkPreflight: () => act(() => undefined),
      // The in-memory host has room for everything: nothing it stages takes space on a filesystem.
      readRoom: () => act(() => []),
      describeRoom: () => [],
      stage: (u, versions) =>
        act(() => {
          for (const v of versions) if (available(v)) this.component(u).staged.add(v)
          this.did.push(`stage ${u.name}`)
          return { changed: versions.map((v) => `staged ${v}`) }
        }),
      install: (u, v) =>
        act(() => {
          const s = this.component(u)
          if (s.running) throw new OperationError(`svc-${u.component} on ${u.host} runs; the playbook stops it before an install.`)
          if (!s.staged.has(v)) throw new OperationError(`svc-${u.component} ${v} is not in the package cache of ${u.host}.`)
          s.version = v
          this.did.push(`install ${u.name} ${v}`)
        }),
      stop: (u) =>
        act(() => {
          this.component(u).running = false
          this.did.push(`stop ${u.name}`)
        }),
      start: (u) =>
        act(() => {
          const s = this.component(u)
          const cursor = String(s.log.length)
          const fault = this.options.failing
          const why =
            fault && fault.component === u.component && fault.version === s.version ? 'its start failed' : this.misfit(u, s.version)
          s.running = !why
          s.log.push(why ? `ERROR ${u.name} ${s.version} exits: ${why}` : `INFO ${u.name} ${s.version} started`)
          this.did.push(`start ${u.name}`)
          return cursor
        }),
      status: (u) => act(() => ({ running: this.component(u).running, status: this.component(u).running ? 'RUNNING' : 'STOPPED' })),
      errorLines: (u, cursor) =>
        act(() =>
          this.component(u)
            .log.slice(Number(cursor ?? 0))
            .filter((l) => l.startsWith('ERROR')),
        ),
      describe: () => [],
      checkConfig: () => act(() => ({ data: { files: Object.keys(this.files).length } })),
      describeConfigCheck: () => [],
      backupConfig: () =>
        act(() => {
          this.copies.set(journal.run.id, { ...this.files })
          this.did.push('backup')
          return { changed: [`kept ${Object.keys(this.files).length} files in the run folder`], data: { copyOf: journal.run.id } }
        }),
      describeConfigBackup: () => [],
      writeConfig: (_from, to) =>
        act(() => {
          const psk = this.psk() ?? (pskRequired(to) ? this.newPsk() : undefined)
          this.files = configFor(this.units, to, psk)
          this.did.push('write-config')
          return { changed: ['wrote the settings file and every environment file on every host'] }
        }),
      describeConfigWrite: () => Promise.resolve([]),
      restoreConfig: (backup) =>
        act(() => {
          const copy = this.copies.get(String(backup?.copyOf))
          if (!copy) throw new OperationError("The run's copies of the files are missing.")
          this.files = { ...copy }
          this.did.push('restore-config')
          return { changed: ['put back every file from the run folder'] }
        }),
      describeConfigRestore: () => [],
      findRollbackMissing: (previous, backup) =>
        act(() => ({
          missing: [
            ...Object.entries(previous).flatMap(([name, v]) =>
              this.components.get(name)?.staged.has(v) || available(v) ? [] : [`${name} ${v} is not at hand`],
            ),
            ...(this.copies.has(String(backup?.copyOf)) ? [] : ["the run's copies of the files are missing"]),
          ],
        })),
      describeRollbackNeeds: () => [],
      checkComponent: (u, version, options) => act(() => this.check(u, version, Number(options.cursor ?? 0))),
      describeCheck: () => [],
      checkSystem: (version) =>
        act(() => ({
          checks: this.units.flatMap((u) => this.check(u, version, 0).filter((r) => !r.check.endsWith('no error'))),
          data: { versions: this.versions() },
        })),
      describeSystemCheck: () => [],
      verifyConfig: (version) =>
        act(() => this.units.map((u) => ({ check: `${u.name} configuration of ${version}`, ok: !this.misfit(u, version) }))),
      controllerStatus: (version) =>
        act(() => ({
          check: `controller on ${version}`,
          ok: this.controller().running && this.controller().version === version,
        })),
    }
  }
}
