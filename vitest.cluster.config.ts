import { defineConfig } from 'vitest/config'

// `npm run test:cluster`: the Kubernetes platform end to end on a real cluster with the Pulumi CLI
// (docs/deploy.md). Never part of `npm test`; each test says in one line what is missing when it skips.
export default defineConfig({
  test: {
    include: ['test/cluster/**/*.test.ts'],
    globalSetup: ['test/support/tmpdir.ts'],
    pool: 'forks',
    poolOptions: { forks: { maxForks: 1, minForks: 1 } },
    testTimeout: 1_800_000,
    hookTimeout: 1_800_000,
  },
})
