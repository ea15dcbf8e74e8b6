/**
 * What svcops changes in the live system's files itself when it crosses majors, computed from the
 * catalog's effects and the files on the host — never by comparing versions by hand:
 *  - the PSK: a new one when the target needs one and there is none (2.0), or when the current one
 *    fails the entropy check the target enforces (6.0); written to the settings file and to every
 *    connecting component's environment together;
 *  - the settings file moved to /etc/opt/<product_dir> when the target no longer reads it where it is (6.0);
 *  - SVC_TCP_ENDPOINTS renamed SVC_TCP_ENDPOINT, which takes one endpoint: several are refused,
 *    naming them, unless `--tcp-endpoint` picks one of them.
 * The plan is pure (the same for the dry run and the run); a resumed run computes it again from
 * the files as they are and finds nothing left to do.
 */
import { BadInputError, OperationError } from '../../core/errors.ts'
import { registerSecret } from '../../core/redact.ts'
import { pathOnHost } from '../../drivers/transports.ts'
import { listEndpoints } from '../../releases/env.ts'
import { assessPsk } from '../../releases/pre-shared-key.ts'
import {
  pskEntropyEnforced,
  pskRequired,
  pskVariable,
  settingsFileName,
  tcpEndpointSingleValue,
  tcpEndpointVariable,
} from '../../releases/versions.ts'
import type { LiveConfig } from '../../config/schema.ts'
import { envValue, readHostFile, registerEnvSecrets, removeEnvKey, setEnvValue, type LiveHost } from './host-files.ts'
import {
  envFileOf,
  controllerArgsVariable,
  controllerSettingsDirs,
  etcSettingsDir,
  productOf,
  settingsFileIn,
  settingsPathArgument,
  type LiveComponentName,
} from '../layout.ts'
import { changesWithEffect } from '../../releases/live.ts'
import type { LiveUnit } from '../live-placement.ts'

/** A unit's environment file as it is on its host. */
export interface UnitEnv {
  component: LiveComponentName
  /** The name of the host it is on. */
  host: string
  path: string
  text: string | undefined
}

/** The live system's files as they are on its hosts. */
export interface ConfigState {
  /** The settings file the controller reads now (or a run before this one moved it to). */
  settings: { path: string; text: string } | undefined
  /** Where svcops looked for it. */
  searched: string[]
  /** The `--settings-path` directory in the controller's arguments, if any. */
  settingsPath: string | undefined
  /** The environment file of every unit, by the unit's name (`ingest` on one host, `live-2/ingest` across hosts). */
  envs: Record<string, UnitEnv>
}

/** Where the files are: the system controller's host (the settings file) and each unit's host (its environment file). */
export interface ConfigHosts {
  controller: LiveHost
  units: Array<{ unit: LiveUnit; host: LiveHost }>
}

/** One file's change on a host: its text before and after (undefined: absent), and why, in words without secrets. */
export interface FileChange {
  /** The name of the host the file is on. */
  host: string
  path: string
  before: string | undefined
  after: string | undefined
  why: string[]
}

export interface ConfigPlan {
  changes: FileChange[]
  /** Set when svcops generates a new PSK: why. */
  newPsk?: string
  /** Set when the settings file moves. */
  moved?: { from: string; to: string }
  /** Set when the TCP endpoint variable is renamed. */
  tcp?: { from: string; to: string; endpoint: string }
}

function parseSettings(text: string, path: string): Record<string, unknown> {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    throw new OperationError(`The settings file ${path} is not valid JSON; expected the system controller's settings.`)
  }
  if (!json || typeof json !== 'object' || Array.isArray(json))
    throw new OperationError(`The settings file ${path} is not a JSON object; expected the system controller's settings.`)
  const psk = (json as { psk?: unknown }).psk
  if (psk !== undefined && typeof psk !== 'string') throw new OperationError(`The settings file ${path}: psk is not a string.`)
  if (typeof psk === 'string') registerSecret(psk)
  return json as Record<string, unknown>
}

/**
 * Reads the settings file (on the controller's host) and every unit's environment file (on its
 * host). The settings file is looked for where the installed release reads it, then where `to`
 * reads it (a run killed after moving it). Every PSK read is registered for redaction before
 * anything could print it.
 */
export async function readConfigState(live: LiveConfig, hosts: ConfigHosts, from: string, to: string): Promise<ConfigState> {
  const product = productOf(live)
  const psk = pskVariable(live.prefix)
  const host = hosts.controller
  const envs: ConfigState['envs'] = {}
  for (const { unit, host: on } of hosts.units) {
    const path = envFileOf(live, unit.component)
    const text = await readHostFile(on, path)
    registerEnvSecrets(text, (k) => k === psk)
    envs[unit.name] = { component: unit.component, host: unit.host, path, text }
  }
  // The controller's own argument: on a lab host it may already lie under the root, which hostPath
  // adds again when the file is read; the host's name of it is what every path here is.
  const controllerEnv = Object.values(envs).find((e) => e.component === 'system-controller')
  const argument = settingsPathArgument(envValue(controllerEnv?.text, controllerArgsVariable(product)))
  const settingsPath = argument === undefined ? undefined : pathOnHost(host.config, argument)
  const searched = [
    ...new Set([
      ...(live.settingsFile ? [live.settingsFile] : []),
      ...[...controllerSettingsDirs(live, from, settingsPath), ...controllerSettingsDirs(live, to, settingsPath)].map((d) =>
        settingsFileIn(live, d),
      ),
    ]),
  ]
  for (const path of searched) {
    const text = await readHostFile(host, path)
    if (text === undefined) continue
    parseSettings(text, path)
    return { settings: { path, text }, searched, settingsPath, envs }
  }
  return { settings: undefined, searched, settingsPath, envs }
}

function dirOf(path: string): string {
  return path.replace(/\/[^/]+$/, '') || '/'
}

/**
 * The changes an upgrade from `from` to `to` makes to the files of `state`. `newPsk` makes the new
 * key (the run generates one; the dry run shows a placeholder). Several TCP endpoints where the
 * target takes one are refused (bad input, nothing changed) unless `tcpEndpoint` names one of them.
 */
export function planConfig(
  live: LiveConfig,
  state: ConfigState,
  from: string,
  to: string,
  options: { newPsk: () => string; tcpEndpoint?: string | undefined },
): ConfigPlan {
  const product = productOf(live)
  const plan: ConfigPlan = { changes: [] }
  const file = settingsFileName(live.prefix)
  const units = Object.keys(state.envs)
  const envAfter = Object.fromEntries(units.map((u) => [u, state.envs[u]?.text ?? ''])) as Record<string, string>
  const envWhy = Object.fromEntries(units.map((u) => [u, [] as string[]])) as Record<string, string[]>

  // The TCP control panel variable of every rendering engine.
  const oldVar = tcpEndpointVariable(from, live.prefix)
  const newVar = tcpEndpointVariable(to, live.prefix)
  for (const unit of units.filter((u) => state.envs[u]?.component === 'pipeline')) {
    const pipelineEnv = state.envs[unit] as UnitEnv
    const oldValue = envValue(pipelineEnv.text, oldVar)
    if (oldVar === newVar || oldValue === undefined) continue
    const endpoints = listEndpoints(oldValue)
    const rule = changesWithEffect('env-rename').find((c) => c.effect.from.endsWith('_TCP_ENDPOINTS'))?.release ?? to
    let endpoint = endpoints.join(',')
    if (tcpEndpointSingleValue(to) && endpoints.length > 1) {
      if (!options.tcpEndpoint)
        throw new BadInputError(
          `${pipelineEnv.path}: ${oldVar} lists ${endpoints.length} endpoints (${endpoints.join(', ')}), but from ${rule} the rendering engine reads ${newVar}, which takes exactly one endpoint that accepts many connections; expected one endpoint.`,
          `Keep one of them: --tcp-endpoint ${endpoints[0] ?? 'HOST:PORT'}`,
        )
      if (!endpoints.includes(options.tcpEndpoint))
        throw new BadInputError(
          `--tcp-endpoint: '${options.tcpEndpoint}' is not one of the endpoints of ${oldVar} in ${pipelineEnv.path}; expected one of ${endpoints.join(', ')}.`,
        )
      endpoint = options.tcpEndpoint
    }
    envAfter[unit] = setEnvValue(removeEnvKey(envAfter[unit] ?? '', oldVar), newVar, endpoint)
    envWhy[unit]?.push(`${oldVar} renamed ${newVar} (${endpoint})`)
    plan.tcp = { from: oldVar, to: newVar, endpoint }
  }

  // The settings file (on the controller's host): its PSK, and where the target reads it.
  const settings = state.settings
  const on = Object.values(state.envs).find((e) => e.component === 'system-controller')?.host ?? ''
  if (!settings) {
    if (pskRequired(to))
      throw new OperationError(
        `The system controller's settings file ${file} is in none of ${state.searched.join(', ')}; svcops cannot write the PSK ${to} needs.`,
        'Set live.settingsFile in the stack file to where it is.',
      )
  } else {
    const json = parseSettings(settings.text, settings.path)
    let text = settings.text
    const why: string[] = []
    const current = typeof json.psk === 'string' ? json.psk : undefined
    let psk = current
    if (pskRequired(to)) {
      const weak = current !== undefined && pskEntropyEnforced(to) && !assessPsk(current).ok
      if (current === undefined || weak) {
        psk = options.newPsk() // generatePsk registers it for redaction; the dry run's placeholder is shown
        const since = changesWithEffect(weak ? 'psk-entropy-enforced' : 'psk-required')[0]?.release ?? to
        plan.newPsk = weak
          ? `the PSK fails the entropy check the system controller enforces from ${since}`
          : `there is no PSK, and every component needs one from ${since}`
        text = `${JSON.stringify({ ...json, psk }, null, 2)}\n`
        why.push(`new PSK: ${plan.newPsk}`)
      }
      const variable = pskVariable(live.prefix)
      for (const u of units) {
        // The controller reads its key from the settings file; its environment is aligned only if it sets one.
        const text = envAfter[u] ?? ''
        if (state.envs[u]?.component === 'system-controller' && envValue(text, variable) === undefined) continue
        if (psk !== undefined && envValue(text, variable) !== psk) {
          envAfter[u] = setEnvValue(text, variable, psk)
          envWhy[u]?.push(`${variable} set to the controller's PSK`)
        }
      }
    }
    const readBy = controllerSettingsDirs(live, to, state.settingsPath)
    const target = readBy.includes(dirOf(settings.path)) ? settings.path : settingsFileIn(live, etcSettingsDir(product))
    if (target !== settings.path) {
      plan.moved = { from: settings.path, to: target }
      why.push(`moved from ${dirOf(settings.path)}: ${to} reads it only from ${readBy.join(', ')}`)
      plan.changes.push({ host: on, path: target, before: undefined, after: text, why })
      plan.changes.push({ host: on, path: settings.path, before: settings.text, after: undefined, why: [`moved to ${target}`] })
    } else if (text !== settings.text) {
      plan.changes.push({ host: on, path: settings.path, before: settings.text, after: text, why })
    }
  }

  for (const [u, env] of Object.entries(state.envs)) {
    const after = envAfter[u] ?? ''
    if (after !== (env.text ?? '')) plan.changes.push({ host: env.host, path: env.path, before: env.text, after, why: envWhy[u] ?? [] })
  }
  // Written in this order: the settings file where it goes, the environments, then the old settings file removed.
  plan.changes.sort((a, b) => Number(a.after === undefined) - Number(b.after === undefined))
  return plan
}

/** The placeholder the dry run shows for a PSK the run would generate. */
export const NEW_PSK_PLACEHOLDER = '<new PSK: 256 bits from the CSPRNG, generated by the run>'
