/**
 * What a rehearsal predicts of the real upgrade, from what it measured on the copy: how long each
 * host is down (stop, install, start to healthy — the canary's start runs the migrations, later
 * hosts start on the migrated schema), how long the whole rollout takes with the stack's batches,
 * how long a rollback takes (with the restore when the schema changed), beside the maintenance
 * window when one is given; and the verdict: fits, does not fit, failed (why, with the service's
 * log lines), no window, or no prediction (the rehearsal's timings cannot stand for production's:
 * `withLimits`).
 */
import { z } from 'zod'
import { formatBytes } from '../../core/units.ts'

/** What the rehearsal measured, in ms (absent: not reached). */
export const measuresSchema = z.object({
  stopMs: z.number().optional(),
  installMs: z.number().optional(),
  /** Start of the target release on the copy until healthy: its migrations run in it. */
  firstStartMs: z.number().optional(),
  /** Stop and start again on the migrated copy until healthy: a later host's start. */
  restartMs: z.number().optional(),
  verifyMs: z.number().optional(),
  /** The restore of the copy as the rollback's restore (0 when the schema did not change). */
  rollbackRestoreMs: z.number().optional(),
  rollbackMs: z.number().optional(),
})
export type Measures = z.infer<typeof measuresSchema>

export const predictionSchema = z.object({
  verdict: z.enum(['fits', 'does not fit', 'failed', 'no window', 'no prediction']),
  from: z.string(),
  to: z.string(),
  fingerprint: z.string(),
  databaseBytes: z.number(),
  schemaChanged: z.boolean().optional(),
  migrationMs: z.number().optional(),
  startToHealthyMs: z.number().optional(),
  canaryDowntimeMs: z.number().optional(),
  hostDowntimeMs: z.number().optional(),
  rolloutMs: z.number().optional(),
  rollbackMs: z.number().optional(),
  windowMs: z.number().optional(),
  batches: z.array(z.array(z.string())),
  cause: z.string().optional(),
  logLines: z.array(z.string()).optional(),
  /** Why the rehearsal's timings cannot stand for production's (the platform's own limits), one sentence each. */
  limits: z.array(z.string()).optional(),
  measures: measuresSchema,
})
export type Prediction = z.infer<typeof predictionSchema>

/** What the prediction is made from besides the measures. */
export interface PredictionInput {
  from: string
  to: string
  fingerprint: string
  databaseBytes: number
  /** The production rollout's batches (canary first), host names. */
  batches: string[][]
  windowMs?: number
  schemaChanged?: boolean
  failure?: { cause: string; logLines: string[] }
}

/**
 * The prediction: per host and for the rollout (batches one after another, the hosts of a batch at
 * once), the rollback, and the verdict beside the window.
 */
export function predict(measures: Measures, input: PredictionInput): Prediction {
  const base = {
    from: input.from,
    to: input.to,
    fingerprint: input.fingerprint,
    databaseBytes: input.databaseBytes,
    batches: input.batches,
    measures,
    ...(input.windowMs ? { windowMs: input.windowMs } : {}),
    ...(input.schemaChanged !== undefined ? { schemaChanged: input.schemaChanged } : {}),
  }
  if (input.failure) return { ...base, verdict: 'failed', cause: input.failure.cause, logLines: input.failure.logLines }
  const { stopMs = 0, installMs = 0, firstStartMs = 0, restartMs = firstStartMs, verifyMs = 0 } = measures
  const canaryDowntimeMs = stopMs + installMs + firstStartMs + verifyMs
  const hostDowntimeMs = stopMs + installMs + restartMs + verifyMs
  const rolloutMs = input.batches.reduce((sum, _batch, i) => sum + (i === 0 ? canaryDowntimeMs : hostDowntimeMs), 0)
  const verdict = input.windowMs === undefined ? 'no window' : rolloutMs <= input.windowMs ? 'fits' : 'does not fit'
  return {
    ...base,
    verdict,
    migrationMs: Math.max(0, firstStartMs - restartMs),
    startToHealthyMs: restartMs,
    canaryDowntimeMs,
    hostDowntimeMs,
    rolloutMs,
    ...(measures.rollbackMs !== undefined ? { rollbackMs: measures.rollbackMs } : {}),
  }
}

/**
 * The prediction beside what keeps the rehearsal from standing for production (`limits`, e.g. a
 * Job whose recordings are an empty directory): then no number is predicted — the verdict is
 * "no prediction", with the reasons — and a failure keeps its cause, with the reasons beside it.
 */
export function withLimits(p: Prediction, limits: string[]): Prediction {
  if (!limits.length) return p
  if (p.verdict === 'failed') return { ...p, limits }
  const { migrationMs: _m, startToHealthyMs: _s, canaryDowntimeMs: _c, hostDowntimeMs: _h, rolloutMs: _r, rollbackMs: _b, ...rest } = p
  return { ...rest, verdict: 'no prediction', limits }
}

/** A duration for people: "850 ms", "12.4 s", "3 min 5 s". */
export function formatMs(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`
}

/** The prediction as lines for the terminal and the report. */
export function describePrediction(p: Prediction): string[] {
  const head = `Rehearsal of ${p.from} -> ${p.to} on a copy (${formatBytes(p.databaseBytes)}, schema ${p.fingerprint.slice(0, 12)}): ${p.verdict.toUpperCase()}`
  const limits = (p.limits ?? []).map((l) => `  not like production: ${l}`)
  if (p.verdict === 'failed')
    return [head, `  cause: ${p.cause ?? 'unknown'}`, ...(p.logLines ?? []).slice(-10).map((l) => `  log: ${l}`), ...limits]
  if (p.verdict === 'no prediction')
    return [head, '  no downtime is predicted: the rehearsal ran, but its timings cannot stand for production’s', ...limits]
  const window = p.windowMs !== undefined ? ` (window ${formatMs(p.windowMs)})` : ' (no --window given)'
  return [
    head,
    `  migrations: ${formatMs(p.migrationMs ?? 0)} (first start minus a start on the migrated copy); start to healthy: ${formatMs(p.startToHealthyMs ?? 0)}`,
    `  downtime per host: canary ${formatMs(p.canaryDowntimeMs ?? 0)}, each later host ${formatMs(p.hostDowntimeMs ?? 0)}`,
    `  rollout of ${p.batches.map((b) => `[${b.join(', ')}]`).join(' -> ')}: ${formatMs(p.rolloutMs ?? 0)}${window}`,
    `  rollback: ${p.rollbackMs !== undefined ? formatMs(p.rollbackMs) : 'not measured'}${p.schemaChanged ? ' (the schema changed: the database is restored)' : ' (same schema: packages only)'}`,
    '  timings are the rehearsal\u2019s (its host, or on Kubernetes its Job\u2019s pod): they predict production only as far as that machine and its storage resemble production\u2019s',
  ]
}
