/**
 * Site step (example): drain the ingest before the live upgrade stops it, and restore it once the
 * system is verified on the new release — or in the rollback, when the upgrade fails after the
 * drain. Run on the live host through the platform (its transport: SSH, or local on a lab host).
 *
 * Here the drain is a file the site's load balancer reads on the live host: present, it sends no
 * new source to this ingest. A site puts its own command in `DRAIN` and `RESTORE`. On Kubernetes
 * (no host) the steps say so and skip: this site drains its ingest there by its Service instead.
 */
import { runCommand, shellJoin } from '../../src/core/runner.ts'
import { hostPath } from '../../src/drivers/transports.ts'
import type { LiveContext } from '../../src/live/live-context.ts'
import type { SiteStep } from '../../src/runs/site-steps.ts'
import { defineStep } from '../../src/runs/step.ts'

/** Where the load balancer looks for the drain mark, on the live host. */
export const DRAIN_MARK = '/var/tmp/svcops-site/ingest.drain'

const DRAIN = (mark: string) => ['sh', '-c', 'mkdir -p -- "$(dirname -- "$1")" && echo drained > "$1"', 'sh', mark]
const RESTORE = (mark: string) => ['rm', '-f', '--', mark]

/** The command, as the dry run shows it, on the host the platform names. */
const describeOn = (ctx: LiveContext, argv: (mark: string) => string[]) => {
  const host = ctx.platform.hostOf()
  return 'unavailable' in host
    ? [`nothing: ${host.unavailable}`]
    : [`on ${host.name}: ${shellJoin(argv(hostPath(host.config, DRAIN_MARK)))}`]
}

/** Puts the ingest back in service: the rollback's undo of the drain, and the step after the verification. */
export const restoreIngest = defineStep<LiveContext>({
  id: 'site-restore-ingest',
  title: 'restore the ingest to the load balancer (site step)',
  describe: (ctx) => describeOn(ctx, RESTORE),
  async act(ctx) {
    const host = ctx.platform.hostOf()
    if ('unavailable' in host) return { skipped: host.unavailable }
    await runCommand(host.transport, RESTORE(hostPath(host.config, DRAIN_MARK)))
    return { changed: [`ingest restored on ${host.name}`] }
  },
})

/** Takes the ingest out of the load balancer before the first component stops. */
export const drainIngest: SiteStep<LiveContext> = {
  ...defineStep<LiveContext>({
    id: 'site-drain-ingest',
    title: 'drain the ingest from the load balancer (site step)',
    describe: (ctx) => describeOn(ctx, DRAIN),
    async act(ctx) {
      const host = ctx.platform.hostOf()
      if ('unavailable' in host) return { skipped: host.unavailable }
      await runCommand(host.transport, DRAIN(hostPath(host.config, DRAIN_MARK)))
      return { changed: [`ingest drained on ${host.name}`] }
    },
  }),
  undo: restoreIngest,
}
