import { BOUNDARIES, describeCrashResume } from './resume-cases.ts'

describeCrashResume(BOUNDARIES.slice(0, 7))
