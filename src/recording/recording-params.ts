/**
 * The recording service's facts of a run (`RunRecord.params`): the hosts in rollout order and how
 * they are rolled out, the versions they ran before, the maintenance window, the verified backup,
 * the schema fingerprints and the content snapshot. Checked by this schema whenever a run is
 * continued; records of the layout before the core (flat fields) are read into it unchanged.
 */
import { z } from 'zod'

export const recordingParamsSchema = z.object({
  /** Target names in rollout order (canary first): hosts, or on Kubernetes the Deployment. */
  hosts: z.array(z.string()).default([]),
  /** Version per target before the run (what a rollback returns to). */
  previousVersions: z.record(z.string(), z.string()).default({}),
  batchSize: z.number().int().min(1).default(1),
  /** Failed targets tolerated after the canary (`--max-fail`: a number or a percentage). */
  maxFail: z.string().default('0'),
  /** End of the maintenance window (`--window`): no batch starts that would end after it. */
  deadline: z.string().optional(),
  /** The verified backup taken before anything stopped (or reused by a retry). */
  backupId: z.string().optional(),
  fingerprintBefore: z.string().optional(),
  fingerprintAfter: z.string().optional(),
  /** `rollback recording --to V`: going down is what was asked (an upgrade to an older version is refused). */
  downgrade: z.boolean().optional(),
  /** `--pause-after-canary`: after the canary is verified, wait for `svcops runs promote|abort ID`. */
  pauseAfterCanary: z.boolean().optional(),
  /** `--soak` (or the stack's `analysis.soak`): how long the canary is judged against the baseline before batch 1, in ms. */
  soakMs: z.number().int().positive().optional(),
  /** `--skip-promotion-gate`: the stack's promotion gate (svcops:upgrade.promoteFrom) is read for the record, not obeyed. */
  skipPromotionGate: z.boolean().optional(),
  /** What the promotion gate found before the lock: the earlier environment's run that passed it, or what was skipped. */
  promotion: z
    .object({
      from: z.string(),
      /** The run of `from` that passed the gate, and when it ended. */
      run: z.string().optional(),
      at: z.string().optional(),
      /** `--skip-promotion-gate` was given; `finding` says what the gate would have said. */
      skipped: z.boolean().optional(),
      finding: z.string().optional(),
    })
    .optional(),
  /** Recording ids seen in the content snapshot before anything stopped. */
  snapshotIds: z.array(z.string()).optional(),
})

export type RecordingParams = z.infer<typeof recordingParamsSchema>

/** The params of a run that acts on no target (a backup, a check). */
export function emptyRecordingParams(): RecordingParams {
  return { hosts: [], previousVersions: {}, batchSize: 1, maxFail: '0' }
}
