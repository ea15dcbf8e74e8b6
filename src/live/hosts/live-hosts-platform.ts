/**
 * The live production system on its host (`svcops:live` with a host): the components' packages
 * through the package driver (dpkg, apt, dnf) and their services through the service driver
 * (systemd, supervisor) of src/drivers, on the host's transport; the settings and environment files
 * through it too (live-host-config.ts); the checks over HTTP (live-host-checks.ts). The run lock is
 * a file on the host: one run per live system, wherever svcops runs.
 */
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import type { LiveConfig } from '../../config/schema.ts'
import { BadInputError, errorMessage } from '../../core/errors.ts'
import { runCommand } from '../../core/runner.ts'
import {
  installPackage,
  knownVersionsText,
  packageDriver,
  readInstalledVersion,
  showCommand,
  stagePackage,
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
import { hostPath, transportFor } from '../../drivers/transports.ts'
import { apiPrefix } from '../../releases/versions.ts'
import { componentLog, componentPackage, LIVE_COMPONENTS, type LiveComponentName } from '../layout.ts'
import type { CheckResult } from '../live-judge.ts'
import type { LiveLockPlace, LivePlatform, LiveScope } from '../live-platform.ts'
import type { LiveHost } from './host-files.ts'
import { LIVE_LOCK_PATH } from './live-host-run-store.ts'
import { checkComponent, connectionStatus, controllerStatus } from './live-host-checks.ts'
import {
  backupHostConfig,
  checkHostConfig,
  describeHostConfigBackup,
  describeHostConfigCheck,
  describeHostConfigRestore,
  describeHostConfigWrite,
  findHostBackupMissing,
  restoreHostConfig,
  verifyHostConfig,
  writeHostConfig,
} from './live-host-config.ts'

// The run lock's file on the live host, beside the runs kept there.
export { LIVE_LOCK_PATH } from './live-host-run-store.ts'

/** The live host of an environment, with a transport (connections are lazy). */
export function openLiveHost(live: LiveConfig): LiveHost {
  const config = { url: live.controllerUrl, canary: false, ...live.host }
  return { name: live.host.name, config: live.host, transport: transportFor(config) }
}

/** The run lock of a live system on hosts: a file on its host. */
export function hostLockPlace(live: LiveConfig): LiveLockPlace {
  return { transport: openLiveHost(live).transport, path: hostPath(live.host, LIVE_LOCK_PATH) }
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

/** The platform of a live system on its host: its packages, its services, its files. Nothing connects until used. */
export function openHostsPlatform(scope: LiveScope, host: LiveHost = openLiveHost(scope.live)): LivePlatform {
  const { live, product } = scope
  const pkg: PackageDriver = packageDriver(live.packageDriver)
  const svc: ServiceDriver = serviceDriver(live.serviceDriver)
  const name = (c: LiveComponentName): string => componentPackage(product, c)
  const file = (c: LiveComponentName, v: string): string | undefined => (pkg.name === 'dpkg' ? liveDebFile(live, name(c), v) : undefined)
  const config = { scope, host }
  const controller = live.controllerUrl.replace(/\/+$/, '')
  const platform: LivePlatform = {
    where: host.name,
    connectTimeoutMs: (live.connectTimeoutSeconds ?? 30) * 1000,
    close: () => host.transport.close(),
    hostOf: () => host,
    installedVersion: (c) => readInstalledVersion(pkg, host.transport, host.config, name(c)),
    assertAvailable(c, v) {
      file(c, v)
    },
    describePreflight: () => ({ versionCheck: ' and that their package files exist', more: [] }),
    checkPreflight: () => Promise.resolve(undefined),
    async stage(c, versions) {
      const changed: string[] = []
      for (const v of versions) changed.push(...(await stagePackage(pkg, host.transport, host.config, name(c), v, file(c, v))))
      return changed.length ? { changed } : { skipped: 'both packages already staged' }
    },
    install: (c, v) => installPackage(pkg, host.transport, host.config, name(c), v, file(c, v)),
    stop: (c) => stopService(svc, host.transport, host.config, name(c)),
    async start(c) {
      const cursor = await readLogCursor(svc, host.transport, host.config, name(c), componentLog(product, c))
      // A component that exits at once is judged by the check (status, log), which says why.
      await startService(svc, host.transport, host.config, name(c))
      return cursor
    },
    status: (c) => readServiceStatus(svc, host.transport, host.config, name(c)),
    async errorLines(c, cursor) {
      const lines = await readServiceLogs(svc, host.transport, host.config, name(c), 200, componentLog(product, c), cursor)
      if (cursor) return findLogErrors(lines, ERROR_PATTERNS)
      // Without a position taken before the start, the lines since the running process started.
      const status = await readServiceStatus(svc, host.transport, host.config, name(c))
      return findLogErrors(linesSinceStart(lines, status.status), ERROR_PATTERNS)
    },
    describe(call, c, v) {
      if (call === 'stage') return pkg.stageCommands(host.config, name(c), v ?? '', v ? file(c, v) : undefined).map(showCommand)
      if (call === 'install') return pkg.installCommands(host.config, name(c), v ?? '', v ? file(c, v) : undefined).map(showCommand)
      if (call === 'stop') return [showCommand(svc.stopCommand(host.config, name(c)))]
      if (call === 'start') return [showCommand(svc.startCommand(host.config, name(c)))]
      return [showCommand(svc.statusCommand(host.config, name(c)))]
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
      const reached = await runCommand(host.transport, ['true'], { check: false }).catch((error: unknown) => ({
        code: -1,
        stderr: errorMessage(error),
      }))
      if (reached.code !== 0) return { missing: [`${host.name} cannot be reached: ${reached.stderr.trim() || `exit ${reached.code}`}`] }
      const missing: string[] = []
      for (const [c, v] of Object.entries(previous) as [LiveComponentName, string][]) {
        let deb: string | undefined
        try {
          deb = file(c, v)
        } catch (error) {
          missing.push(errorMessage(error).replace(/\.$/, ''))
          continue
        }
        for (const cmd of pkg.readyCommands(host.config, name(c), v, deb)) {
          const result = await runCommand(host.transport, cmd.argv, { check: false, ...(cmd.env ? { env: cmd.env } : {}) })
          if (result.code !== 0) missing.push(cmd.missing)
        }
      }
      return { missing: [...new Set([...missing, ...(await findHostBackupMissing(config, backup))])] }
    },
    describeRollbackNeeds: (previous) => [
      `${host.name} reachable; the run's copies of the settings and environment files in ${scope.journal.dir}, each matching its checksum`,
      ...LIVE_COMPONENTS.flatMap((c) => {
        const v = previous[c]
        if (!v) return [`the release ${c} ran before the run: not known yet`]
        let deb: string | undefined
        try {
          deb = file(c, v)
        } catch (error) {
          return [`${name(c)} ${v}: ${errorMessage(error)}`]
        }
        return pkg.readyCommands(host.config, name(c), v, deb).map((cmd) => `${name(c)} ${v}: ${showCommand(cmd)}`)
      }),
    ],

    checkComponent: (c, version, options) => checkComponent(checks, c, version, options),
    describeCheck: (c, version) => [
      ...platform.describe('status', c),
      `wait up to ${Math.round(platform.connectTimeoutMs / 1000)} s until it runs and ${c === 'system-controller' ? 'answers on the prefix of ' + version : 'the controller lists it connected as ' + version}`,
      `read its log since the start for ERROR lines; GET /metrics on port ${live.metricsPorts[c]} for the metric names of ${version}`,
    ],
    async checkSystem(version) {
      const results: CheckResult[] = [await controllerStatus(checks, version)]
      for (const c of LIVE_COMPONENTS.filter((x) => x !== 'system-controller')) results.push(await connectionStatus(checks, c, version))
      const versions: Record<string, string | undefined> = {}
      for (const c of LIVE_COMPONENTS) versions[c] = await platform.installedVersion(c)
      const wrong = Object.entries(versions).filter(([, v]) => v !== version)
      if (wrong.length)
        results.push({ check: `every component on ${version}`, ok: false, detail: wrong.map(([c, v]) => `${c} ${String(v)}`).join(', ') })
      return { checks: results, data: { versions } }
    },
    describeSystemCheck: (version) => [
      `GET ${controller}${apiPrefix(version)}/status and ${apiPrefix(version)}/components; the installed version of every component`,
    ],
    verifyConfig: (version) => verifyHostConfig(config, version),
    controllerStatus: (version) => controllerStatus(checks, version),
  }
  const checks = { live, product, platform }
  return platform
}
