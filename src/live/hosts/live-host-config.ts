/**
 * The live system's configuration on its host: the settings file and the components' environment
 * files, read, kept, written and put back through the host's transport. The change itself is the
 * pure plan of config-change.ts (the same for the dry run and the run); every file kept in the run
 * folder is 0600 with its SHA-256 in the journal (never its content, which holds the PSK).
 */
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { OperationError } from '../../core/errors.ts'
import { redact } from '../../core/redact.ts'
import { hostPath } from '../../drivers/transports.ts'
import { assessPsk, generatePsk } from '../../releases/pre-shared-key.ts'
import { pskEntropyEnforced, pskRequired, pskVariable } from '../../releases/versions.ts'
import type { StepResult } from '../../runs/step.ts'
import { componentEnvFile, controllerSettingsDirs, LIVE_COMPONENTS, settingsCandidates } from '../layout.ts'
import type { CheckResult } from '../live-judge.ts'
import type { LiveScope } from '../live-platform.ts'
import { NEW_PSK_PLACEHOLDER, planConfig, readConfigState, type ConfigPlan } from './config-change.ts'
import { LIVE_RUNS_PATH } from './live-host-run-store.ts'
import { envValue, fileDiff, readHostFile, removeHostFile, writeHostFile, type LiveHost } from './host-files.ts'

/** The live host's configuration for one run. */
export interface HostConfig {
  scope: LiveScope
  host: LiveHost
}

/** Backed-up files as the journal records them (never their content). */
interface BackedUp {
  path: string
  existed: boolean
  backup?: string
  sha256?: string
}

function backupName(path: string): string {
  return `backup/${path.replace(/^\/+/, '').replaceAll('/', '__')}`
}

/** Every file a run may touch: the settings file wherever a release reads it, and each component's environment. */
function touchedPaths(h: HostConfig): string[] {
  return [...settingsCandidates(h.scope.live), ...LIVE_COMPONENTS.map((c) => componentEnvFile(h.scope.product, c))]
}

/** The configuration change of this run, computed from the host's files (with a placeholder PSK in the dry run). */
async function configPlan(h: HostConfig, from: string, to: string, newPsk: () => string): Promise<ConfigPlan> {
  const { live, journal } = h.scope
  const state = await readConfigState(live, h.host, from, to)
  return planConfig(live, state, from, to, { newPsk, tcpEndpoint: journal.run.params.tcpEndpoint })
}

/** Reads the files and computes the change: what svcops cannot change for people is refused here. */
export async function checkHostConfig(h: HostConfig, from: string, to: string): Promise<StepResult> {
  const plan = await configPlan(h, from, to, () => NEW_PSK_PLACEHOLDER)
  return { data: { files: plan.changes.map((c) => c.path) } }
}

/** What the check of the files reads and refuses, for the dry run. */
export function describeHostConfigCheck(h: HostConfig): string[] {
  return [
    `read ${settingsCandidates(h.scope.live).join(', ')} and ${LIVE_COMPONENTS.map((c) => componentEnvFile(h.scope.product, c)).join(', ')}`,
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
  for (const path of touchedPaths(h)) {
    const text = await readHostFile(h.host, path)
    if (text === undefined) {
      files.push({ path, existed: false })
      continue
    }
    const name = backupName(path)
    writeFileSync(journal.file(name), text, { mode: 0o600 })
    // A copy on the host beside the run's record (0600): a rollback from another machine puts it back.
    await writeHostFile(h.host, hostBackupPath(journal.run.id, name), text)
    files.push({ path, existed: true, backup: name, sha256: createHash('sha256').update(text).digest('hex') })
  }
  const kept = files.filter((f) => f.existed)
  return { changed: kept.map((f) => `backed up ${f.path}`), data: { files } }
}

/** Which files the backup copies where, for the dry run. */
export function describeHostConfigBackup(h: HostConfig): string[] {
  return [
    `copy ${touchedPaths(h)
      .map((p) => hostPath(h.host.config, p))
      .join(', ')} (those that exist) to ${h.scope.journal.file('backup')}/ with mode 0600`,
  ]
}

/** The file changes as diffs, secrets masked. */
function showChanges(h: HostConfig, plan: ConfigPlan): string[] {
  if (!plan.changes.length) return ['nothing to change: the files already suit the target']
  const on = (path: string) => hostPath(h.host.config, path)
  return plan.changes.flatMap((ch) => [
    `${ch.after === undefined ? 'remove' : 'write'} ${on(ch.path)}${ch.after === undefined ? '' : ' (0600)'}${ch.why.length ? `: ${ch.why.join('; ')}` : ''}`,
    ...fileDiff(on(ch.path), ch.before, ch.after, redact).map((l) => `    ${l}`),
  ])
}

/** Writes the plan: the settings file where the target reads it first, then the environments, then the old settings file removed. */
export async function writeHostConfig(h: HostConfig, from: string, to: string): Promise<StepResult> {
  const plan = await configPlan(h, from, to, () => generatePsk())
  for (const ch of plan.changes) {
    if (ch.after === undefined) await removeHostFile(h.host, ch.path)
    else await writeHostFile(h.host, ch.path, ch.after)
  }
  if (!plan.changes.length) return { skipped: 'the files already suit the target' }
  return {
    changed: plan.changes.map(
      (ch) => `${ch.after === undefined ? 'removed' : 'wrote'} ${ch.path}${ch.why.length ? `: ${ch.why.join('; ')}` : ''}`,
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

/** The files the backup step recorded (its journal data), or undefined when it kept none. */
function backedUp(backup: Record<string, unknown> | undefined): BackedUp[] | undefined {
  const files = backup?.files
  return Array.isArray(files) ? (files as BackedUp[]) : undefined
}

/** What the restore would miss: the run's copy of a backed-up file gone, or changed since the run wrote it. */
export async function findHostBackupMissing(h: HostConfig, backup: Record<string, unknown> | undefined): Promise<string[]> {
  const files = backedUp(backup)
  if (!files) return []
  const { journal } = h.scope
  const missing: string[] = []
  for (const f of files.filter((x) => x.existed)) {
    const local = journal.file(f.backup ?? '')
    // A run continued on another machine has no local backup: the host's copy counts, as the restore takes it.
    const text = existsSync(local)
      ? readFileSync(local, 'utf8')
      : await readHostFile(h.host, hostBackupPath(journal.run.id, f.backup ?? ''))
    if (text === undefined) {
      missing.push(`the run's copy of ${f.path} is neither in ${journal.dir} nor on ${h.host.name}`)
      continue
    }
    if (f.sha256 && createHash('sha256').update(text).digest('hex') !== f.sha256)
      missing.push(`the run's copy of ${f.path} does not match its checksum`)
  }
  return missing
}

/** Puts every backed-up file back (a file that did not exist is removed), each checked against its checksum first. */
export async function restoreHostConfig(h: HostConfig, backup: Record<string, unknown> | undefined): Promise<StepResult> {
  const files = backedUp(backup)
  if (!files) return { skipped: 'the run backed up nothing: no file was changed' }
  const { journal } = h.scope
  const changed: string[] = []
  for (const f of files) {
    const now = await readHostFile(h.host, f.path)
    if (!f.existed) {
      if (now !== undefined) {
        await removeHostFile(h.host, f.path)
        changed.push(`removed ${f.path}`)
      }
      continue
    }
    const local = journal.file(f.backup ?? '')
    // A run continued on another machine has no local backup: the host's copy counts, checked the same.
    const text = existsSync(local)
      ? readFileSync(local, 'utf8')
      : await readHostFile(h.host, hostBackupPath(journal.run.id, f.backup ?? ''))
    if (text === undefined) throw new OperationError(`The backup of ${f.path} is neither in ${journal.dir} nor on ${h.host.name}.`)
    if (f.sha256 && createHash('sha256').update(text).digest('hex') !== f.sha256)
      throw new OperationError(
        `The backup of ${f.path} in ${journal.dir} does not match its checksum; it was changed after the run wrote it.`,
      )
    if (now !== text) {
      await writeHostFile(h.host, f.path, text)
      changed.push(`restored ${f.path}`)
    }
  }
  return changed.length ? { changed } : { skipped: 'every file is as before the run' }
}

/** What the restore would put back or remove, for the dry run. */
export function describeHostConfigRestore(h: HostConfig, backup: Record<string, unknown> | undefined): string[] {
  const files = backedUp(backup)
  if (!files) return ['the run backed up nothing: no file was changed']
  return files.map((f) =>
    f.existed
      ? `restore ${hostPath(h.host.config, f.path)} from ${h.scope.journal.file(f.backup ?? '')} (0600)`
      : `remove ${hostPath(h.host.config, f.path)} if present (it did not exist before the run)`,
  )
}

/** The files of release `version`: settings where it reads them, one PSK everywhere, strong where enforced. */
export async function verifyHostConfig(h: HostConfig, version: string): Promise<CheckResult[]> {
  const { live } = h.scope
  const state = await readConfigState(live, h.host, version, version)
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
  const differing = LIVE_COMPONENTS.filter((c) => c !== 'system-controller' && envValue(state.envs[c].text, variable) !== psk)
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
