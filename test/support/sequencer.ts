/**
 * The order in which vitest hands test files to its two workers. Without a results cache (a clean
 * clone, as CI runs it) vitest starts the largest files first; but the longest files here are small
 * (their cases live in shared modules: test/live/resume-cases.ts, test/recording/resume-cases.ts) and
 * would start last, leaving one worker alone with them at the end. These files, which start real
 * labs and run whole upgrades, go first, longest first as measured in full runs; the rest in
 * vitest's own order (failed first, then longest by its cache, else largest). A file missing from
 * the list only runs later than it could: no test depends on the order.
 */
import { relative } from 'node:path'
import { BaseSequencer, type TestSpecification } from 'vitest/node'

const LONGEST_FIRST = [
  'test/lab/quickstart.test.ts',
  'test/live/resume-late.test.ts',
  'test/live/resume-early.test.ts',
  'test/recording/resume-late.test.ts',
  'test/infra/engine.test.ts',
  'test/recording/faults.test.ts',
  'test/recording/resume-early.test.ts',
  'test/live/kubernetes.test.ts',
  'test/doctor/schema-rollback.test.ts',
  'test/recording/fleet.test.ts',
  'test/live/crossings-late.test.ts',
  'test/recording/upgrade.test.ts',
  'test/live/crossings-early.test.ts',
  'test/lab/live.test.ts',
]

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files)
    const rank = (f: TestSpecification): number => {
      const i = LONGEST_FIRST.indexOf(relative(this.ctx.config.root, f.moduleId))
      return i === -1 ? LONGEST_FIRST.length : i
    }
    // Array.prototype.sort is stable: files of equal rank keep vitest's order.
    return sorted.sort((a, b) => rank(a) - rank(b))
  }
}
