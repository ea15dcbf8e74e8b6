/**
 * The systems made known to reports (src/runs/system-description.ts) are process-wide, and the unit
 * tier's files share their worker (vitest.config.ts): a file that makes one known (a run started
 * with its system, `writeFailedRun`) leaves the worker with the descriptions it found, so that a
 * later file's report is built as it would be alone.
 */
import { afterAll } from 'vitest'
import { describedSystems, restoreDescribedSystems } from '../../src/runs/system-description.ts'

/** Call at the top level of a test file: the descriptions it finds are put back when it ends. */
export function restoreDescribedSystemsAfterFile(): void {
  const found = describedSystems()
  afterAll(() => restoreDescribedSystems(found))
}
