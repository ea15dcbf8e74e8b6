/**
 * `svcops:upgrade.promoteFrom`: the environment a release must pass first. A new upgrade of the
 * recording service to V is refused before anything starts (one sentence naming that environment
 * and the missing or failed run) unless that environment's run store — the `svcops` schema of its
 * own recording database, read with its own stack file beside this one — holds a succeeded upgrade
 * of the recording service to V that ended within `promoteMaxAgeHours`. Where that environment's
 * runs are signed only a signed record counts; a record the store refuses never counts.
 * `--skip-promotion-gate` lets the upgrade go, and the run keeps what was skipped (its params and
 * report). Judging is apart from reading (`judgePromotion`), and a succeeded run may be asked more
 * through `PromotionCheck`s (a canary analysis's verdict, once runs carry one).
 */
import { dirname } from 'node:path'
import { loadEnvironmentFile, stackFilePath } from '../config/load.ts'
import type { Environment } from '../config/schema.ts'
import { BadInputError, BlockedError, errorMessage } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { runSealOf } from '../runs/run-mac.ts'
import type { RunRecord } from '../runs/run-record.ts'
import { recordingDescription } from './recording-description.ts'
import type { RecordingParams } from './recording-params.ts'

/** How long a staging upgrade counts when the stack names no `promoteMaxAgeHours`: a week. */
export const DEFAULT_PROMOTE_MAX_AGE_HOURS = 168

/** What a run keeps of the gate (`params.promotion`). */
export type PromotionRecord = NonNullable<RecordingParams['promotion']>

/**
 * A further condition on a succeeded run of the earlier environment: undefined when it counts, else
 * why not (a few words, e.g. "its canary analysis failed"). The gate asks each one it is given.
 */
export type PromotionCheck = (record: RunRecord) => string | undefined

/** What the gate judges: the earlier environment's runs as its store gave them, and the policy. */
export interface PromotionInput {
  from: string
  to: string
  records: readonly RunRecord[]
  /** The earlier environment's runs are signed (its stack names a run key). */
  signedRuns: boolean
  hours: number
  now: number
  checks?: readonly PromotionCheck[]
}

/** The gate's verdict: the run that passes it, or why none does (a clause that names the run it looked at). */
export type PromotionVerdict = { ok: true; run: RunRecord; at: string } | { ok: false; why: string }

/**
 * Judges the gate on `input.records`: the newest succeeded upgrade of the recording service to
 * `to`, trusted, recent enough, meeting every check, passes; otherwise the reason names the newest
 * upgrade to `to` and what it lacks, or says there is none.
 */
export function judgePromotion(input: PromotionInput): PromotionVerdict {
  const oldest = input.now - input.hours * 3_600_000
  const upgrades = input.records
    .filter((r) => r.system === 'recording' && r.kind === 'upgrade' && r.targetVersion === input.to)
    .sort((a, b) => Date.parse(endOf(b)) - Date.parse(endOf(a)))
  const lacks = (r: RunRecord): string | undefined => {
    if (r.trust?.state === 'refused') return `its record in the run store is refused (${r.trust.sentence})`
    if (r.phase !== 'succeeded') return `it ended ${r.phase}`
    if (input.signedRuns && r.trust?.state !== 'signed') return `its record is unsigned where the runs of '${input.from}' are signed`
    if (Date.parse(endOf(r)) < oldest) return `it ended at ${endOf(r)}, more than ${input.hours} h ago`
    for (const check of input.checks ?? []) {
      const no = check(r)
      if (no) return no
    }
    return undefined
  }
  const passing = upgrades.find((r) => lacks(r) === undefined)
  if (passing) return { ok: true, run: passing, at: endOf(passing) }
  const newest = upgrades[0]
  if (!newest)
    return { ok: false, why: `environment '${input.from}' has no upgrade of the recording service to ${input.to} in its run store` }
  return {
    ok: false,
    why: `environment '${input.from}' has no succeeded upgrade of the recording service to ${input.to} within ${input.hours} h: its newest, run ${newest.id}, does not count, as ${lacks(newest) ?? 'it does not'}`,
  }
}

function endOf(r: RunRecord): string {
  return r.finishedAt ?? r.startedAt
}

/** The gate of `env` (undefined: the stack sets none): the earlier environment's name and the longest age. */
export function promotionPolicyOf(env: Environment): { from: string; hours: number } | undefined {
  const from = env.upgrade?.promoteFrom
  if (!from) return undefined
  return { from, hours: env.upgrade?.promoteMaxAgeHours ?? DEFAULT_PROMOTE_MAX_AGE_HOURS }
}

/**
 * Reads the earlier environment's runs of the recording service and judges the gate for an upgrade
 * of `env` to `to`. The earlier environment is its stack file in the folder of `env`'s; its store is
 * read as its own stack says (database, run key). Reads only.
 */
export async function readPromotionGate(
  env: Environment,
  to: string,
  checks: readonly PromotionCheck[] = [],
): Promise<PromotionVerdict & { from: string; hours: number }> {
  const policy = promotionPolicyOf(env)
  if (!policy) throw new Error('readPromotionGate: the stack sets no svcops:upgrade.promoteFrom')
  const { from, hours } = policy
  if (from === env.name)
    throw new BadInputError(
      `svcops:upgrade.promoteFrom: '${from}' is this environment itself; expected the environment a release passes before '${env.name}' (e.g. staging).`,
    )
  const earlier = loadEnvironmentFile(stackFilePath(from, dirname(env.file)), from)
  if (earlier.name === env.name)
    throw new BadInputError(
      `svcops:upgrade.promoteFrom: '${from}' (${earlier.file}) names this environment itself ('${env.name}'); expected the environment a release passes before it.`,
    )
  if (!earlier.recording)
    throw new BadInputError(
      `svcops:upgrade.promoteFrom: environment '${from}' (${earlier.file}) has no svcops:recording section, so it holds no upgrade of the recording service; expected the environment a release passes first.`,
    )
  const store = recordingDescription.runStore?.(earlier)
  if (!store) throw new BadInputError(`svcops:upgrade.promoteFrom: environment '${from}' keeps no runs of the recording service.`)
  let records: RunRecord[]
  try {
    records = await store.listRecords(earlier.name)
  } catch (error) {
    throw new BlockedError(
      `svcops:upgrade.promoteFrom: the runs of environment '${from}' (${store.where}) could not be read: ${errorMessage(error)}; the upgrade of '${env.name}' to ${to} was refused before anything started.`,
      `Check that this machine reaches the database of '${from}' with its stack file (${earlier.file}), or skip the gate on purpose: --skip-promotion-gate (recorded in the run).`,
    )
  } finally {
    await store.close()
  }
  let signedRuns: boolean
  try {
    signedRuns = runSealOf(earlier).signed
  } catch {
    signedRuns = true // a run key the stack names but this machine cannot read: its runs are signed
  }
  return { ...judgePromotion({ from, to, records, signedRuns, hours, now: Date.now(), checks }), from, hours }
}

/**
 * The gate before a new upgrade of `env` to `to` (its lock, its run folder): passes and returns what
 * the run keeps of it, or refuses in one sentence (exit 5). With `skip` (`--skip-promotion-gate`) it is
 * still read, for the record, and never refuses; a gate that cannot be read is then recorded as such.
 */
export async function gatePromotion(env: Environment, to: string, skip: boolean): Promise<PromotionRecord | undefined> {
  const policy = promotionPolicyOf(env)
  if (!policy) {
    if (skip)
      throw new BadInputError(
        `--skip-promotion-gate: given, but the stack of '${env.name}' sets no svcops:upgrade.promoteFrom; expected the flag only where a promotion gate is set.`,
      )
    return undefined
  }
  if (skip) {
    const finding = await readPromotionGate(env, to).then(
      (v) => (v.ok ? `it would have passed with run ${v.run.id}` : `it would have refused: ${v.why}`),
      (error: unknown) => `it could not be read: ${errorMessage(error)}`,
    )
    events.warn(`--skip-promotion-gate: the promotion gate from '${policy.from}' was skipped (${finding}); recorded in the run.`)
    return { from: policy.from, skipped: true, finding }
  }
  const verdict = await readPromotionGate(env, to)
  if (!verdict.ok)
    throw new BlockedError(
      `svcops:upgrade.promoteFrom: ${verdict.why}; the upgrade of '${env.name}' to ${to} was refused before anything started.`,
      `Upgrade '${policy.from}' first: svcops upgrade recording --env ${policy.from} --to ${to} (or, on purpose, --skip-promotion-gate: recorded in the run).`,
    )
  events.info(`Promotion gate: run ${verdict.run.id} upgraded '${policy.from}' to ${to} at ${verdict.at} (within ${policy.hours} h).`)
  return { from: policy.from, run: verdict.run.id, at: verdict.at }
}

/** The dry run's line: the gate as it would be judged now, read from the earlier environment. */
export async function describePromotionGate(env: Environment, to: string, skip: boolean): Promise<string | undefined> {
  const policy = promotionPolicyOf(env)
  if (!policy) return undefined
  const head = `promotion gate (svcops:upgrade.promoteFrom: ${policy.from}, within ${policy.hours} h)`
  try {
    const v = await readPromotionGate(env, to)
    const verdict = v.ok ? `passes: run ${v.run.id} upgraded '${policy.from}' to ${to} at ${v.at}` : `would refuse: ${v.why}`
    return `${head}: ${verdict}${skip ? ' — skipped by --skip-promotion-gate (recorded in the run)' : ''}`
  } catch (error) {
    return `${head}: could not be read: ${errorMessage(error)}`
  }
}
