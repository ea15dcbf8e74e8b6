/**
 * The live system's facts of a run (`RunRecord.params`): its units in dependency order (each
 * component's instances on their hosts), the release each ran before (what the rollback returns
 * to), the gates acknowledged with `--ack`, the one TCP endpoint kept (`--tcp-endpoint`), and the
 * rollout of each type's instances (`--batch`, `--max-fail`). Checked by this schema whenever a run is continued;
 * a record of the layout before the core kept the components as `hosts`, read here as components.
 */
import { z } from 'zod'

const paramsSchema = z.object({
  components: z.array(z.string()).default([]),
  previousVersions: z.record(z.string(), z.string()).default({}),
  /** Gates acknowledged with `--ack` (catalog change ids). */
  acks: z.array(z.string()).default([]),
  /** The one TCP endpoint kept when the pipeline lists several (`--tcp-endpoint`). */
  tcpEndpoint: z.string().optional(),
  /** Instances of a type upgraded at once after its canary (`--batch`); a type with one instance has no canary. */
  batchSize: z.number().int().min(1).default(1),
  /** Failed instances the rollouts tolerate together (`--max-fail N|P%` of the connecting instances). */
  maxFail: z.string().default('0'),
  /**
   * The release a dry run plans from when it cannot read the running one (`--from`, dry run only):
   * the release read by the preflight wins whenever there is one.
   */
  plannedFrom: z.string().optional(),
  /** `--soak` (or the stack's `analysis.soak`): how long each type's canary is judged against the type's other instances, in ms. */
  soakMs: z.number().int().positive().optional(),
  /** `--pause-after-canary`: after the first type's verified canary (a type with more than one instance), wait for a person. */
  pauseAfterCanary: z.boolean().optional(),
})

export type LiveParams = z.infer<typeof paramsSchema>

/** Records before the core named the components `hosts`. */
function fromEarlierLayout(raw: unknown): unknown {
  if (!raw || typeof raw !== 'object' || 'components' in raw || !('hosts' in raw)) return raw
  const { hosts, ...rest } = raw as Record<string, unknown>
  return { ...rest, components: hosts }
}

export const liveParamsSchema: z.ZodType<LiveParams> = z.preprocess(fromEarlierLayout, paramsSchema)
