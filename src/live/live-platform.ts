/**
 * How the live playbook reaches the components: a small interface (install a version, stop,
 * start, status, the log since a start) so that another platform can be added beside the hosts
 * one — the Kubernetes driver moves the version in the stack file and runs `pulumi up` behind the
 * same five calls. `hostsPlatform` is the one for hosts: the package driver (dpkg, apt, dnf) and
 * the service driver (systemd, supervisor) of src/drivers, on the host's transport.
 */
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import type { LiveConfig } from '../config/schema.ts'
import { BadInputError } from '../core/errors.ts'
import { installPackage, packageDriver, readInstalledVersion, showCommand, stagePackage, type PackageDriver } from '../drivers/packages.ts'
import {
  findLogErrors,
  readLogCursor,
  readServiceLogs,
  readServiceStatus,
  serviceDriver,
  startService,
  stopService,
  type ServiceDriver,
} from '../drivers/services.ts'
import type { LiveHost } from './hosts/host-files.ts'
import { componentLog, componentPackage, productOf, type LiveComponentName, type LiveProduct } from './layout.ts'

/** What the playbook asks of a platform, per component. */
export interface LivePlatform {
  /** The installed version, or undefined when the component is not installed. */
  installedVersion(component: LiveComponentName): Promise<string | undefined>
  /** Refuses (bad input, naming what is missing) a version whose package cannot be found where the platform takes it from. */
  assertAvailable(component: LiveComponentName, version: string): void
  /** Makes `version` available without installing it (nothing stops for a download). */
  stage(component: LiveComponentName, version: string): Promise<string[]>
  /** Installs exactly `version` (up or down). */
  install(component: LiveComponentName, version: string): Promise<void>
  stop(component: LiveComponentName): Promise<void>
  /** Starts the component; returns a position in its log (lines after it are this start's). */
  start(component: LiveComponentName): Promise<string | undefined>
  status(component: LiveComponentName): Promise<{ running: boolean; status: string }>
  /** Error lines the component logged since `cursor` (its last lines when unknown). */
  errorLines(component: LiveComponentName, cursor: string | undefined): Promise<string[]>
  /** The exact commands of each call, for the dry run. */
  describe(call: 'stage' | 'install' | 'stop' | 'start' | 'status', component: LiveComponentName, version?: string): string[]
}

/** Lines of a component's log that count as errors: the product writes ERROR at their start. */
const ERROR_PATTERNS = ['^ERROR\\b', '\\bERROR\\b', '\\bFATAL\\b']

/** The `.deb` of a component's version in the live section's package directory; bad input naming what is missing. */
export function liveDebFile(live: LiveConfig, pkg: string, version: string): string {
  const dir = live.packageDir
  if (!dir) throw new BadInputError(`live.packageDir: missing; the dpkg driver needs the directory holding ${pkg}_${version}_*.deb.`)
  if (!existsSync(dir)) throw new BadInputError(`live.packageDir: the directory '${dir}' does not exist.`)
  const found = readdirSync(dir).find((f) => f.startsWith(`${pkg}_${version}_`) && f.endsWith('.deb'))
  if (!found)
    throw new BadInputError(
      `live.packageDir: version ${version} of ${pkg} is not in ${dir}; expected a file ${pkg}_${version}_<arch>.deb.`,
      `List the available versions with: ls ${dir}`,
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

/** The platform of a live system on a host: its packages and its services. */
export function hostsPlatform(live: LiveConfig, host: LiveHost): LivePlatform {
  const product: LiveProduct = productOf(live)
  const pkg: PackageDriver = packageDriver(live.packageDriver)
  const svc: ServiceDriver = serviceDriver(live.serviceDriver)
  const name = (c: LiveComponentName): string => componentPackage(product, c)
  const file = (c: LiveComponentName, v: string): string | undefined => (pkg.name === 'dpkg' ? liveDebFile(live, name(c), v) : undefined)
  return {
    installedVersion: (c) => readInstalledVersion(pkg, host.transport, host.config, name(c)),
    assertAvailable(c, v) {
      file(c, v)
    },
    stage: (c, v) => stagePackage(pkg, host.transport, host.config, name(c), v, file(c, v)),
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
  }
}
