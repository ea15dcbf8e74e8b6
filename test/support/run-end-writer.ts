/**
 * A vitest setup file (vitest.config.ts `setupFiles`): the tests are an edge that starts runs, as
 * the CLI is, so they register the report as the writer of every run's end (src/runs/run-events.ts)
 * the way `useRunSystems` does for svcops: a playbook started from a test leaves its report.
 */
import { writeReport } from '../../src/reports/report.ts'
import { writeRunEndsWith } from '../../src/runs/run-events.ts'

writeRunEndsWith(writeReport)
