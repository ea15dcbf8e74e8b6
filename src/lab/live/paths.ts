/**
 * Where things are on a live lab host, and the lab's own variable names, as functions of the
 * product (prefix, folder) and the release. The live playbook and the tests use these, and the
 * emulators themselves, so a path is written once. Paths are the host's (absolute, as on a real
 * host); on a lab host they lie under its root R (`hostPath` in src/drivers/transports.ts).
 * Documented in /work/notes/live-contract.md and docs/lab.md.
 */
import { createHash } from 'node:crypto'
import { settingsFileName, settingsPathFlag, settingsSearchPaths, supportsSettingsPathFlag } from '../../releases/versions.ts'
import type { LiveComponent } from './releases.ts'

/** The product's prefix (`svc`) and folder (`svc`), as in `svcops:product`. */
export interface LiveProduct {
  prefix: string
  dir: string
}

export const DEFAULT_LIVE_PRODUCT: LiveProduct = { prefix: 'svc', dir: 'svc' }

/** The package (and supervisor program) of a component: `svc-system-controller`. */
export function livePackageName(prefix: string, component: LiveComponent): string {
  return `${prefix}-${component}`
}

/** The file name of a component's package of one release in the lab's package directory. */
export function livePackageFile(prefix: string, component: LiveComponent, version: string): string {
  return `${livePackageName(prefix, component)}_${version}_all.deb`
}

/** The files of one component on a host. */
export interface LiveComponentPaths {
  /** The package's code directory. */
  code: string
  /** The program supervisor starts. */
  program: string
  /**
   * The component's environment (the lab's EnvironmentFile: `KEY=VALUE` lines, 0600, written by
   * the operator, not a conffile of the package); read by the program before anything else.
   */
  envFile: string
  /** The supervisor program section the package ships. */
  supervisor: string
  /** The log the component writes; ERROR lines start with `ERROR`. */
  log: string
}

/** Paths of `component` on a host. */
export function liveComponentPaths(product: LiveProduct, component: LiveComponent): LiveComponentPaths {
  const code = `/opt/${product.dir}/${component}`
  return {
    code,
    program: `${code}/main.mjs`,
    envFile: `/etc/default/${livePackageName(product.prefix, component)}`,
    supervisor: `/etc/supervisor/conf.d/${livePackageName(product.prefix, component)}.conf`,
    log: `/var/log/${product.dir}/${component}.log`,
  }
}

/**
 * The system controller's settings directory before 6.0: the seed names only "the former fixed
 * application directories"; the lab's choice is `etc/` inside the controller's code directory.
 */
export function legacySettingsDir(product: LiveProduct): string {
  return `/opt/${product.dir}/system-controller/etc`
}

/** The system controller's working directory (supervisor's `directory=`): searched from 6.0. */
export function controllerWorkingDir(product: LiveProduct): string {
  return `/var/opt/${product.dir}/system-controller`
}

/**
 * The directories a controller of `version` searches for its settings file, in order, as host
 * paths: before 6.0 the lab's former fixed directory only; from 6.0 the `--settings-path`
 * directory when given, then the working directory, then `/etc/opt/<product_dir>`.
 */
export function controllerSettingsDirs(version: string, product: LiveProduct, settingsPath?: string): string[] {
  if (!supportsSettingsPathFlag(version)) return [legacySettingsDir(product)]
  const searched = settingsSearchPaths(version, product.dir).map((d) => (d === '.' ? controllerWorkingDir(product) : d))
  return settingsPath ? [settingsPath, ...searched] : searched
}

/**
 * Where `svcops lab up` puts the settings file for `version` (and where the playbook finds it on a
 * fresh lab): the former fixed directory before 6.0, `/etc/opt/<product_dir>/` from 6.0.
 */
export function liveSettingsFile(version: string, product: LiveProduct): string {
  const dir = supportsSettingsPathFlag(version)
    ? (settingsSearchPaths(version, product.dir).find((d) => d !== '.') ?? '')
    : legacySettingsDir(product)
  return `${dir}/${settingsFileName(product.prefix)}`
}

/** The controller's settings-path flag (`--settings-path`), from the catalog. */
export function liveSettingsPathFlag(): string {
  return settingsPathFlag()
}

/** The lab's variable with the controller's base URL: the same name the Pulumi program gives images. */
export function controllerUrlVariable(prefix: string): string {
  return `${prefix.toUpperCase()}_SYSTEM_CONTROLLER_URL`
}

/**
 * The lab's variable with the name an instance connects to the controller as, when the system is
 * spread over several hosts (`live-2/ingest`); without it, the component's own name.
 */
export function instanceNameVariable(prefix: string): string {
  return `${prefix.toUpperCase()}_INSTANCE_NAME`
}

/** The lab's variable with the port of a component's `/metrics` and `/health`. */
export function metricsPortVariable(prefix: string): string {
  return `${prefix.toUpperCase()}_METRICS_PORT`
}

/**
 * The lab's variable naming the metric a connecting component exposes for its connection to the
 * controller (1 or 0); without it `svc_controller_connected`. The seed names no such metric: a
 * site's components may call it otherwise, and its stack declares the name (`svcops:live.checks`).
 */
export function connectedMetricVariable(prefix: string): string {
  return `${prefix.toUpperCase()}_CONNECTED_METRIC`
}

/** The lab's variable in the controller's environment file whose words are added to its arguments. */
export function controllerArgsVariable(prefix: string): string {
  return `${prefix.toUpperCase()}_SC_ARGS`
}

/** The header a component sends its PSK in when it connects (the lab's transport choice): `X-Svc-Psk`. */
export function pskHeader(prefix: string): string {
  return `X-${prefix.charAt(0).toUpperCase()}${prefix.slice(1)}-Psk`
}

/**
 * The UUID the lab's controller gives an instance (by the name it connects as: `ingest`, or
 * `live-2/ingest` across hosts): derived from the name, so `lab up` writes it into
 * `svcops:live.uuids` before the instance has connected, as a site copies it from its controller.
 */
export function labInstanceUuid(name: string): string {
  const h = createHash('sha256').update(`svcops-lab-instance:${name}`).digest('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`
}
