/**
 * Crash-resume of the recording service's upgrade (resume-cases.ts has the assertions) at the first
 * seven boundaries, preflight, doctor, stage@rec-1, snapshot, backup, stop@rec-1, install@rec-1:
 * each killed once and rolled back, then all of them in one chain of resumes (the upgrade killed
 * after preflight, its resumes after doctor, stage@rec-1, snapshot, backup, stop@rec-1 and
 * install@rec-1 in turn; the last resume finishes and is verified).
 */
import { BOUNDARIES, describeCrashResume } from './resume-cases.ts'

describeCrashResume(BOUNDARIES.slice(0, 7))
