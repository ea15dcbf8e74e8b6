/**
 * Steps a site adds to a playbook without editing it (playbooks/site/): each declared with
 * `defineStep`, hooked before or after a step of the playbook by that step's value (the `Step` the
 * playbook runs, imported from where the playbook imports it), so a hook on a step no playbook has
 * cannot be written: a misspelt name fails to compile instead of silently never running. A playbook
 * takes its site's hooks as its `site` (src/runs/playbook.ts). The engine runs a site step like any
 * other: journaled, shown in the dry run with its commands, skipped on resume once finished (a site
 * step is always `once`), and, when it declares an `undo`, undone by the rollback after the
 * playbook's own rollback, the latest first. The live upgrade's site (playbooks/site/index.ts):
 *
 *   export const upgradeLiveSite = [before(preflight, noticeBeforeUpgrade), before(stopComponent, drainIngest), after(verifySystem, restoreIngest)]
 *
 * Order and failures: a hook runs once per run, the first time its step runs (`before`: before it
 * starts; `after`: once it finished); hooks on the same step run in the order listed. A site step
 * fails the run as the step beside it would: before the playbook's first disruptive step (a stop)
 * nothing of the service changed and no rollback follows; after it the run is rolled back.
 */
import type { Step } from './step.ts'

/** A step a site adds; `undo` puts back what it changed, in the rollback. */
export interface SiteStep<C> extends Step<C> {
  readonly undo?: Step<C>
}

/** A step of a playbook, whatever its arguments and data: what a hook is placed beside. */
export type HookedStep = Pick<Step<never, never[]>, 'id' | 'title' | 'act'>

/** Where a site step runs: before or after the playbook's step `at`. */
export interface SiteHook<C> {
  readonly when: 'before' | 'after'
  readonly at: HookedStep
  readonly step: SiteStep<C>
}

function hook<C>(when: SiteHook<C>['when'], at: HookedStep, step: SiteStep<C>): SiteHook<C> {
  return { when, at, step: { ...step, once: true } }
}

/** Runs `step` before the playbook's step `at` first runs. */
export function before<C>(at: HookedStep, step: SiteStep<C>): SiteHook<C> {
  return hook('before', at, step)
}

/** Runs `step` once the playbook's step `at` first finished. */
export function after<C>(at: HookedStep, step: SiteStep<C>): SiteHook<C> {
  return hook('after', at, step)
}

/** Runs `first` before the playbook's step `start` and `then` after its step `end`. */
export function around<C>(start: HookedStep, end: HookedStep, first: SiteStep<C>, then: SiteStep<C>): SiteHook<C>[] {
  return [before(start, first), after(end, then)]
}
