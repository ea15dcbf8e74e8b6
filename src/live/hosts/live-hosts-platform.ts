/**
 * The live production system on its hosts (`svcops:live` with a host, or hosts): the components'
 * packages through the package driver (dpkg, apt, dnf) and their services through the service
 * driver (systemd, supervisor) of src/drivers, each on its host's transport; the settings and
 * environment files through them too (live-host-config.ts); the checks over HTTP
 * (live-host-checks.ts). The run lock is a file on the system controller's host: one run per live
 * system, wherever svcops runs.
 */
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import type { LiveConfig, LiveHostConfig } from '../../config/schema.ts'
import { BadInputError, errorMessage, OperationError } from '../../core/errors.ts'
import { runCommand } from '../../core/runner.ts'
import {
  installPackage,
  knownVersionsText,
  PACKAGE_CACHE,
  packageDriver,
  readInstalledVersion,
  showCommand,
  stagePackage,
  stagingBytes,
  type PackageDriver,
} from '../../drivers/packages.ts'
import {
  ERROR_LEVELS,
  findLogErrors,
  readLogCursor,
  readServiceLogs,
  readServiceStatus,
  serviceDriver,
  startService,
  stopService,
  type ServiceDriver,
} from '../../drivers/services.ts'
import { becomesWithSudo } from '../../drivers/become.ts'
import { hostPath, transportFor } from '../../drivers/transports.ts'
import { componentLog, componentPackage } from '../layout.ts'
import { controllerHost, liveUnits, placedHosts, type LiveUnit } from '../live-placement.ts'
import type { CheckResult } from '../live-judge.ts'
import type { LiveLockPlace, LivePlatform, LiveScope } from '../live-platform.ts'
import type { LiveHost } from './host-files.ts'
import { LIVE_LOCK_PATH, LIVE_RUNS_PATH } from './live-host-run-store.ts'
import { findMissingSudoRules } from './live-sudo.ts'
import { describeDf, readRoom, type RoomNeed } from './host-room.ts'
import { checkComponent, checkPlanOf, describeHostUnitChecks, hostCheckReader, unitChecks } from './live-host-checks.ts'
import { absentDeclaredInterfaces } from '../live-checks.ts'
import {
  backupHostConfig,
  checkHostConfig,
  describeHostConfigBackup,
  describeHostConfigCheck,
  describeHostConfigRestore,
  describeHostConfigWrite,
  findHostBackupMissing,
  readBackupBytes,
  restoreHostConfig,
  verifyHostConfig,
  writeHostConfig,
} from './live-host-config.ts'
import { hostPskRotation } from './psk-rotate-files.ts'

// The run lock's file on the live host (the system controller's, across hosts), beside the runs kept there.
export { LIVE_LOCK_PATH } from './live-host-run-store.ts'

/** A host of the live system with a transport (connections are lazy). */
export function openHost(live: LiveConfig, config: LiveHostConfig): LiveHost {
  return { name: config.name, config, transport: transportFor({ url: live.controllerUrl, canary: false, ...config }) }
}

/** The live host of an environment (the system controller's, across hosts), with a transport (connections are lazy). */
export function openLiveHost(live: LiveConfig): LiveHost {
  return openHost(live, controllerHost(live).config)
}

/** The base URL of a unit's own port (its host's address, its metrics port), where its declared web and metric checks ask. */
export function unitUrlOf(live: LiveConfig): (u: LiveUnit) => string {
  const base = new URL(live.controllerUrl)
  const placed = placedHosts(live)
  return (u) => {
    const p = placed.find((h) => h.config.name === u.host)
    return `${base.protocol}//${p?.address ?? base.hostname}:${p?.ports[u.component] ?? 0}`
  }
}

/** The run lock of a live system on hosts: a file on the system controller's host. */
export function hostLockPlace(live: LiveConfig): LiveLockPlace {
  const host = openLiveHost(live)
  return { transport: host.transport, path: hostPath(host.config, LIVE_LOCK_PATH) }
}

/** Records of a component's log that count as errors: judged by their level field only (drivers/services.ts). */
const ERROR_PATTERNS = ERROR_LEVELS

/** The `.deb` of a component's version in the live section's package directory; bad input naming what is missing. */
export function liveDebFile(live: LiveConfig, pkg: string, version: string): string {
  const dir = live.packageDir
  if (!dir) throw new BadInputError(`live.packageDir: missing; the dpkg driver needs the directory holding ${pkg}_${version}_*.deb.`)
  if (!existsSync(dir)) throw new BadInputError(`live.packageDir: the directory '${dir}' does not exist.`)
  const found = readdirSync(dir).find((f) => f.startsWith(`${pkg}_${version}_`) && f.endsWith('.deb'))
  if (!found)
    throw new BadInputError(
      `live.packageDir: version ${version} of ${pkg} is not in ${dir}; expected one of the versions there: ${knownVersionsText(dir, pkg)}.`,
    )
  return join(dir, found)
}

const ISO_TIME = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/

/**
 * The log lines written since the process started, judged by the uptime the service manager
 * reports (`uptime 0:01:05`, supervisor) and the ISO time in each line; the last ten minutes
 * when the uptime is unknown. Lines without a time are kept: a multi-line error must not hide.
 */
export function linesSinceStart(lines: string[], status: string, now = Date.now()): string[] {
  const up = /uptime (?:(\d+) days?, )?(\d+):(\d\d):(\d\d)/.exec(status)
  const seconds = up ? Number(up[1] ?? 0) * 86_400 + Number(up[2]) * 3600 + Number(up[3]) * 60 + Number(up[4]) : 600
  const since = now - (seconds + 1) * 1000
  return lines.filter((line) => {
    const t = ISO_TIME.exec(line)
    return !t || Date.parse(t[0]) >= since
  })
}

/**
 * The platform of a live system on its hosts: each unit's package and service on its host, the
 * files of every host, the checks over HTTP. Nothing connects until used.
 */
export function openHostsPlatform(scope: LiveScope): LivePlatform {
  const { live, product } = scope
  const pkg: PackageDriver = packageDriver(live.packageDriver)
  const svc: ServiceDriver = serviceDriver(live.serviceDriver)
  const placed = placedHosts(live)
  const hosts = new Map(placed.map((p) => [p.config.name, openHost(live, p.config)]))
  const controller = hosts.get(controllerHost(live).config.name) as LiveHost
  const units = liveUnits(live)
  const on = (u: LiveUnit): LiveHost => hosts.get(u.host) ?? controller
  const name = (u: LiveUnit): string => componentPackage(product, u.component)
  const file = (u: LiveUnit, v: string): string | undefined => (pkg.name === 'dpkg' ? liveDebFile(live, name(u), v) : undefined)
  const config = { scope, hosts: { controller, units: units.map((unit) => ({ unit, host: on(unit) })) } }
  const unitUrl = unitUrlOf(live)
  const byName = (unitName: string): LiveUnit | undefined => units.find((u) => u.name === unitName)
  const where = placed.length === 1 ? controller.name : placed.map((p) => p.config.name).join(', ')
  // A host's package manager, one call at a time: apt and dpkg lock their database, and the units of a host stage at once.
  const packageQueues = new Map<string, Promise<unknown>>()
  const onePackageCallAtATime = <T>(u: LiveUnit, fn: () => Promise<T>): Promise<T> => {
    const next = (packageQueues.get(u.host) ?? Promise.resolve()).catch(() => undefined).then(fn)
    packageQueues.set(u.host, next)
    return next
  }
  const platform: LivePlatform = {
    where,
    units,
    connectTimeoutMs: (live.connectTimeoutSeconds ?? 30) * 1000,
    async close() {
      for (const h of hosts.values()) await h.transport.close()
    },
    hostOf: () => controller,
    installedVersion: (u) => readInstalledVersion(pkg, on(u).transport, on(u).config, name(u)),
    assertAvailable(u, v) {
      file(u, v)
    },
    describePreflight: () => ({
      versionCheck: ' and that their package files exist',
      more: [
        ...(placed.some((p) => becomesWithSudo(p.config))
          ? ['on each host with ssh.become: sudo, ask sudo -n -l for every command the run runs as root there (svcops render sudoers)']
          : []),
        ...(live.checks.length
          ? [
              `ask every check of svcops:live.checks on the running release: one whose path answers 404, metric is not exposed or command is not found stops the run here`,
            ]
          : []),
      ],
    }),
    async checkPreflight(installed) {
      // On hosts that become root with sudo: every root command of the run granted, before anything stops.
      const refused = await findMissingSudoRules(
        live,
        [...hosts.values()],
        [scope.journal.run.targetVersion, ...(installed ? [installed] : [])],
      )
      if (refused.length)
        throw new OperationError(
          `${refused.join('; ')}; nothing was stopped.`,
          `svcops render sudoers --env ${scope.env.name} prints every rule the live hosts need`,
        )
      if (!installed || !live.checks.length) return undefined
      const absent = await absentDeclaredInterfaces(hostCheckReader(checks), checkPlanOf(checks), units, installed)
      if (absent.length)
        throw new OperationError(
          `svcops:live.checks asks for what ${where} does not have on ${installed}: ${absent.map((a) => `${a.unit.name}: ${a.result.check}: ${a.result.detail ?? 'no'}`).join('; ')}; nothing was stopped.`,
          `Correct the check in svcops:live.checks (docs/contract.md); svcops probe --env ${scope.env.name} asks every interface`,
        )
      return { checks: 'every declared interface answers' }
    },
    async readRoom(versions) {
      const needs: RoomNeed[] = []
      // Only the dpkg driver copies files whose size is known beforehand; apt and dnf download from the host's repositories.
      if (pkg.name === 'dpkg')
        for (const u of units)
          for (const v of new Set(versions.filter(Boolean)))
            needs.push({
              host: on(u),
              path: PACKAGE_CACHE,
              bytes: await stagingBytes(on(u).transport, on(u).config, file(u, v) ?? ''),
              what: 'the staged packages',
            })
      needs.push({
        host: controller,
        path: LIVE_RUNS_PATH,
        bytes: await readBackupBytes(config),
        what: 'the copies of the settings and environment files',
      })
      return readRoom(needs)
    },
    describeRoom: () => [
      ...[...new Set(units.map(on))].map((h) =>
        pkg.name === 'dpkg'
          ? `${describeDf(h, PACKAGE_CACHE)}: room for the packages of the target and the installed release of its components not in the cache yet (stat -c %s)`
          : `${h.name}: ${pkg.name} downloads from the host's repositories; the size of a download is not known before it`,
      ),
      `${describeDf(controller, LIVE_RUNS_PATH)}: room for the copies of the settings and environment files`,
    ],
    stage: (u, versions) =>
      onePackageCallAtATime(u, async () => {
        const changed: string[] = []
        for (const v of versions) changed.push(...(await stagePackage(pkg, on(u).transport, on(u).config, name(u), v, file(u, v))))
        return changed.length ? { changed } : { skipped: 'both packages already staged' }
      }),
    install: (u, v) => onePackageCallAtATime(u, () => installPackage(pkg, on(u).transport, on(u).config, name(u), v, file(u, v))),
    stop: (u) => stopService(svc, on(u).transport, on(u).config, name(u)),
    async start(u) {
      const cursor = await readLogCursor(svc, on(u).transport, on(u).config, name(u), componentLog(product, u.component))
      // A component that exits at once is judged by the check (status, log), which says why.
      await startService(svc, on(u).transport, on(u).config, name(u))
      return cursor
    },
    status: (u) => readServiceStatus(svc, on(u).transport, on(u).config, name(u)),
    async errorLines(u, cursor) {
      const h = on(u)
      const lines = await readServiceLogs(svc, h.transport, h.config, name(u), 200, componentLog(product, u.component), cursor)
      if (cursor) return findLogErrors(lines, ERROR_PATTERNS)
      // Without a position taken before the start, the lines since the running process started.
      const status = await readServiceStatus(svc, h.transport, h.config, name(u))
      return findLogErrors(linesSinceStart(lines, status.status), ERROR_PATTERNS)
    },
    describe(call, u, v) {
      const c = on(u).config
      const shown = (argv: string): string => (placed.length > 1 ? `on ${u.host}: ${argv}` : argv)
      if (call === 'stage') return pkg.stageCommands(c, name(u), v ?? '', v ? file(u, v) : undefined).map((x) => shown(showCommand(x)))
      if (call === 'install') return pkg.installCommands(c, name(u), v ?? '', v ? file(u, v) : undefined).map((x) => shown(showCommand(x)))
      if (call === 'stop') return [shown(showCommand(svc.stopCommand(c, name(u))))]
      if (call === 'start') return [shown(showCommand(svc.startCommand(c, name(u))))]
      return [shown(showCommand(svc.statusCommand(c, name(u))))]
    },

    checkConfig: (from, to) => checkHostConfig(config, from, to),
    describeConfigCheck: () => describeHostConfigCheck(config),
    backupConfig: () => backupHostConfig(config),
    describeConfigBackup: () => describeHostConfigBackup(config),
    writeConfig: (from, to) => writeHostConfig(config, from, to),
    describeConfigWrite: (from, to) => describeHostConfigWrite(config, from, to),
    restoreConfig: (backup) => restoreHostConfig(config, backup),
    describeConfigRestore: (backup) => describeHostConfigRestore(config, backup),

    async findRollbackMissing(previous, backup) {
      // Every host the rollback acts on: the controller's (the settings file) and each unit's.
      const acting = [...new Set([controller, ...Object.keys(previous).flatMap((n) => (byName(n) ? [on(byName(n) as LiveUnit)] : []))])]
      const missing: string[] = []
      for (const h of acting) {
        const reached = await runCommand(h.transport, ['true'], { check: false }).catch((error: unknown) => ({
          code: -1,
          stderr: errorMessage(error),
        }))
        if (reached.code !== 0) missing.push(`${h.name} cannot be reached: ${reached.stderr.trim() || `exit ${reached.code}`}`)
      }
      if (missing.length) return { missing }
      missing.push(...(await findMissingSudoRules(live, acting, Object.values(previous))))
      for (const [n, v] of Object.entries(previous)) {
        const u = byName(n)
        if (!u) {
          missing.push(`${n} is not in svcops:live any more`)
          continue
        }
        let deb: string | undefined
        try {
          deb = file(u, v)
        } catch (error) {
          missing.push(errorMessage(error).replace(/\.$/, ''))
          continue
        }
        for (const cmd of pkg.readyCommands(on(u).config, name(u), v, deb)) {
          const result = await runCommand(on(u).transport, cmd.argv, { check: false, ...(cmd.env ? { env: cmd.env } : {}) })
          if (result.code !== 0) missing.push(placed.length > 1 ? `on ${u.host}: ${cmd.missing}` : cmd.missing)
        }
      }
      return { missing: [...new Set([...missing, ...(await findHostBackupMissing(config, backup))])] }
    },
    describeRollbackNeeds: (previous) => [
      `${where} reachable; the run's copies of the settings and environment files in ${scope.journal.dir}, each matching its checksum`,
      ...units.flatMap((u) => {
        const v = previous[u.name]
        if (!v) return [`the release ${u.name} ran before the run: not known yet`]
        let deb: string | undefined
        try {
          deb = file(u, v)
        } catch (error) {
          return [`${name(u)} ${v}: ${errorMessage(error)}`]
        }
        return pkg
          .readyCommands(on(u).config, name(u), v, deb)
          .map((cmd) => `${placed.length > 1 ? `${u.host}: ` : ''}${name(u)} ${v}: ${showCommand(cmd)}`)
      }),
    ],

    checkComponent: (u, version, options) => checkComponent(checks, u, version, options),
    describeCheck: (u, version) => [
      ...platform.describe('status', u),
      `wait up to ${Math.round(platform.connectTimeoutMs / 1000)} s until it runs and its checks pass:`,
      ...describeHostUnitChecks(checks, u, version).map((line) => `  ${line}`),
      'read its log since the start for ERROR lines',
    ],
    async checkSystem(version, leftOut = []) {
      const counted = units.filter((u) => !leftOut.includes(u.name))
      const results: CheckResult[] = []
      for (const u of counted)
        results.push(...(await unitChecks(checks, u, version)).map((r) => ({ ...r, check: `${u.name}: ${r.check}` })))
      const versions: Record<string, string | undefined> = {}
      for (const u of counted) versions[u.name] = await platform.installedVersion(u)
      const wrong = Object.entries(versions).filter(([, v]) => v !== version)
      if (wrong.length)
        results.push({ check: `every component on ${version}`, ok: false, detail: wrong.map(([c, v]) => `${c} ${String(v)}`).join(', ') })
      return { checks: results, data: { versions } }
    },
    describeSystemCheck: (version) => [
      ...units.flatMap((u) => describeHostUnitChecks(checks, u, version).map((line) => `${u.name}: ${line}`)),
      `the installed version of every component${placed.length > 1 ? ' on every host' : ''}`,
    ],
    verifyConfig: (version) => verifyHostConfig(config, version),
    psk: hostPskRotation(config),
    async controllerStatus(version) {
      const results = await unitChecks(checks, controllerUnit, version)
      const failed = results.filter((r) => !r.ok)
      return failed.length
        ? { check: 'the system controller', ok: false, detail: failed.map((r) => `${r.check}: ${r.detail ?? 'no'}`).join('; ') }
        : {
            check: 'the system controller',
            ok: true,
            detail: results.length ? results.map((r) => r.check).join(', ') : 'no check declared for it',
          }
    },
  }
  const controllerUnit = units.find((u) => u.component === 'system-controller') as LiveUnit
  const checks = { live, product, platform, unitUrl, hostOf: on }
  return platform
}
