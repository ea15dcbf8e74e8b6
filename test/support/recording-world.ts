/**
 * The recording service in memory, for the crash matrix (test/runs/crash-matrix-recording.test.ts):
 * a `RecordingPlatform` (src/recording/recording-platform.ts) and the `UpgradeDeps`
 * (src/recording/deps.ts) over one world of hosts, a database and a backup store, with no process,
 * no PostgreSQL and no network. It records what each call did (`did`), and fails the way the real
 * parts do where the playbooks rely on it:
 *
 *   - a release runs on its own schema only: its first start migrates an older schema (the
 *     lab's packages do the same), and a release older than the schema exits at its start
 *     (FATAL in its log, the service not running), as the real service refuses a newer schema;
 *   - the service answers `GET /` only while it runs on a release of the database's schema;
 *   - a package is installed only from the host's cache (staged) or the package directory;
 *   - a restore refuses while a host still runs (PostgreSQL refuses to drop a database in use);
 *   - a backup is restored only with the fingerprint it was taken on;
 *   - a target's lock is refused to another run unless that run takes it over (a dead holder's).
 *
 * `freeze()` is the kill (test/support/crash-point.ts): from then on every call throws and changes
 * nothing; `thaw()` lets the next process act.
 */
import { createHash } from 'node:crypto'
import { parseEnvironment } from '../../src/config/load.ts'
import type { Environment, RecordingConfig } from '../../src/config/schema.ts'
import { HttpError, LockedError, OperationError } from '../../src/core/errors.ts'
import { newBackupId } from '../../src/backup/manifest.ts'
import type { Recording } from '../../src/recording/content-snapshot.ts'
import type { UpgradeDeps } from '../../src/recording/deps.ts'
import type { RecordingContext } from '../../src/recording/recording-context.ts'
import type { RecordingParams } from '../../src/recording/recording-params.ts'
import type { RecordingPlatform, RecordingTarget, TargetStatus } from '../../src/recording/recording-platform.ts'
import { settingsFor } from '../../src/recording/recording-settings.ts'
import type { Journal } from '../../src/runs/journal.ts'
import type { HeldLock, Opened } from '../../src/runs/playbook.ts'

/** The schema each release runs on: 2.x migrated the database to schema 4. */
export function schemaOf(version: string): number {
  return Number(version.split('.')[0]) >= 2 ? 4 : 3
}

/** The database's fingerprint of a schema (stable across dump and restore, as the real one). */
export function fingerprintOf(schema: number): string {
  return createHash('sha256').update(`recording-schema-${schema}`).digest('hex')
}

interface HostState {
  version: string
  running: boolean
  staged: Set<string>
  log: string[]
  /** Where this start's log lines begin. */
  startedAt: number
  lock?: string
}

interface Database {
  schema: number
  rows: Recording[]
  nextId: number
}

/** A log line as the service writes it: ISO time, level, message (src/drivers/services.ts reads the level). */
const record = (level: string, message: string) => `${new Date().toISOString()} ${level} ${message}`

const copyDb = (db: Database): Database => ({ schema: db.schema, rows: db.rows.map((r) => ({ ...r })), nextId: db.nextId })

export interface WorldOptions {
  hosts: string[]
  version: string
  recordings: number
  /** Releases in the package directory (every host can install them once staged). */
  releases: string[]
  /** A host whose start of a release fails: its service exits (its migration fails). */
  failing?: { host: string; version: string }
}

/** The recording service's world: hosts, the database, the backup store, the environment's lock. */
export class RecordingWorld {
  readonly env: Environment
  readonly rec: RecordingConfig
  readonly hosts = new Map<string, HostState>()
  db: Database
  readonly backups = new Map<string, Database>()
  /** The run holding the environment's lock (its row; a dead holder's row stays). */
  envLock: string | undefined
  /** What every call that changed something did, in order: `stop rec-1`, `backup lab-20261202T020000Z-1a2b`, ... */
  readonly did: string[] = []
  private dead = false
  private readonly options: WorldOptions

  constructor(options: WorldOptions) {
    this.options = options
    this.env = parseEnvironment(
      {
        'svcops:recording': {
          version: options.version,
          healthTimeoutSeconds: 5,
          hosts: options.hosts.map((name, i) => ({ name, url: `http://${name}.invalid:8080`, transport: 'local', canary: i === 0 })),
          database: { host: 'db.invalid', name: 'recordings', user: 'recorder' },
        },
      },
      'matrix',
      '/nonexistent/Pulumi.matrix.yaml',
    )
    this.rec = this.env.recording as RecordingConfig
    for (const name of options.hosts)
      this.hosts.set(name, { version: options.version, running: true, staged: new Set(), log: [record('INFO', 'started')], startedAt: 0 })
    const rows = Array.from({ length: options.recordings }, (_, i) => ({
      id: i + 1,
      channelName: 'studio-1',
      title: `recording ${i + 1}`,
      startTime: 1_700_000_000 + i * 60,
      stopTime: 1_700_000_030 + i * 60,
    }))
    this.db = { schema: schemaOf(options.version), rows, nextId: rows.length + 1 }
  }

  /** The kill: nothing reaches the world any more. */
  freeze(): void {
    this.dead = true
  }

  /** A new process may act again. */
  thaw(): void {
    this.dead = false
  }

  private alive(): void {
    if (this.dead) throw new OperationError('svcops was killed: this call never reached the host.')
  }

  private host(name: string): HostState {
    const h = this.hosts.get(name)
    if (!h) throw new OperationError(`${name} is not a host of this world.`)
    return h
  }

  private hostAt(url: string): [string, HostState] {
    const found = [...this.hosts.entries()].find(([name]) => url === `http://${name}.invalid:8080`)
    if (!found) throw new HttpError(`GET ${url}/ failed: no such host.`, undefined)
    return found
  }

  /** True when the service on `name` runs and answers on the database's schema. */
  healthy(name: string): boolean {
    const h = this.host(name)
    return h.running && schemaOf(h.version) === this.db.schema
  }

  versions(): Record<string, string> {
    return Object.fromEntries([...this.hosts.entries()].map(([n, h]) => [n, h.version]))
  }

  /** Locks left on the targets (a dead run's). */
  targetLocks(): string[] {
    return [...this.hosts.values()].flatMap((h) => (h.lock ? [h.lock] : []))
  }

  private start(name: string): void {
    const h = this.host(name)
    h.startedAt = h.log.length
    const schema = schemaOf(h.version)
    const fault = this.options.failing
    if (fault && fault.host === name && fault.version === h.version) {
      h.running = false
      h.log.push(record('FATAL', `migration to ${h.version} failed`))
    } else if (schema < this.db.schema) {
      h.running = false
      h.log.push(record('FATAL', `the database schema ${this.db.schema} is newer than ${h.version} reads`))
    } else {
      if (schema > this.db.schema) this.db.schema = schema // the first start migrates
      h.running = true
      h.log.push(record('INFO', `${h.version} started`))
    }
    this.did.push(`start ${name}`)
  }

  /** The environment's lock for run `runId`; `resuming`: the run whose own row it takes over. */
  takeLock(runId: string, resuming?: string): HeldLock {
    this.alive()
    if (this.envLock && this.envLock !== runId && this.envLock !== resuming)
      throw new LockedError(`Environment 'matrix' is locked by run ${this.envLock}.`)
    this.envLock = runId
    const release = (): Promise<void> => {
      if (!this.dead && this.envLock === runId) this.envLock = undefined
      return Promise.resolve()
    }
    // An interrupted run leaves its row; a killed one cannot release anything.
    return { release, leave: () => Promise.resolve() }
  }

  /** Opens a run's context on this world, taking the targets' locks as `openRecordingRun` does. */
  opener(): (journal: Journal<RecordingParams>) => Promise<Opened<RecordingContext>> {
    return async (journal) => {
      const platform = this.platform()
      const allTargets = platform.targets
      const targets = journal.run.params.hosts.flatMap((n) => allTargets.filter((t) => t.name === n))
      const ctx: RecordingContext = {
        env: this.env,
        rec: this.rec,
        journal,
        platform,
        targets,
        allTargets,
        deps: this.deps(),
        settings: settingsFor(this.env, this.rec),
      }
      const run = journal.run
      await platform.lockTargets(
        { runId: run.id, holder: run.holder, pid: process.pid, since: run.startedAt },
        {
          takeOver: [run.id],
          lockPolicy: 'respect',
        },
      )
      return { ctx, close: () => platform.unlockTargets(run.id) }
    }
  }

  /** The platform's calls on this world. */
  platform(): RecordingPlatform {
    const targets: RecordingTarget[] = [...this.hosts.keys()].map((name, i) => ({
      name,
      url: `http://${name}.invalid:8080`,
      ...(i === 0 ? { canary: true } : {}),
    }))
    const act = <T>(fn: () => T): Promise<T> => {
      try {
        this.alive()
        return Promise.resolve(fn())
      } catch (error) {
        return Promise.reject(error instanceof Error ? error : new Error(String(error)))
      }
    }
    const status = (name: string): TargetStatus => {
      const h = this.host(name)
      const exited = !h.running && (h.log.at(-1) ?? '').includes(' FATAL ')
      return { running: h.running, status: h.running ? 'RUNNING' : exited ? 'EXITED' : 'STOPPED', gaveUp: exited, starting: false }
    }
    return {
      name: 'memory',
      targets,
      label: (t) => `svc-recording on ${t.name}`,
      connect: () => act(() => undefined),
      close: () => Promise.resolve(),
      records: () => [],
      lockTargets: (holder, options) =>
        act(() => {
          for (const [name, h] of this.hosts) {
            if (h.lock && h.lock !== holder.runId && !options.takeOver.includes(h.lock))
              throw new LockedError(`${name} is locked by run ${h.lock}.`)
          }
          for (const h of this.hosts.values()) h.lock = holder.runId
        }),
      unlockTargets: (runId) => {
        if (!this.dead) for (const h of this.hosts.values()) if (h.lock === runId) delete h.lock
        return Promise.resolve()
      },
      describeLocks: () => '',
      describePreflight: () => [],
      checkPreflight: () => act(() => ({})),
      describeVersionRead: () => [],
      versions: () => act(() => this.versions()),
      versionRecord: () => undefined,
      describeVersionRecord: () => [],
      findMissing: (t, version) =>
        act(() => ({
          missing: this.host(t.name).staged.has(version) || this.options.releases.includes(version) ? [] : [`${version} is not at hand`],
        })),
      describeFindMissing: () => [],
      stage: (t, versions) =>
        act(() => {
          const h = this.host(t.name)
          for (const v of versions) {
            if (!this.options.releases.includes(v) && v !== h.version) throw new OperationError(`${v} is not in the package directory.`)
            h.staged.add(v)
          }
          this.did.push(`stage ${t.name}`)
          return { changed: versions.map((v) => `staged ${v}`) }
        }),
      describeStage: () => [],
      stop: (t) =>
        act(() => {
          const h = this.host(t.name)
          h.running = false
          h.log.push(record('INFO', 'stopped'))
          this.did.push(`stop ${t.name}`)
          return { changed: [`stopped svc-recording on ${t.name}`] }
        }),
      install: (t, version) =>
        act(() => {
          const h = this.host(t.name)
          if (h.running) throw new OperationError(`${t.name}: svc-recording runs; the playbook stops it before an install.`)
          if (!h.staged.has(version)) throw new OperationError(`${t.name}: ${version} is not in the package cache.`)
          const from = h.version
          h.version = version
          this.did.push(`install ${t.name} ${version}`)
          return { changed: [`installed ${version} over ${from}`], data: { from, to: version } }
        }),
      describeInstall: () => Promise.resolve([]),
      reviewConfig: () => act(() => ({ data: {} })),
      start: (t) =>
        act(() => {
          this.start(t.name)
          return { changed: [`started svc-recording on ${t.name}`] }
        }),
      status: (t) => act(() => status(t.name)),
      logsSinceStart: (t) => act(() => this.host(t.name).log.slice(this.host(t.name).startedAt)),
      recentLogs: (t) => act(() => this.host(t.name).log.slice(-20)),
      describe: () => [],
      pollMs: 1,
    }
  }

  /** The product's APIs and the backup library on this world. */
  deps(): UpgradeDeps {
    const act = <T>(fn: () => T): Promise<T> => {
      try {
        this.alive()
        return Promise.resolve(fn())
      } catch (error) {
        return Promise.reject(error instanceof Error ? error : new Error(String(error)))
      }
    }
    const answering = (url: string): void => {
      const [name] = this.hostAt(url)
      if (!this.healthy(name)) throw new HttpError(`GET ${url}/ failed: connection refused.`, undefined)
    }
    return {
      content: {
        health: (url) => act(() => answering(url)),
        list: (url) =>
          act(() => {
            answering(url)
            return this.db.rows.map((r) => ({ ...r }))
          }),
        create: (url, input) =>
          act(() => {
            answering(url)
            const row = { id: this.db.nextId++, ...input }
            this.db.rows.push(row)
            return { ...row }
          }),
        checkAuth: () => act(() => ['urn:svc:recorder:content:read', 'urn:svc:recorder:content:write']),
      },
      backup: {
        createVerified: () =>
          act(() => {
            // The store's own id rule (a rollback refuses any other id a record names).
            const id = newBackupId(this.env.name)
            this.backups.set(id, copyDb(this.db))
            this.did.push(`backup ${id}`)
            return { id, fingerprint: fingerprintOf(this.db.schema) }
          }),
        restore: (id, expect) =>
          act(() => {
            const backup = this.backups.get(id)
            if (!backup) throw new OperationError(`Backup ${id} is not in the store.`)
            if (expect && fingerprintOf(backup.schema) !== expect) throw new OperationError(`Backup ${id} is of another schema.`)
            const running = [...this.hosts.entries()].filter(([, h]) => h.running).map(([n]) => n)
            if (running.length) throw new OperationError(`database "recordings" is being accessed by other users (${running.join(', ')}).`)
            this.db = copyDb(backup)
            this.did.push(`restore ${id}`)
          }),
        findRestoreProblem: (id, expect) =>
          act(() => {
            const backup = this.backups.get(id)
            if (!backup) return `backup ${id} is not in the store`
            return expect && fingerprintOf(backup.schema) !== expect ? `backup ${id} is of another schema` : undefined
          }),
        freeBytes: () => act(() => 1e12),
      },
      database: {
        fingerprint: () => act(() => fingerprintOf(this.db.schema)),
        rowCounts: () => act(() => ({ content: this.db.rows.length })),
        sizeBytes: () => act(() => 1e6),
        mayChangeSchema: () => act(() => ({ ok: true, detail: 'role recorder: owns every table' })),
      },
      close: () => Promise.resolve(),
    }
  }
}
