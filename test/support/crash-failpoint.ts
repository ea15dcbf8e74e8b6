/**
 * The crash tests' failpoint in a child svcops: a module the test harness preloads with `--import`
 * in the child's NODE_OPTIONS (`crashFailpointEnv`, test/support/cli.ts); shipped svcops has no such
 * switch. With `SVCOPS_TEST_CRASH_AFTER=step` or `step@host` it observes the journal and the process
 * kills itself with SIGKILL right after that step's `ok` line is synced — the state a power cut or an
 * OOM kill leaves at that step boundary, at the exact boundary however busy the machine is (a kill
 * from outside can come late, after the run has gone on or even ended).
 * `SVCOPS_TEST_CRASH_SIGNAL=SIGINT` (or SIGTERM, SIGHUP) sends that signal instead: a Ctrl-C at that
 * boundary; `SIGSTOP` freezes the process there, alive and holding its locks: a step that takes long.
 */
import { observeJournals } from '../../src/runs/journal.ts'

const at = process.env.SVCOPS_TEST_CRASH_AFTER
const SIGNALS = new Set<NodeJS.Signals>(['SIGKILL', 'SIGINT', 'SIGTERM', 'SIGHUP', 'SIGSTOP'])

if (at) {
  const [step, host] = at.split('@')
  const asked = process.env.SVCOPS_TEST_CRASH_SIGNAL as NodeJS.Signals | undefined
  const signal = asked && SIGNALS.has(asked) ? asked : 'SIGKILL'
  observeJournals((entry) => {
    if (entry.status === 'ok' && entry.step === step && entry.host === host) process.kill(process.pid, signal)
  })
}
