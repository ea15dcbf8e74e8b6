/**
 * `svcops verify recording|live` (and playbooks/verify.ts, verify-live.ts run as scripts): the
 * verify run of the system, started through the one run path (startSystemRun: one record, a
 * journal, a report, a line in `runs list`; no lock, src/runs/read-only-system.ts), then every
 * check printed as before, with the run's id; exit 1 when a check failed. The playbook gives the
 * system, so this file imports no playbook.
 */
import { ExitCode, SvcopsError } from '../../src/core/errors.ts'
import { redact } from '../../src/core/redact.ts'
import { sanitizeLine } from '../../src/core/sanitize.ts'
import { printOn, showProgressOn, type CommandIO } from '../../src/edge/command-io.ts'
import { useRunSystems } from '../../src/edge/run-systems.ts'
import { failedSummary, renderLiveVerification, type LiveVerification } from '../../src/live/live-verify.ts'
import { renderVerification, type ServiceVerification } from '../../src/recording/verify-service.ts'
import { startSystemRun } from '../../src/runs/run-actions.ts'
import type { RunRequest, RunSystem } from '../../src/runs/run-system.ts'
import type { RunParams } from '../../src/runs/run-record.ts'
import type { VerifyRecordingFlags } from './recording-commands.ts'

/** Where a verify run leaves what it found. */
interface Found<V> {
  found?: V
}

/**
 * Runs `system` on the command's environment with progress on stderr, and prints what it found
 * (`--json`: the verification and `runId`). A run that failed on a check is still printed; any other
 * failure (the service unreachable, bad input) ends the command as every run's does.
 */
async function verifyRun<P extends RunParams, C, V extends { ok: boolean }>(
  io: CommandIO,
  system: RunSystem<P, RunRequest, C>,
  into: Found<V>,
  render: (v: V) => string,
): Promise<V> {
  const env = await io.environment()
  await useRunSystems()
  const stop = await showProgressOn(io)
  let runId: unknown
  try {
    runId = (await startSystemRun(system, { env })).runId
  } catch (error) {
    if (!into.found || into.found.ok || !(error instanceof SvcopsError)) throw error
    runId = error.facts.runId
  } finally {
    stop()
  }
  const found = into.found
  if (!found) throw new Error('The verify run ended without its verification.')
  printOn(io, { ...found, runId }, () => render(found))
  return found
}

/** `svcops verify recording`: every check printed; exit 1 when one failed. */
export function verifyRecordingCommand<P extends RunParams, C>(
  systemOf: (testRecording: boolean, into: Found<ServiceVerification>) => RunSystem<P, RunRequest, C>,
) {
  return async (flags: VerifyRecordingFlags, io: CommandIO): Promise<void> => {
    const into: Found<ServiceVerification> = {}
    const result = await verifyRun(io, systemOf(flags.testRecording !== false, into), into, renderVerification)
    if (!result.ok) io.exitWith(ExitCode.failed)
  }
}

/** `svcops verify live`: every check printed; exit 1 naming what failed. */
export function verifyLiveCommand<P extends RunParams, C>(systemOf: (into: Found<LiveVerification>) => RunSystem<P, RunRequest, C>) {
  return async (_flags: unknown, io: CommandIO): Promise<void> => {
    const into: Found<LiveVerification> = {}
    const result = await verifyRun(io, systemOf(into), into, renderLiveVerification)
    if (!result.ok) {
      process.stderr.write(`svcops: ${sanitizeLine(redact(failedSummary(result)))}\n`)
      io.exitWith(ExitCode.failed)
    }
  }
}
