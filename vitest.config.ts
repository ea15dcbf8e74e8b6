import { configDefaults, defineConfig } from 'vitest/config'
import LongestFirst from './test/support/sequencer.ts'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The real-cluster suite has its own config (vitest.cluster.config.ts, npm run test:cluster).
    exclude: [...configDefaults.exclude, 'test/cluster/**'],
    globalSetup: ['test/support/tmpdir.ts'],
    // Suites start real PostgreSQL clusters, sshd and supervisors; two cores are the budget.
    pool: 'forks',
    // The longest files first, also on a clean clone without vitest's results cache.
    sequence: { sequencer: LongestFirst },
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    // End-to-end tests start real services; a machine busy with other work makes them slower, never wrong.
    testTimeout: 180_000,
    hookTimeout: 240_000,
    teardownTimeout: 60_000,
  },
})
