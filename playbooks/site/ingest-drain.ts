/**
 * Site step (example): drain the ingest before the live upgrade stops it, and restore it once the
 * system is verified on the new release — or in the rollback, when the upgrade fails after the
 * drain. Run on the live host through the platform (its transport: SSH, or local on a lab host).
 *
 * Here the drain is a file the site's load balancer reads on the live host: present, it sends no
 * new source to this ingest. It lives in svcops' own folder on the host, which the SSH user owns
 * (beside the run store, /var/lib/svcops), never in a folder every local user may write such as
 * /var/tmp: there anyone could plant a link at its name and have svcops write through it. It is
 * written by the platform's file writer (a new file created without following links, renamed over
 * the name: a link there is replaced, never written through) and removed with `rm -f` (a link is
 * removed, not its target). A site puts its own commands here. On Kubernetes (no host) the steps
 * say so and skip: this site drains its ingest there by its Service instead.
 */
import { runCommand, shellJoin } from '../../src/core/runner.ts'
import { hostPath } from '../../src/drivers/transports.ts'
import { removeHostFile, writeHostFile, type LiveHost } from '../../src/live/hosts/host-files.ts'
import type { LiveContext } from '../../src/live/live-context.ts'
import type { SiteStep } from '../../src/runs/site-steps.ts'
import { defineStep } from '../../src/runs/step.ts'

/** svcops' own folder of site files on the live host, which the SSH user owns. */
export const SITE_DIR = '/var/lib/svcops/site'
/** Where the load balancer looks for the drain mark, on the live host. */
export const DRAIN_MARK = `${SITE_DIR}/ingest.drain`

/** Refuses a site folder that is a link: the writer creates its file in the folder it names, wherever that points. */
const NOT_A_LINK = [
  'sh',
  '-c',
  '[ ! -L "$1" ] || { echo "$1 is a symbolic link; svcops writes site files only into a folder of its own" >&2; exit 1; }',
  'sh',
]

/** Why the steps skip on a platform without hosts (Kubernetes). */
const NO_HOST = "the live system's platform has no host to run a command on (on Kubernetes svcops reads the cluster through its API)"

/** The commands, as the dry run shows them, on the host the platform names. */
const describeOn = (ctx: LiveContext, what: (mark: string) => string[]) => {
  const host = ctx.platform.hostOf?.()
  return host ? what(hostPath(host.config, DRAIN_MARK)).map((c) => `on ${host.name}: ${c}`) : [`nothing: ${NO_HOST}`]
}

async function drain(host: LiveHost): Promise<void> {
  await runCommand(host.transport, [...NOT_A_LINK, hostPath(host.config, SITE_DIR)])
  await writeHostFile(host, DRAIN_MARK, 'drained\n')
}

/** Puts the ingest back in service: the rollback's undo of the drain, and the step after the verification. */
export const restoreIngest = defineStep<LiveContext>({
  id: 'site-restore-ingest',
  title: 'restore the ingest to the load balancer (site step)',
  describe: (ctx) => describeOn(ctx, (mark) => [shellJoin(['rm', '-f', '--', mark])]),
  async act(ctx) {
    const host = ctx.platform.hostOf?.()
    if (!host) return { skipped: NO_HOST }
    await removeHostFile(host, DRAIN_MARK)
    return { changed: [`ingest restored on ${host.name}`] }
  },
})

/** Takes the ingest out of the load balancer before the first component stops. */
export const drainIngest: SiteStep<LiveContext> = {
  ...defineStep<LiveContext>({
    id: 'site-drain-ingest',
    title: 'drain the ingest from the load balancer (site step)',
    describe: (ctx) => describeOn(ctx, (mark) => [`write ${mark} (0600, a new file renamed over it; a link there is replaced)`]),
    async act(ctx) {
      const host = ctx.platform.hostOf?.()
      if (!host) return { skipped: NO_HOST }
      await drain(host)
      return { changed: [`ingest drained on ${host.name}`] }
    },
  }),
  undo: restoreIngest,
}
