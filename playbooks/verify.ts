#!/usr/bin/env node
/**
 * Playbook: the seed's post-upgrade check alone, on every host of an environment ("GET / for
 * health; GET /api/v1/content with limit; POST /api/v1/content with a test recording; read the
 * logs"), plus the service's status and the database's schema fingerprint for comparison. It only
 * reads, except for the test recording (`--no-test-recording` leaves it out).
 *
 *   npx zx playbooks/verify.ts --env lab [--no-test-recording] [--json]
 *
 * A run of the recording service like every other (one record, a journal, a report, `runs list`),
 * that takes no lock: it is never refused beside an upgrade (src/runs/read-only-system.ts). A failed
 * check never stops the others: every host gets every check, and `ok` says whether all passed.
 * Run by node or zx, this file is `svcops verify recording` (its options: playbooks/lib/recording-commands.ts;
 * what the command does with them: playbooks/lib/verify-actions.ts).
 */
import { recordingDescription } from '../src/recording/recording-description.ts'
import {
  everyCheckPassed,
  openVerify,
  verifyEveryTarget,
  verifyParams,
  type ServiceVerification,
  type VerifyContext,
} from '../src/recording/verify-service.ts'
import type { Run } from '../src/runs/engine.ts'
import { readOnlySystem } from '../src/runs/read-only-system.ts'
import { runScript, startedAsScript } from '../src/edge/script.ts'
import { VERIFY_RECORDING } from './lib/recording-commands.ts'
import { verifyRecordingCommand } from './lib/verify-actions.ts'

/** The procedure, top to bottom. */
async function verifyRecording(run: Run<VerifyContext>): Promise<void> {
  await run.step(verifyEveryTarget) // on every target: GET /, GET content, the declared checks, POST a test recording, status, log
  await run.step(everyCheckPassed) // the run fails naming each failed check
}

/** The verify run of the recording service; `into` is given what it found. */
export function verifyRecordingSystem(testRecording: boolean, into: { found?: ServiceVerification }) {
  return readOnlySystem(recordingDescription, {
    kind: 'verify',
    what: 'verify every target of the recording service',
    again: 'svcops verify recording',
    params: verifyParams,
    procedure: verifyRecording,
    open: openVerify(testRecording, into),
  })
}

if (startedAsScript(import.meta)) await runScript(import.meta, VERIFY_RECORDING, verifyRecordingCommand(verifyRecordingSystem))
