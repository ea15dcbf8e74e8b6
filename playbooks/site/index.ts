/**
 * The steps this site adds to svcops' playbooks, by playbook: each hooked before or after one of
 * the playbook's steps by that step's value, as the playbook runs it (`svcops upgrade live
 * --dry-run` lists them). Each playbook takes its list as its `site`; the order and the failure
 * semantics are those of src/runs/site-steps.ts (docs/playbooks.md). An empty list adds nothing.
 * Here the live upgrade's; the recording service's in recording.ts, the backup's in backup.ts (each
 * loaded with its own playbook only).
 */
import type { LiveContext } from '../../src/live/live-context.ts'
import { preflight, stopComponent, verifySystem } from '../../src/live/live-steps.ts'
import { after, before, type SiteHook } from '../../src/runs/site-steps.ts'
import { drainIngest, restoreIngest } from './ingest-drain.ts'
import { noticeBeforeUpgrade } from './upgrade-notice.ts'

/** Steps added to the live upgrade (playbooks/upgrade-live.ts). */
export const upgradeLiveSite: SiteHook<LiveContext>[] = [
  before(preflight, noticeBeforeUpgrade), // before anything is read: the studio knows first
  before(stopComponent, drainIngest), // the load balancer sends no new source before the first stop
  after(verifySystem, restoreIngest), // back in service once the system is verified on the target
]
