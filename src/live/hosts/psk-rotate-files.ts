/**
 * `svcops psk rotate` on hosts: a new PSK written to the system controller's settings file first,
 * then to every connecting component's environment file (and the controller's own, when it sets
 * one), each through the host's transport (contents on stdin, never in argv; 0600, one rename).
 *
 * The old key is never journaled: the backup step keeps the files (0600, in the run folder and on
 * the controller's host: the run's secret store), with their SHA-256 in the journal. That checksum
 * is how a resumed write knows whether this run already wrote the controller: the settings file
 * still as backed up means no new key yet (one is generated); a settings file changed since holds
 * the key this run generated (the controller is written first), which the rest of the files get.
 */
import { createHash } from 'node:crypto'
import { OperationError } from '../../core/errors.ts'
import { assessPsk, generatePsk } from '../../releases/pre-shared-key.ts'
import { pskVariable } from '../../releases/versions.ts'
import type { StepResult } from '../../runs/step.ts'
import { isSpread } from '../live-placement.ts'
import type { PskRotation } from '../live-platform.ts'
import type { LiveBackupData } from '../live-step-data.ts'
import { NEW_PSK_PLACEHOLDER, readConfigState, type ConfigState } from './config-change.ts'
import { envValue, setEnvValue, writeHostFile } from './host-files.ts'
import type { HostConfig } from './live-host-config.ts'

/** One file the rotation writes: on which host, where, and its text after. */
interface RotatedFile {
  host: string
  path: string
  after: string
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex')

/** The settings file as the controller reads it now; one sentence when there is none or it holds no PSK. */
function settingsOf(state: ConfigState, release: string): { path: string; text: string; json: Record<string, unknown> } {
  if (!state.settings)
    throw new OperationError(
      `The system controller's settings file is in none of ${state.searched.join(', ')}; svcops cannot rotate the PSK of ${release}.`,
      'Set live.settingsFile in the stack file to where it is.',
    )
  const json = JSON.parse(state.settings.text) as Record<string, unknown>
  if (typeof json.psk !== 'string')
    throw new OperationError(`The settings file ${state.settings.path} holds no PSK; expected the key ${release} reads there.`)
  return { ...state.settings, json }
}

/** The files with `key`: the settings file first, then every environment file that connects (or sets the variable). */
function rotated(h: HostConfig, state: ConfigState, release: string, key: string): RotatedFile[] {
  const settings = settingsOf(state, release)
  const variable = pskVariable(h.scope.live.prefix)
  const controller = h.hosts.controller.name
  const files: RotatedFile[] = [
    { host: controller, path: settings.path, after: `${JSON.stringify({ ...settings.json, psk: key }, null, 2)}\n` },
  ]
  for (const env of Object.values(state.envs)) {
    // The controller reads its key from the settings file; its environment changes only if it sets one.
    if (env.component === 'system-controller' && envValue(env.text, variable) === undefined) continue
    files.push({ host: env.host, path: env.path, after: setEnvValue(env.text ?? '', variable, key) })
  }
  return files
}

/** The file as people find it: with its host's name when the system is spread over several. */
function shown(h: HostConfig, f: { host: string; path: string }): string {
  return `${isSpread(h.scope.live) ? `${f.host}:` : ''}${f.path}`
}

/** Reads what the rotation needs: the settings file with a PSK, every environment file. */
export async function readPskFiles(h: HostConfig, release: string): Promise<StepResult> {
  const state = await readConfigState(h.scope.live, h.hosts, release, release)
  const files = rotated(h, state, release, NEW_PSK_PLACEHOLDER)
  return { data: { files: files.map((f) => shown(h, f)) } }
}

/** What the check reads, for the dry run. */
export async function describePskFiles(h: HostConfig, release: string): Promise<string[]> {
  const state = await readConfigState(h.scope.live, h.hosts, release, release)
  return [
    `read the settings file (${state.searched.join(', ')}) and every component's environment file; refuse a settings file without a PSK`,
    ...rotated(h, state, release, NEW_PSK_PLACEHOLDER).map((f) => `will hold the new key: ${shown(h, f)}`),
  ]
}

/**
 * The key this run writes: the one it already wrote to the controller (a resumed run), else a new
 * one from the CSPRNG. `backup`: the backup step's data (the settings file's checksum before the run).
 */
function keyOfRun(h: HostConfig, state: ConfigState, release: string, backup: LiveBackupData | undefined): string {
  const settings = settingsOf(state, release)
  const controller = h.hosts.controller.name
  const kept = backup?.files?.find((f) => f.path === settings.path && (f.host ?? controller) === controller)
  if (!kept?.sha256) throw new OperationError(`The run kept no copy of ${settings.path}; svcops does not rotate a key it cannot put back.`)
  const current = settings.json.psk as string
  if (sha256(settings.text) !== kept.sha256 && assessPsk(current).ok) return current
  return generatePsk()
}

/** Writes the new key: the controller's settings file first, then every environment file. Idempotent. */
export async function writeRotatedPsk(h: HostConfig, release: string, backup: LiveBackupData | undefined): Promise<StepResult> {
  const state = await readConfigState(h.scope.live, h.hosts, release, release)
  const key = keyOfRun(h, state, release, backup)
  const hostOf = (name: string) =>
    name === h.hosts.controller.name ? h.hosts.controller : h.hosts.units.find((u) => u.host.name === name)?.host
  const changed: string[] = []
  for (const f of rotated(h, state, release, key)) {
    const host = hostOf(f.host)
    if (!host) throw new OperationError(`The host ${f.host} is not in svcops:live any more.`)
    await writeHostFile(host, f.path, f.after)
    changed.push(`new PSK in ${shown(h, f)}`)
  }
  return { changed, data: { files: changed.length, bits: assessPsk(key).bits } }
}

/** What the write does, for the dry run (the key is never shown: the run generates it). */
export async function describeRotatedPsk(h: HostConfig, release: string): Promise<string[]> {
  const state = await readConfigState(h.scope.live, h.hosts, release, release)
  return [
    'generate a new 256-bit PSK from the CSPRNG (never shown, never in argv, the journal or the report)',
    ...rotated(h, state, release, NEW_PSK_PLACEHOLDER).map(
      (f, i) =>
        `${i === 0 ? 'first ' : ''}write ${shown(h, f)} (0600, one rename): ${i === 0 ? 'psk' : pskVariable(h.scope.live.prefix)} = the new key`,
    ),
  ]
}

/** The rotation on hosts, as the platform offers it. */
export function hostPskRotation(h: HostConfig): PskRotation {
  return {
    check: (release) => readPskFiles(h, release),
    describeCheck: (release) => describePskFiles(h, release),
    write: (release, backup) => writeRotatedPsk(h, release, backup),
    describeWrite: (release) => describeRotatedPsk(h, release),
  }
}
