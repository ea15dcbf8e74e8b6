/**
 * The steps this site adds to svcops' playbooks, by playbook: each hooked before or after one of
 * the playbook's steps by its id (`svcops upgrade live --dry-run` lists them). Loaded when the
 * playbook is; the order and the failure semantics are those of src/runs/site-steps.ts
 * (docs/playbooks.md). An empty list adds nothing.
 */
import type { LiveContext } from '../../src/live/live-context.ts'
import { after, before, type SiteHook } from '../../src/runs/site-steps.ts'
import { drainIngest, restoreIngest } from './ingest-drain.ts'
import { noticeBeforeUpgrade } from './upgrade-notice.ts'

/** Steps added to the live upgrade (playbooks/upgrade-live.ts). */
export const upgradeLiveSite: SiteHook<LiveContext>[] = [
  before('preflight', noticeBeforeUpgrade), // before anything is read: the studio knows first
  before('stop', drainIngest), // the load balancer sends no new source before the first stop
  after('verify', restoreIngest), // back in service once the system is verified on the target
]
