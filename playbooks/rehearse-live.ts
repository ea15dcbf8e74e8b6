#!/usr/bin/env node
/**
 * Playbook: rehearse a live upgrade on hosts before the window (seed, Versioning > "Live production
 * system: changes per major release"): what the upgrade changes in the system's own files — the
 * settings file moved where the target reads it, the PSK rules, the TCP endpoint rule — done on a
 * copy of production's files in the run folder and checked as `verify live` checks the target's;
 * production's files are read, never written, and read again at the end. The copy is removed when
 * the run ends, also when it is interrupted; a killed rehearsal is finished by `svcops resume ID`.
 * Not rehearsed: the target's programs (src/live/hosts/live-rehearsal-report.ts, NOT_REHEARSED).
 *
 *   npx zx playbooks/rehearse-live.ts --env prod --to 7.0.0 [--from 5.2.0] [--tcp-endpoint H:P] [--dry-run]
 */
import { OperationError } from '../src/core/errors.ts'
import type { LiveRehearsalContext } from '../src/live/hosts/live-rehearsal.ts'
import { failureOf, liveRehearsalOf, type LiveRehearsal } from '../src/live/hosts/live-rehearsal-report.ts'
import {
  checkLiveCopy,
  checkLiveProductionUnchanged,
  copyLiveFiles,
  readLiveProduction,
  recordLiveRehearsal,
} from '../src/live/hosts/live-rehearsal-steps.ts'
import { liveRehearsalSystem } from '../src/live/hosts/live-rehearsal-system.ts'
import type { LiveParams } from '../src/live/live-params.ts'
import type { Run } from '../src/runs/engine.ts'
import type { Playbook } from '../src/runs/playbook.ts'
import { rehearseLiveCommand } from './lib/rehearse-actions.ts'
import { REHEARSE_LIVE } from './lib/rehearse-commands.ts'
import { runScript, startedAsScript } from '../src/edge/script.ts'

type Data<T> = T | undefined

/** The procedure, top to bottom. */
async function rehearseLive(run: Run<LiveRehearsalContext>): Promise<void> {
  const { ctx } = run
  const from = ((await run.step(readLiveProduction)).data as Data<{ from: string }>)?.from ?? '(the running release)' // kept to compare at the end
  const copied = (await run.step(copyLiveFiles, from)).data as Data<{ changes: LiveRehearsal['changes'] } | { refused: string }>
  const refused = copied !== undefined && 'refused' in copied // the upgrade's own refusal is the finding: no copy to check
  const onCopy = refused ? undefined : ((await run.step(checkLiveCopy, from)).data as Data<{ checks: LiveRehearsal['checks'] }>)
  const unchanged = (await run.step(checkLiveProductionUnchanged, from)).data as Data<{ checks: LiveRehearsal['checks'] }>
  const result = liveRehearsalOf({
    environment: ctx.env.name,
    from,
    to: ctx.journal.run.targetVersion,
    copied,
    checks: [...(onCopy?.checks ?? []), ...(unchanged?.checks ?? [])],
  })
  await run.step(recordLiveRehearsal, result) // the report's section, and the command's output
  if (result.verdict === 'failed' && run.mode === 'act') throw new OperationError(failureOf(result))
}

/** The playbook: the procedure; no rollback (nothing in production is stopped or written). */
export const rehearseLivePlaybook: Playbook<LiveRehearsalContext, LiveParams> = {
  kind: 'rehearse',
  what: (record) => `Live rehearsal of ${record.targetVersion}`,
  rollbackCommand: (record) =>
    `svcops rehearse live --env ${record.environment} --to ${record.targetVersion} (a rehearsal changes nothing)`,
  afterInterruption: (record) =>
    `Its copy was removed. Finish it: svcops resume ${record.id}   or end it: svcops resume ${record.id} --rollback`,
  procedure: rehearseLive,
}

/** The live rehearsal as the engine runs it. */
export const liveRehearsal = liveRehearsalSystem(rehearseLivePlaybook)

if (startedAsScript(import.meta)) await runScript(import.meta, REHEARSE_LIVE, rehearseLiveCommand(liveRehearsal))
