/**
 * The steps this site adds to the recording service's playbooks (see index.ts): hooked on the steps
 * of src/recording (`before(stopService, ...)`, `after(verifyFleet, ...)`). None here yet.
 */
import type { RecordingContext } from '../../src/recording/recording-context.ts'
import type { SiteHook } from '../../src/runs/site-steps.ts'

/** Steps added to the recording upgrade (playbooks/upgrade.ts). */
export const upgradeRecordingSite: SiteHook<RecordingContext>[] = []

/** Steps added to the recording rollback across a schema change (playbooks/rollback-procedure.ts). */
export const rollbackRecordingSite: SiteHook<RecordingContext>[] = []
