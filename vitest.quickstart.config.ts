import { defineConfig } from 'vitest/config'

// `npm run test:quickstart`: the README's quick start on a clean clone (npm install, npm run demo),
// about seven minutes alone, so it is not part of `npm test`; CI (.ci/run) runs it after `npm test`,
// lint and the type check (docs/testing.md).
export default defineConfig({
  cacheDir: process.env.SVCOPS_TEST_CACHE_DIR || undefined,
  test: {
    include: ['test/lab/quickstart.test.ts'],
    globalSetup: ['test/support/tmpdir.ts'],
    pool: 'forks',
    poolOptions: { forks: { maxForks: 1, minForks: 1 } },
    testTimeout: 1_200_000,
    hookTimeout: 1_200_000,
    teardownTimeout: 60_000,
  },
})
