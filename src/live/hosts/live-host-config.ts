/**
 * The live system's configuration on its hosts: the settings file (on the system controller's
 * host) and every instance's environment file (on its host), read, kept, written and put back
 * through each host's transport. The change itself is the
 * pure plan of config-change.ts (the same for the dry run and the run); every file kept in the run
 * folder is 0600 with its SHA-256 in the journal (never its content, which holds the PSK).
 */
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { BadInputError, OperationError, errorMessage } from '../../core/errors.ts'
import { redact } from '../../core/redact.ts'
import { hostPath } from '../../drivers/transports.ts'
import { assessPsk, generatePsk } from '../../releases/pre-shared-key.ts'
import { pskEntropyEnforced, pskRequired, pskVariable } from '../../releases/versions.ts'
import type { StepResult } from '../../runs/step.ts'
import type { LiveConfig } from '../../config/schema.ts'
import { controllerSettingsDirs, envFileOf, settingsCandidates } from '../layout.ts'
import type { CheckResult } from '../live-judge.ts'
import { isSpread, liveUnits } from '../live-placement.ts'
import type { LiveScope } from '../live-platform.ts'
import type { BackedUpFile, LiveBackupData } from '../live-step-data.ts'
import { NEW_PSK_PLACEHOLDER, planConfig, readConfigState, type ConfigHosts, type ConfigPlan } from './config-change.ts'
import { LIVE_RUNS_PATH } from './live-host-run-store.ts'
import { envValue, fileDiff, readHostFile, removeHostFile, writeHostFile, type LiveHost } from './host-files.ts'

/** The live system's configuration on its hosts for one run. */
export interface HostConfig {
  scope: LiveScope
  /** The controller's host (the settings file) and each unit's (its environment file). */
  hosts: ConfigHosts
}

/** Backed-up files as the journal records them (never their content): live-step-data.ts's shape. */
type BackedUp = BackedUpFile

/** The run folder's name of a host's file: by host too when the system is spread over several. */
function backupName(h: HostConfig, host: LiveHost, path: string): string {
  const flat = path.replace(/^\/+/, '').replaceAll('/', '__')
  return isSpread(h.scope.live) ? `backup/${host.name}__${flat}` : `backup/${flat}`
}

/** A file on a host. */
interface HostFile {
  host: LiveHost
  path: string
}

/** The host named `name` (the controller's when none is named: records of one host). */
function hostNamed(h: HostConfig, name: string | undefined): LiveHost {
  if (name === undefined || name === h.hosts.controller.name) return h.hosts.controller
  const found = h.hosts.units.find((u) => u.host.name === name)?.host
  if (!found) throw new OperationError(`The host ${name} the run recorded is not in svcops:live.hosts any more.`)
  return found
}

/** The file as people find it: the host's path, with the host's name when the system is spread over several. */
function shownFile(h: HostConfig, host: LiveHost, path: string): string {
  return `${isSpread(h.scope.live) ? `${host.name}:` : ''}${hostPath(host.config, path)}`
}

/**
 * Every configuration file a run may touch, by the name of its host, from the stack and the release
 * knowledge alone: the settings file wherever a release reads it (the configured file, the
 * /etc/opt directory, the working directory, the former fixed directory; on the system controller's
 * host), and each unit's environment file (on its host). The backup copies exactly these, and a
 * rollback puts back or removes nothing else, whatever a journal says.
 */
export function configFilesOf(live: LiveConfig): Array<{ host: string; path: string }> {
  const units = liveUnits(live)
  const controller = units.find((u) => u.component === 'system-controller')?.host ?? units[0]?.host ?? ''
  const settings = settingsCandidates(live).map((path) => ({ host: controller, path }))
  const envs = units.map((u) => ({ host: u.host, path: envFileOf(live, u.component) }))
  return [...settings, ...envs].filter((f, i, all) => all.findIndex((g) => g.host === f.host && g.path === f.path) === i)
}

/** Every file a run may touch (`configFilesOf`), each on its host. */
function touchedPaths(h: HostConfig): HostFile[] {
  return configFilesOf(h.scope.live).map((f) => ({ host: hostNamed(h, f.host), path: f.path }))
}

/** The configuration change of this run, computed from the host's files (with a placeholder PSK in the dry run). */
async function configPlan(h: HostConfig, from: string, to: string, newPsk: () => string): Promise<ConfigPlan> {
  const { live, journal } = h.scope
  const state = await readConfigState(live, h.hosts, from, to)
  return planConfig(live, state, from, to, { newPsk, tcpEndpoint: journal.run.params.tcpEndpoint })
}

/** Reads the files and computes the change: what svcops cannot change for people is refused here. */
export async function checkHostConfig(h: HostConfig, from: string, to: string): Promise<StepResult> {
  const plan = await configPlan(h, from, to, () => NEW_PSK_PLACEHOLDER)
  return { data: { files: plan.changes.map((c) => c.path) } }
}

/** What the check of the files reads and refuses, for the dry run. */
export function describeHostConfigCheck(h: HostConfig): string[] {
  const envs = h.hosts.units.map(({ unit, host }) => shownFile(h, host, envFileOf(h.scope.live, unit.component)))
  return [
    `read ${settingsCandidates(h.scope.live)
      .map((p) => shownFile(h, h.hosts.controller, p))
      .join(', ')} and ${envs.join(', ')}`,
    'refuse several TCP endpoints where the target takes one, and a missing settings file where the target needs a PSK',
  ]
}

/** The host's copy of a run's backed-up file, beside the run's record (live-host-run-store.ts). */
function hostBackupPath(runId: string, name: string): string {
  return `${LIVE_RUNS_PATH}/${runId}.${name.replace(/^backup\//, 'backup/')}`
}

/** Copies every file the run may touch into the run folder (0600); the journal records path, existence and checksum. */
export async function backupHostConfig(h: HostConfig): Promise<StepResult> {
  const { journal } = h.scope
  mkdirSync(journal.file('backup'), { recursive: true, mode: 0o700 })
  const files: BackedUp[] = []
  const spread = isSpread(h.scope.live)
  for (const { host, path } of touchedPaths(h)) {
    const on = spread ? { host: host.name } : {}
    const text = await readHostFile(host, path)
    if (text === undefined) {
      files.push({ ...on, path, existed: false })
      continue
    }
    const name = backupName(h, host, path)
    writeFileSync(journal.file(name), text, { mode: 0o600 })
    // A copy on the controller's host beside the run's record (0600): a rollback from another machine puts it back.
    await writeHostFile(h.hosts.controller, hostBackupPath(journal.run.id, name), text)
    files.push({ ...on, path, existed: true, backup: name, sha256: createHash('sha256').update(text).digest('hex') })
  }
  const kept = files.filter((f) => f.existed)
  return { changed: kept.map((f) => `backed up ${f.host ? `${f.host}:` : ''}${f.path}`), data: { files } }
}

/** The bytes the backup step copies to the controller's host (`hostBackupPath`, under LIVE_RUNS_PATH): the files that exist. */
export async function readBackupBytes(h: HostConfig): Promise<number> {
  let bytes = 0
  for (const { host, path } of touchedPaths(h)) {
    const text = await readHostFile(host, path)
    if (text !== undefined) bytes += Buffer.byteLength(text)
  }
  return bytes
}

/** Which files the backup copies where, for the dry run. */
export function describeHostConfigBackup(h: HostConfig): string[] {
  return [
    `copy ${touchedPaths(h)
      .map((f) => shownFile(h, f.host, f.path))
      .join(', ')} (those that exist) to ${h.scope.journal.file('backup')}/ with mode 0600`,
  ]
}

/** The file changes as diffs, secrets masked. */
function showChanges(h: HostConfig, plan: ConfigPlan): string[] {
  if (!plan.changes.length) return ['nothing to change: the files already suit the target']
  return plan.changes.flatMap((ch) => {
    const file = shownFile(h, hostNamed(h, ch.host), ch.path)
    return [
      `${ch.after === undefined ? 'remove' : 'write'} ${file}${ch.after === undefined ? '' : ' (0600)'}${ch.why.length ? `: ${ch.why.join('; ')}` : ''}`,
      ...fileDiff(file, ch.before, ch.after, redact).map((l) => `    ${l}`),
    ]
  })
}

/** Writes the plan: the settings file where the target reads it first, then the environments, then the old settings file removed. */
export async function writeHostConfig(h: HostConfig, from: string, to: string): Promise<StepResult> {
  const plan = await configPlan(h, from, to, () => generatePsk())
  for (const ch of plan.changes) {
    if (ch.after === undefined) await removeHostFile(hostNamed(h, ch.host), ch.path)
    else await writeHostFile(hostNamed(h, ch.host), ch.path, ch.after)
  }
  if (!plan.changes.length) return { skipped: 'the files already suit the target' }
  const spread = isSpread(h.scope.live)
  return {
    changed: plan.changes.map(
      (ch) =>
        `${ch.after === undefined ? 'removed' : 'wrote'} ${spread ? `${ch.host}:` : ''}${ch.path}${ch.why.length ? `: ${ch.why.join('; ')}` : ''}`,
    ),
    data: {
      ...(plan.newPsk ? { newPsk: plan.newPsk } : {}),
      ...(plan.moved ? { moved: plan.moved } : {}),
      ...(plan.tcp ? { tcp: plan.tcp } : {}),
    },
  }
}

/** The files the run would write or remove, as diffs with the PSK masked, for the dry run. */
export async function describeHostConfigWrite(h: HostConfig, from: string, to: string): Promise<string[]> {
  return showChanges(h, await configPlan(h, from, to, () => NEW_PSK_PLACEHOLDER))
}

/**
 * Why the rollback refuses the backup step's entry for file `f`, or undefined when it may follow
 * it: on a host the stack names, a file of `configFilesOf` there (so no other path, and no `..`),
 * and for a file that existed a copy in the run's own backup folder with its checksum (the shape,
 * live-step-data.ts, is checked before: the name is plain, the checksum present).
 */
function refusalOf(live: LiveConfig, controller: string, f: BackedUp): string | undefined {
  const host = f.host ?? controller
  const allowed = configFilesOf(live)
  if (!allowed.some((a) => a.host === host)) return `the host '${host}' is not one svcops:live names`
  if (!allowed.some((a) => a.host === host && a.path === f.path))
    return `the path '${f.path}' is not a settings or environment file the stack defines on ${host}`
  if (f.existed && (f.backup === undefined || f.sha256 === undefined))
    return 'a file that existed has no copy and checksum to restore it from'
  return undefined
}

/**
 * The files the backup step recorded, each checked against the stack before the rollback follows
 * any of them; undefined when it kept none. One entry outside what the stack defines refuses the
 * whole rollback with one sentence naming it (a journal kept on a host can be written by others).
 */
export function assertRestorable(live: LiveConfig, runId: string, backup: LiveBackupData | undefined): BackedUp[] | undefined {
  const files = backup?.files
  if (!files) return undefined
  const controller = configFilesOf(live)[0]?.host ?? ''
  for (const [i, f] of files.entries()) {
    const why = refusalOf(live, controller, f)
    if (why)
      throw new BadInputError(
        `Run ${runId}: the journal's entry of step backup is refused: files.${i} (${f.host ? `${f.host}:` : ''}${f.path}): ${why}; svcops does not follow it.`,
        `Look at the run: svcops runs show ${runId} (its journal was changed by something other than svcops); nothing was restored or removed.`,
      )
  }
  return files
}

/** The files the backup step recorded (its checked journal data), or undefined when it kept none. */
function backedUp(h: HostConfig, backup: LiveBackupData | undefined): BackedUp[] | undefined {
  return assertRestorable(h.scope.live, h.scope.journal.run.id, backup)
}

/** What the restore would miss: the run's copy of a backed-up file gone, or changed since the run wrote it. */
export async function findHostBackupMissing(h: HostConfig, backup: LiveBackupData | undefined): Promise<string[]> {
  const files = backedUp(h, backup)
  if (!files) return []
  const { journal } = h.scope
  const missing: string[] = []
  for (const f of files.filter((x) => x.existed)) {
    const local = journal.file(f.backup ?? '')
    // A run continued on another machine has no local backup: the host's copy counts, as the restore takes it.
    const text = existsSync(local)
      ? readFileSync(local, 'utf8')
      : await readHostFile(h.hosts.controller, hostBackupPath(journal.run.id, f.backup ?? ''))
    if (text === undefined) {
      missing.push(`the run's copy of ${f.path} is neither in ${journal.dir} nor on ${h.hosts.controller.name}`)
      continue
    }
    if (createHash('sha256').update(text).digest('hex') !== f.sha256)
      missing.push(`the run's copy of ${f.path} does not match its checksum`)
  }
  return missing
}

/** The run's copy of backed-up file `f`, checked against its checksum; the local run folder's, or the controller host's. */
async function readCopy(h: HostConfig, f: BackedUp & { backup: string; sha256: string }): Promise<string> {
  const { journal } = h.scope
  const local = journal.file(f.backup)
  // A run continued on another machine has no local backup: the host's copy counts, checked the same.
  const text = existsSync(local)
    ? readFileSync(local, 'utf8')
    : await readHostFile(h.hosts.controller, hostBackupPath(journal.run.id, f.backup))
  if (text === undefined)
    throw new OperationError(`The backup of ${f.path} is neither in ${journal.dir} nor on ${h.hosts.controller.name}.`)
  if (createHash('sha256').update(text).digest('hex') !== f.sha256)
    throw new OperationError(
      `The backup of ${f.path} in ${journal.dir} does not match its checksum; it was changed after the run wrote it.`,
    )
  return text
}

/**
 * Puts every backed-up file back (a file that did not exist is removed). Every copy is read and
 * checked against its checksum before the first file is written: a bad copy changes nothing.
 */
export async function restoreHostConfig(h: HostConfig, backup: LiveBackupData | undefined): Promise<StepResult> {
  const files = backedUp(h, backup)
  if (!files) return { skipped: 'the run backed up nothing: no file was changed' }
  const copies: Array<{ f: BackedUp; text: string | undefined }> = []
  for (const f of files) {
    const { backup: name, sha256 } = f
    // assertRestorable requires both for a file that existed.
    copies.push({ f, text: f.existed && name && sha256 ? await readCopy(h, { ...f, backup: name, sha256 }) : undefined })
  }
  const changed: string[] = []
  for (const { f, text } of copies) {
    const host = hostNamed(h, f.host)
    const shown = `${f.host ? `${f.host}:` : ''}${f.path}`
    const now = await readHostFile(host, f.path)
    if (text === undefined) {
      if (now !== undefined) {
        await removeHostFile(host, f.path)
        changed.push(`removed ${shown}`)
      }
      continue
    }
    if (now !== text) {
      await writeHostFile(host, f.path, text)
      changed.push(`restored ${shown}`)
    }
  }
  return changed.length ? { changed } : { skipped: 'every file is as before the run' }
}

/** What the restore would put back or remove, for the dry run. */
export function describeHostConfigRestore(h: HostConfig, backup: LiveBackupData | undefined): string[] {
  let files: BackedUp[] | undefined
  try {
    files = backedUp(h, backup)
  } catch (error) {
    // The dry run shows the refusal the run would meet, never the lines of an entry it refuses.
    return [`REFUSED: ${errorMessage(error)}`]
  }
  if (!files) return ['the run backed up nothing: no file was changed']
  return files.map((f) => {
    const file = shownFile(h, hostNamed(h, f.host), f.path)
    return f.existed
      ? `restore ${file} from ${h.scope.journal.file(f.backup ?? '')} (0600)`
      : `remove ${file} if present (it did not exist before the run)`
  })
}

/** The files of release `version`: settings where it reads them, one PSK everywhere, strong where enforced. */
export async function verifyHostConfig(h: HostConfig, version: string): Promise<CheckResult[]> {
  const { live } = h.scope
  const state = await readConfigState(live, h.hosts, version, version)
  const dirs = controllerSettingsDirs(live, version, state.settingsPath)
  const where = state.settings?.path
  const checks: CheckResult[] = [
    {
      check: `settings file where ${version} reads it`,
      ok: !!where && dirs.some((d) => where.startsWith(`${d.replace(/\/+$/, '')}/`)),
      detail: where ?? `none in ${state.searched.join(', ')}`,
    },
  ]
  if (!pskRequired(version) || !state.settings) return checks
  const psk = (JSON.parse(state.settings.text) as { psk?: unknown }).psk
  const variable = pskVariable(live.prefix)
  const differing = Object.entries(state.envs)
    .filter(([, e]) => e.component !== 'system-controller' && envValue(e.text, variable) !== psk)
    .map(([unit]) => unit)
  checks.push({
    check: `every component's ${variable} is the controller's PSK`,
    ok: typeof psk === 'string' && differing.length === 0,
    ...(differing.length ? { detail: `differs or is missing: ${differing.join(', ')}` } : {}),
  })
  if (pskEntropyEnforced(version) && typeof psk === 'string') {
    const verdict = assessPsk(psk)
    checks.push({
      check: 'the PSK passes the entropy check',
      ok: verdict.ok,
      detail: verdict.ok ? `${verdict.bits} estimated bits` : (verdict.reasons[0] ?? ''),
    })
  }
  return checks
}
