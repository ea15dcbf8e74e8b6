/**
 * Where the live production system's parts are on a host, as functions of the product (prefix,
 * folder) and the release: packages and services of the components, their environment files and
 * logs, and the directories the system controller reads its settings file from (the metric names
 * each component exposes are the catalog's: `liveMetricNames` in src/releases/versions.ts). Host
 * paths are absolute as on a real host; on a lab host they lie under its root (`hostPath`). The
 * lab's packages (src/lab/live) install to the same layout.
 */
import type { LiveConfig } from '../config/schema.ts'
import type { LiveComponentName } from '../releases/types.ts'
import { settingsFileName, settingsPathFlag, settingsSearchPaths, supportsSettingsPathFlag } from '../releases/versions.ts'

// The components of the live production system, in dependency order (the controller first): the catalog's.
export { LIVE_COMPONENTS, type LiveComponentName } from '../releases/types.ts'

/** The product as the live section names it. */
export interface LiveProduct {
  prefix: string
  dir: string
}

export function productOf(live: Pick<LiveConfig, 'prefix' | 'productDir'>): LiveProduct {
  return { prefix: live.prefix, dir: live.productDir }
}

/** The package, and the service (systemd unit or supervisor program), of a component: `svc-ingest`. */
export function componentPackage(product: LiveProduct, component: LiveComponentName): string {
  return `${product.prefix}-${component}`
}

/** The component's environment file (an EnvironmentFile of `KEY=VALUE` lines, 0600). */
export function componentEnvFile(product: LiveProduct, component: LiveComponentName): string {
  return `/etc/default/${componentPackage(product, component)}`
}

/** The environment file of a component type on its hosts: `live.envFiles` where the stack gives one, else `/etc/default/<prefix>-<component>`. */
export function envFileOf(
  live: { prefix: string; productDir: string; envFiles?: Partial<Record<LiveComponentName, string>> | undefined },
  component: LiveComponentName,
): string {
  return live.envFiles?.[component] ?? componentEnvFile(productOf(live), component)
}

/** The log the component writes. */
export function componentLog(product: LiveProduct, component: LiveComponentName): string {
  return `/var/log/${product.dir}/${component}.log`
}

/** The system controller's working directory (searched for the settings file from 6.0). */
export function controllerWorkingDir(product: LiveProduct): string {
  return `/var/opt/${product.dir}/system-controller`
}

/** The directory of the settings file before 6.0: the seed's "former fixed application directory". */
export function legacySettingsDir(live: Pick<LiveConfig, 'legacySettingsDir' | 'productDir'>): string {
  return live.legacySettingsDir ?? `/opt/${live.productDir}/system-controller/etc`
}

/** The directory svcops moves the settings file to before a controller that no longer reads the old one starts. */
export function etcSettingsDir(product: LiveProduct): string {
  return `/etc/opt/${product.dir}`
}

/** The variable of the controller's environment file holding its extra arguments (`--settings-path DIR`). */
export function controllerArgsVariable(product: LiveProduct): string {
  return `${product.prefix.toUpperCase()}_SC_ARGS`
}

/** The `--settings-path` directory given in the controller's arguments, if any. */
export function settingsPathArgument(args: string | undefined): string | undefined {
  const words = (args ?? '').split(/\s+/).filter(Boolean)
  const flag = settingsPathFlag()
  for (const [i, w] of words.entries()) {
    if (w === flag) return words[i + 1]
    if (w.startsWith(`${flag}=`)) return w.slice(flag.length + 1)
  }
  return undefined
}

/**
 * The directories a controller of `version` reads its settings file from, in order: before 6.0 the
 * former fixed directory; from 6.0 the `--settings-path` directory when given, its working
 * directory, and /etc/opt/<product_dir>.
 */
export function controllerSettingsDirs(live: LiveConfig, version: string, settingsPath?: string): string[] {
  const product = productOf(live)
  if (!supportsSettingsPathFlag(version)) return [legacySettingsDir(live)]
  const searched = settingsSearchPaths(version, product.dir).map((d) => (d === '.' ? controllerWorkingDir(product) : d))
  return settingsPath && supportsSettingsPathFlag(version) ? [settingsPath, ...searched] : searched
}

/** The settings file in a directory. */
export function settingsFileIn(live: LiveConfig, dir: string): string {
  return `${dir.replace(/\/+$/, '')}/${settingsFileName(live.prefix)}`
}

/**
 * Every place a settings file of this product may be, for backups and discovery: the configured
 * file, /etc/opt/<product_dir>, the working directory and the former fixed directory.
 */
export function settingsCandidates(live: LiveConfig, settingsPath?: string): string[] {
  const product = productOf(live)
  const dirs = [settingsPath, etcSettingsDir(product), controllerWorkingDir(product), legacySettingsDir(live)].filter(
    (d): d is string => !!d,
  )
  const files = [live.settingsFile, ...dirs.map((d) => settingsFileIn(live, d))].filter((f): f is string => !!f)
  return [...new Set(files)]
}

/** Components in the order they stop: the reverse of the dependency order. */
export function stopOrder<T>(components: readonly T[]): T[] {
  return [...components].reverse()
}
