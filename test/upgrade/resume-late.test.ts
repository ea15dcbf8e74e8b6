import { BOUNDARIES, describeCrashResume } from './resume-cases.ts'

describeCrashResume(BOUNDARIES.slice(7))
