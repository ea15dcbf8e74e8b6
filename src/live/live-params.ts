/**
 * The live system's facts of a run (`RunRecord.params`): its components in dependency order, the
 * release each ran before (what the rollback returns to), the gates acknowledged with `--ack`, and
 * the one TCP endpoint kept (`--tcp-endpoint`). Checked by this schema whenever a run is continued;
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
})

export type LiveParams = z.infer<typeof paramsSchema>

/** Records before the core named the components `hosts`. */
function fromEarlierLayout(raw: unknown): unknown {
  if (!raw || typeof raw !== 'object' || 'components' in raw || !('hosts' in raw)) return raw
  const { hosts, ...rest } = raw as Record<string, unknown>
  return { ...rest, components: hosts }
}

export const liveParamsSchema: z.ZodType<LiveParams> = z.preprocess(fromEarlierLayout, paramsSchema)
