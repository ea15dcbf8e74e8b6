#!/usr/bin/env node
/**
 * Playbook: the checks of a live upgrade, without changing anything, on every component of the
 * live production system (every instance on every host): installed release, running, no error lines in its recent log, connected
 * to the system controller, the controller answering on the prefix of its release, the metric
 * names of its release; and the files: the settings file where the release reads it, the PSK of
 * every component the controller's (never shown), strong enough where the release enforces it.
 *
 *   npx zx playbooks/verify-live.ts --env lab [--json]
 *
 * A run of the live system like every other (one record, a journal, a report, `runs list`), that
 * takes no lock: it is never refused beside an upgrade (src/runs/read-only-system.ts). A failed
 * check never stops the others; `ok` says whether all passed (exit 1 naming what fails).
 * Run by node or zx, this file is `svcops verify live` (its options: playbooks/lib/live-commands.ts;
 * what the command does with them: playbooks/lib/verify-actions.ts).
 */
import { liveDescription } from '../src/live/live-description.ts'
import {
  everyLiveCheckPassed,
  liveVerifyParams,
  openLiveVerify,
  verifyEveryComponent,
  type LiveVerification,
  type LiveVerifyContext,
} from '../src/live/live-verify.ts'
import type { Run } from '../src/runs/engine.ts'
import { readOnlySystem } from '../src/runs/read-only-system.ts'
import { runScript, startedAsScript } from '../src/edge/script.ts'
import { VERIFY_LIVE } from './lib/live-commands.ts'
import { verifyLiveCommand } from './lib/verify-actions.ts'

/** The procedure, top to bottom. */
async function verifyLive(run: Run<LiveVerifyContext>): Promise<void> {
  await run.step(verifyEveryComponent) // every instance in dependency order, then the files of its release
  await run.step(everyLiveCheckPassed) // the run fails naming each failed check
}

/** The verify run of the live system; `into` is given what it found. */
export function verifyLiveSystem(into: { found?: LiveVerification }) {
  return readOnlySystem(liveDescription, {
    kind: 'verify',
    what: 'verify every component of the live production system',
    again: 'svcops verify live',
    params: liveVerifyParams,
    procedure: verifyLive,
    open: openLiveVerify(into),
  })
}

if (startedAsScript(import.meta)) await runScript(import.meta, VERIFY_LIVE, verifyLiveCommand(verifyLiveSystem))
