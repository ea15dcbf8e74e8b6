/**
 * Crash-resume of the recording service's upgrade (resume-cases.ts has the assertions) at the last
 * six boundaries, review-config@rec-1, start@rec-1, wait-healthy@rec-1, check-logs@rec-1,
 * verify-host@rec-1, verify: each killed once and rolled back, then all of them in one chain of
 * resumes (the upgrade killed after review-config@rec-1, its resumes after start@rec-1,
 * wait-healthy@rec-1, check-logs@rec-1, verify-host@rec-1 and verify in turn; the last resume
 * finishes and is verified).
 */
import { BOUNDARIES, describeCrashResume } from './resume-cases.ts'

describeCrashResume(BOUNDARIES.slice(7))
