/**
 * Rehearsals as later commands read them: the upgrade's dry run shows the latest rehearsal of the
 * same target (when, verdict, predicted rollout), and `svcops:upgrade.requireRehearsal` refuses a
 * real upgrade, before anything starts, unless a rehearsal of the same from-version, to-version and
 * schema fingerprint passed within that many hours. A rehearsal's from-version and fingerprint are
 * the ones its record keeps (`previousVersions`, `fingerprintBefore`), signed like every run's.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import type { Environment } from '../../config/schema.ts'
import { BlockedError } from '../../core/errors.ts'
import { schemaFingerprint } from '../../drivers/fingerprint.ts'
import { databaseTarget, withDatabase } from '../../drivers/postgres.ts'
import { Journal, listRuns, runsDir } from '../../runs/journal.ts'
import { listEnvironmentRuns } from '../../runs/run-listing.ts'
import { runSealOf } from '../../runs/run-mac.ts'
import type { RunRecord } from '../../runs/run-record.ts'
import { recordingDescription } from '../recording-description.ts'
import { recordingParamsSchema } from '../recording-params.ts'
import { openRecordingPlatform } from '../recording-platforms.ts'
import { formatMs, predictionSchema, type Prediction } from './prediction.ts'

/** A rehearsal as a later command sees it. */
export interface RehearsalSummary {
  id: string
  /** When it ended (or started, while it runs). */
  at: string
  from: string
  to: string
  fingerprint: string
  passed: boolean
  /** Its record carries a MAC that checked; an unsigned one never meets the policy where runs are signed. */
  signed: boolean
  phase: string
  prediction?: Prediction
}

/** The rehearsal `record` describes, or undefined when it is not a rehearsal of the recording service. */
export function rehearsalOf(record: RunRecord): RehearsalSummary | undefined {
  if (record.kind !== 'rehearse' || record.system !== 'recording') return undefined
  const params = recordingParamsSchema.safeParse(record.params)
  if (!params.success) return undefined
  const prediction = localPrediction(record.id)
  return {
    id: record.id,
    at: record.finishedAt ?? record.startedAt,
    from: Object.values(params.data.previousVersions)[0] ?? '',
    to: record.targetVersion,
    fingerprint: params.data.fingerprintBefore ?? '',
    passed: record.phase === 'succeeded' && record.trust?.state !== 'refused',
    signed: record.trust?.state === 'signed',
    phase: record.phase,
    ...(prediction ? { prediction } : {}),
  }
}

/** The prediction a rehearsal journaled, when its run folder is on this machine. */
function localPrediction(id: string): Prediction | undefined {
  try {
    if (!existsSync(join(runsDir(), id, 'run.json'))) return undefined
    const entry = Journal.open(id)
      .entries()
      .findLast((e) => e.step === 'predict' && e.data)
    const parsed = predictionSchema.safeParse(entry?.data)
    return parsed.success ? parsed.data : undefined
  } catch {
    return undefined // a run folder being written or damaged: no prediction to show, the record still counts
  }
}

/** The newest rehearsal of `to` in the local runs folder (the dry run's line; sync, reads only). */
export function latestLocalRehearsal(env: Pick<Environment, 'name'>, to: string): RehearsalSummary | undefined {
  for (const record of listRuns()) {
    if (record.environment !== env.name || record.targetVersion !== to) continue
    const summary = rehearsalOf(record)
    if (summary) return summary
  }
  return undefined
}

/** The dry run's line about the latest rehearsal of `to`, and the policy when the stack sets one. */
export function describeLatestRehearsal(env: Environment, to: string): string {
  const policy = env.upgrade?.requireRehearsal
    ? ` — svcops:upgrade.requireRehearsal: a passing rehearsal of the same versions and schema within ${env.upgrade.requireRehearsal} h is required`
    : ''
  const r = latestLocalRehearsal(env, to)
  if (!r) return `Rehearsal: none of ${to} in this runs folder (svcops rehearse recording --env ${env.name} --to ${to})${policy}`
  const p = r.prediction
  const predicted = p?.rolloutMs !== undefined ? `, predicted rollout ${formatMs(p.rolloutMs)}` : ''
  return `Rehearsal: run ${r.id} at ${r.at}, ${r.from} -> ${r.to}, ${r.passed ? 'passed' : r.phase}${p ? ` (${p.verdict}${predicted})` : ''}${policy}`
}

/** What the rehearsal policy is judged on: production as read now, the run's hosts and the environment's runs. */
export interface RehearsalGateInput {
  /** The installed version of each production host. */
  versions: Record<string, string>
  /** The hosts the upgrade will change (its `params.hosts`); empty: all of them. */
  hosts: readonly string[]
  to: string
  fingerprint: string
  records: readonly RunRecord[]
  /** The environment's runs are signed (its stack names a run key). */
  signedRuns: boolean
  hours: number
  now: number
}

/**
 * The from-versions with no rehearsal that meets the policy (empty: the upgrade may go), and how
 * many passing rehearsals were ignored as unsigned. Only the versions of the hosts the upgrade will
 * change count: a host already on `to` migrates nothing, and a host outside `--hosts` is not touched.
 */
export function missingRehearsals(input: RehearsalGateInput): { missing: string[]; ignoredUnsigned: number } {
  const changed = Object.entries(input.versions).filter(
    ([host, version]) => version !== input.to && (input.hosts.length === 0 || input.hosts.includes(host)),
  )
  const froms = [...new Set(changed.map(([, version]) => version))]
  const oldest = input.now - input.hours * 3_600_000
  const candidates = input.records
    .map(rehearsalOf)
    .filter(
      (r): r is RehearsalSummary =>
        r !== undefined &&
        r.to === input.to &&
        r.passed &&
        froms.includes(r.from) &&
        r.fingerprint === input.fingerprint &&
        Date.parse(r.at) >= oldest,
    )
  // Where runs are signed, an unsigned record was stripped or forged by whoever can write the run store.
  const trusted = candidates.filter((r) => r.signed || !input.signedRuns)
  // Every version the upgrade migrates from must have been rehearsed (a fleet half on another version migrates from it too).
  const missing = froms.filter((from) => !trusted.some((r) => r.from === from))
  const ignoredUnsigned = candidates.filter((r) => missing.includes(r.from)).length
  return { missing, ignoredUnsigned }
}

/** Whether `env`'s runs are signed; a run key the stack names but this machine cannot read counts as signed. */
function runsAreSigned(env: Environment): boolean {
  try {
    return runSealOf(env).signed
  } catch {
    return true
  }
}

/**
 * `svcops:upgrade.requireRehearsal`: refuses the upgrade to `to` of `hosts` (empty: all; one
 * sentence, exit 5) unless a rehearsal from each version those hosts run (hosts already on `to`
 * left out) to `to`, on today's schema fingerprint, passed within the configured hours; where the
 * environment's runs are signed, only a signed rehearsal counts. Reads production; changes nothing.
 */
export async function requirePassingRehearsal(env: Environment, to: string, hosts: readonly string[] = []): Promise<void> {
  const hours = env.upgrade?.requireRehearsal
  const rec = env.recording
  if (!hours || !rec) return
  const platform = openRecordingPlatform(env)
  let versions: Record<string, string>
  try {
    versions = await platform.versions()
  } finally {
    await platform.close()
  }
  const fingerprint = await withDatabase(databaseTarget(rec.database), (c) => schemaFingerprint(c))
  const records = await listEnvironmentRuns(env, [recordingDescription], { system: 'recording' })
  const { missing, ignoredUnsigned } = missingRehearsals({
    versions,
    hosts,
    to,
    fingerprint,
    records,
    signedRuns: runsAreSigned(env),
    hours,
    now: Date.now(),
  })
  if (missing.length === 0) return
  const unsigned = ignoredUnsigned ? ` (${ignoredUnsigned} unsigned rehearsal record(s) ignored: this environment's runs are signed)` : ''
  throw new BlockedError(
    `svcops:upgrade.requireRehearsal: no rehearsal of ${missing.join(', ')} -> ${to} on schema ${fingerprint.slice(0, 12)} passed within the last ${hours} h${unsigned}; the upgrade was refused before anything started.`,
    `Rehearse first: svcops rehearse recording --env ${env.name} --to ${to}`,
  )
}
