/**
 * Site step (example): a notice before an upgrade starts, written with zx's `$` on the machine
 * svcops runs on. Here it appends a line to the file named by SVCOPS_SITE_NOTICE_FILE (a site's
 * own would call its chat webhook: `$\`curl -fsS -d ${text} ${url}\``); without it, the step says
 * it had nothing to do.
 */
import { OperationError } from '../../src/core/errors.ts'
import { $ } from '../../src/core/shell.ts'
import type { LiveContext } from '../../src/live/live-context.ts'
import { defineStep } from '../../src/runs/step.ts'

const noticeFile = (): string | undefined => process.env.SVCOPS_SITE_NOTICE_FILE

const noticeOf = (ctx: LiveContext): string =>
  `svcops: upgrade of the live system in ${ctx.env.name} to ${ctx.journal.run.targetVersion} starts (run ${ctx.journal.run.id})`

/** Tells the studio an upgrade starts, before anything is read or changed. */
export const noticeBeforeUpgrade = defineStep<LiveContext>({
  id: 'site-notice',
  title: 'tell the studio the upgrade starts (site step)',
  describe: (ctx) => {
    const file = noticeFile()
    return file ? [`$ printf '%s\\n' ${JSON.stringify(noticeOf(ctx))} >> ${file}`] : ['nothing: SVCOPS_SITE_NOTICE_FILE is not set']
  },
  async act(ctx) {
    const file = noticeFile()
    if (!file) return { skipped: 'SVCOPS_SITE_NOTICE_FILE is not set' }
    const out = await $`printf '%s\n' ${noticeOf(ctx)} >> ${file}`
    if (out.exitCode !== 0)
      throw new OperationError(`The notice could not be written to ${file}: ${out.stderr.trim() || `exit ${out.exitCode}`}.`)
    return { changed: [`notice written to ${file}`] }
  },
})
