/**
 * Crash-resume of `svcops upgrade live` at the boundaries from the first install to verify
 * (resume-cases.ts has the assertions and the bound: install, start and check at their first and
 * last component, the controller and the control panel). Seven boundaries on four crossings, each
 * boundary killed once and rolled back, and each crossing's boundaries killed in turn in one chain
 * of resumes:
 *
 *   1.0.0 -> 2.0.0  check@system-controller, install@control-panel (the first release with a PSK)
 *   2.0.0 -> 5.2.0  start@system-controller, start@control-panel, check@control-panel
 *   5.2.0 -> 6.0.0  install@system-controller (each resume writes the configuration again over
 *                   files it already moved and renamed)
 *   6.0.0 -> 7.0.0  verify (/api/v3)
 */
import { useLiveLab } from '../support/live-lab.ts'
import { describeLiveCrashResume, LATE_CROSSINGS } from './resume-cases.ts'

describeLiveCrashResume(useLiveLab({ version: '1.0.0' }), LATE_CROSSINGS)
