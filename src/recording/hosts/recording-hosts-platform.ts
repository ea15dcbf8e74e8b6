/**
 * The recording service on hosts (`recording.platform: hosts`): an OS package and a service on
 * each host, reached over SSH or locally. Installs and stops go through the package driver (dpkg,
 * apt, dnf) and the service driver (systemd, supervisor) of src/drivers, as exact argv the dry run
 * shows; each host has its own lock file; the log of a start is read from a position taken right
 * before it, so only that start's lines are judged.
 */
import type { Environment, RecordingConfig } from '../../config/schema.ts'
import { errorMessage } from '../../core/errors.ts'
import { events } from '../../core/events.ts'
import { runCommand } from '../../core/runner.ts'
import { becomesWithSudo, sudoCheck } from '../../drivers/become.ts'
import { findDebFile, installPackage, packageDriver, readInstalledVersion, showCommand, stagePackage } from '../../drivers/packages.ts'
import { readLogCursor, readServiceLogs, readServiceStatus, serviceDriver, startService, stopService } from '../../drivers/services.ts'
import { hostPath, transportFor } from '../../drivers/transports.ts'
import { HostFailure } from '../../runs/engine.ts'
import { acquireHostLock, releaseHostLock } from '../../runs/lock.ts'
import { allOrFirstFailure, runConcurrently } from '../../runs/rollout.ts'
import type { RecordingSettings } from '../recording-settings.ts'
import type { RecordingHost, RecordingPlatform, RecordingTarget, TargetStatus } from '../recording-platform.ts'
import { reviewConfig } from './config-review.ts'

/**
 * supervisor: BACKOFF, the process exited and is retried; FATAL/EXITED: it gave up. systemd: failed
 * (its start limit hit, or no Restart=). auto-restart: the service exited since the start and
 * Restart= is about to start it again; the judge counts it as a crash on the way up (waiting for
 * the loop to end would only wait out the health timeout) and as one more start on the way back.
 */
// The state leads the status line (supervisor's FATAL, systemd's ActiveState): systemd's
// "exited and about to be restarted" is auto-restart, not EXITED.
const GAVE_UP = /^(FATAL|EXITED|failed)\b/
const RESTARTING = /auto-restart/i
const STARTING = /STARTING|activating/i

/** A service manager's status as the judge reads it: running, gave up, restarting, on its way up. */
export function targetStatusOf(s: { running: boolean; status: string }): TargetStatus {
  const restarting = RESTARTING.test(s.status)
  return { ...s, gaveUp: GAVE_UP.test(s.status), restarting, starting: !restarting && STARTING.test(s.status) }
}

/** The hosts of the environment as the platform of its recording service. Nothing connects until used. */
export function openHostsPlatform(env: Environment, rec: RecordingConfig, settings: RecordingSettings): RecordingPlatform {
  const pkg = packageDriver(rec.packageDriver)
  const svc = serviceDriver(rec.serviceDriver)
  const hosts: RecordingHost[] = rec.hosts.map((config) => ({
    name: config.name,
    config,
    transport: transportFor(config),
    url: config.url,
    ...(config.canary ? { canary: true } : {}),
  }))
  const files = new Map<string, string>()
  /** The local package file of a version (dpkg driver), else undefined. */
  const packageFile = (version: string): string | undefined => {
    if (rec.packageDriver !== 'dpkg') return undefined
    if (!files.has(version)) files.set(version, findDebFile(rec.packageDir, rec.package, version))
    return files.get(version)
  }
  /** Log positions taken right before each host's start: only that start's lines are judged. */
  const cursors = new Map<string, string | undefined>()
  const hostOf = (t: RecordingTarget): RecordingHost => {
    const h = hosts.find((x) => x.name === t.name)
    if (!h) throw new Error(`${t.name} is not a host of ${env.file}`)
    return h
  }
  const lockFile = (h: RecordingHost): string => (h.config.root ? `${h.config.root}${settings.hostLockPath}` : settings.hostLockPath)
  const { service, logPath, logLines } = settings
  const installed = (h: RecordingHost) => readInstalledVersion(pkg, h.transport, h.config, settings.package)
  /** On a host that becomes root through sudo: that sudo grants each root command of the run (`sudo -n -l`, runs nothing). */
  const sudoChecks = (h: RecordingHost, version: string, file: string | undefined) =>
    becomesWithSudo(h.config) && h.config.ssh
      ? [
          ...pkg.stageCommands(h.config, settings.package, version, file),
          ...pkg.installCommands(h.config, settings.package, version, file),
          svc.stopCommand(h.config, service),
          svc.startCommand(h.config, service),
        ]
          .filter((c) => c.asRoot)
          .map((c) => sudoCheck(h.name, h.config.ssh?.user ?? '', c))
      : []

  const platform: RecordingPlatform = {
    name: 'hosts',
    targets: hosts,
    pollMs: 250,
    label: (t) => `${service} on ${t.name}`,
    connect: () => Promise.resolve(),
    async close() {
      await Promise.all(hosts.map((h) => h.transport.close()))
    },
    records: () => [],

    async lockTargets(holder, options) {
      await allOrFirstFailure(hosts, (h) => acquireHostLock(h.transport, lockFile(h), holder, options))
    },
    async unlockTargets(runId) {
      await Promise.all(hosts.map((h) => releaseHostLock(h.transport, lockFile(h), runId).catch(() => undefined)))
    },
    describeLocks: () => `; the host lock ${settings.hostLockPath} on ${hosts.map((h) => h.name).join(', ')}`,

    describePreflight: () => [],
    checkPreflight: () => Promise.resolve({}),
    describeVersionRead: (first) =>
      first
        ? [`read the installed version on every host: ${showCommand(pkg.queryVersionCommand(hostOf(first).config, settings.package))}`]
        : ['read the installed version on every host'],
    async versions() {
      const out: Record<string, string> = {}
      await runConcurrently(hosts, hosts.length, async (h) => {
        const v = await installed(h)
        if (v) out[h.name] = v
      })
      return out
    },
    versionRecord: () => undefined,
    describeVersionRecord: () => [],

    async findMissing(t, version) {
      const h = hostOf(t)
      const reached = await runCommand(h.transport, ['true'], { check: false }).catch((error: unknown) => ({
        code: -1,
        stderr: errorMessage(error),
      }))
      if (reached.code !== 0) return { missing: [`${h.name} cannot be reached: ${reached.stderr.trim() || `exit ${reached.code}`}`] }
      let file: string | undefined
      try {
        file = packageFile(version)
      } catch (error) {
        return { missing: [errorMessage(error).replace(/\.$/, '')] }
      }
      const missing: string[] = []
      for (const cmd of [...pkg.readyCommands(h.config, settings.package, version, file), ...sudoChecks(h, version, file)]) {
        const result = await runCommand(h.transport, cmd.argv, { check: false, ...(cmd.env ? { env: cmd.env } : {}) })
        if (result.code !== 0) missing.push(cmd.missing)
      }
      return { missing }
    },
    describeFindMissing: (t, version) => {
      const h = hostOf(t)
      let file: string | undefined
      try {
        file = packageFile(version)
      } catch (error) {
        return [`refused: ${errorMessage(error)}`]
      }
      return [
        `reach ${h.name}; ${[...pkg.readyCommands(h.config, settings.package, version, file), ...sudoChecks(h, version, file)].map(showCommand).join('; ')}`,
      ]
    },
    async stage(t, versions) {
      const h = hostOf(t)
      const changed: string[] = []
      for (const v of versions) changed.push(...(await stagePackage(pkg, h.transport, h.config, settings.package, v, packageFile(v))))
      return changed.length ? { changed } : { skipped: `${versions.join(' and ')} already in the package cache` }
    },
    describeStage: (t, versions) => [
      ...new Set(versions.flatMap((v) => pkg.stageCommands(hostOf(t).config, settings.package, v, packageFile(v)).map(showCommand))),
    ],
    async stop(t) {
      const h = hostOf(t)
      await stopService(svc, h.transport, h.config, service)
      return { changed: [`stopped ${service}`] }
    },
    async install(t, version) {
      const h = hostOf(t)
      const current = await installed(h)
      if (current === version) return { skipped: `${settings.package} ${version} is already installed`, data: { from: current } }
      await installPackage(pkg, h.transport, h.config, settings.package, version, packageFile(version))
      const now = await installed(h)
      if (now !== version)
        throw new HostFailure(
          h.name,
          'install',
          `After installing ${settings.package} ${version} on ${h.name}, the installed version is ${now ?? 'none'}.`,
        )
      return {
        changed: [`installed ${settings.package} ${version} over ${current ?? 'nothing'}`],
        data: { from: current ?? null, to: version },
      }
    },
    async describeInstall(t, version) {
      const h = hostOf(t)
      const current = await installed(h)
      const commands = pkg.installCommands(h.config, settings.package, version, packageFile(version)).map(showCommand)
      return [`install ${version} over ${current ?? 'nothing'}: ${commands.join(' && ')}`]
    },
    async reviewConfig(t) {
      const h = hostOf(t)
      const review = await reviewConfig(h.transport, h.config, settings.configPath, pkg.newConfigSuffixes)
      if (!review.syntaxOk)
        throw new HostFailure(
          h.name,
          'review-config',
          `The active configuration on ${h.name} is not valid: ${review.syntaxError ?? 'unknown error'}.`,
        )
      return { data: { review } }
    },
    async start(t) {
      const h = hostOf(t)
      const startedAt = new Date().toISOString()
      const cursor = await readLogCursor(svc, h.transport, h.config, service, logPath)
      cursors.set(h.name, cursor)
      const started = await startService(svc, h.transport, h.config, service)
      if (!started.ok) events.warn(`start of ${service} reported: ${started.output}`, h.name)
      return { changed: [`started ${service}`], data: { startedAt, ...(cursor ? { logCursor: cursor } : {}) } }
    },
    async status(t): Promise<TargetStatus> {
      const h = hostOf(t)
      const s = await readServiceStatus(svc, h.transport, h.config, service)
      return targetStatusOf(s)
    },
    logsSinceStart(t) {
      const h = hostOf(t)
      return readServiceLogs(svc, h.transport, h.config, service, logLines, logPath, cursors.get(h.name))
    },
    recentLogs(t) {
      const h = hostOf(t)
      return readServiceLogs(svc, h.transport, h.config, service, logLines, logPath)
    },
    describe(call, t) {
      const h = hostOf(t)
      if (call === 'stop') return [showCommand(svc.stopCommand(h.config, service))]
      if (call === 'start') return [showCommand(svc.startCommand(h.config, service))]
      if (call === 'review-config') {
        const active = hostPath(h.config, settings.configPath)
        return [
          `look for ${pkg.newConfigSuffixes.map((s) => active + s).join(', ')}; diff -u against ${active}; ` +
            'check its JSON syntax; warn on options the new default no longer has',
        ]
      }
      if (call === 'wait-healthy') return [`GET ${h.url}/ until it answers, at most ${Math.round(settings.healthTimeoutMs / 1000)} s`]
      return [
        showCommand(svc.statusCommand(h.config, service)),
        showCommand(svc.logsCommand(h.config, service, logLines, logPath)),
        `fail on a log record whose level is ${settings.errorPatterns.join(' | ')} (the level field only, never the message)`,
      ]
    },
    hostOf,
  }
  return platform
}
