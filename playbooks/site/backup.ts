/**
 * The steps this site adds to the nightly backup (playbooks/backup.ts; see index.ts): hooked on the
 * steps of src/backup/backup-steps.ts. None here yet.
 */
import type { BackupRunContext } from '../../src/backup/backup-steps.ts'
import type { SiteHook } from '../../src/runs/site-steps.ts'

/** Steps added to the nightly backup. */
export const backupSite: SiteHook<BackupRunContext>[] = []
