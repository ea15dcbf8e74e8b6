/**
 * Crash-resume of `svcops upgrade live` at the boundaries up to write-config (resume-cases.ts has
 * the assertions and the bound: stage and stop at their first and last component). Ten
 * boundaries on three crossings, each boundary killed once and rolled back, and each crossing's
 * boundaries killed in turn in one chain of resumes:
 *
 *   1.0.0 -> 2.0.0  stop@control-panel (the PSK introduced)
 *   2.0.0 -> 5.2.0  stop@system-controller (the /api/v2 prefix, three majors at once)
 *   5.2.0 -> 6.0.0  preflight, gates, stage@system-controller, stage@control-panel, check-config,
 *                   backup, rollback-ready, write-config (settings file moved, TCP endpoint renamed: the most
 *                   files changed); the finished run, whose backup a resume took, is then rolled
 *                   back to 5.2.0 with the files byte for byte
 */
import { useLiveLab } from '../support/live-lab.ts'
import { describeLiveCrashResume, EARLY_CROSSINGS } from './resume-cases.ts'

describeLiveCrashResume(useLiveLab({ version: '1.0.0' }), EARLY_CROSSINGS)
