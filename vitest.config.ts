import module from 'node:module'
import { fileURLToPath } from 'node:url'
import { configDefaults, defineConfig } from 'vitest/config'
import { APART_FILES, UNIT_FILES } from './test/support/tiers.ts'

// Two tiers (docs/testing.md): `unit` starts nothing real, `e2e` starts real labs. `npm test` runs
// both; `npm run test:unit` and `npm run test:e2e` one each. Which file is which: test/support/tiers.ts.
// The quick start on a clean clone (vitest.quickstart.config.ts) and the real-cluster suite
// (vitest.cluster.config.ts) have configs of their own.
// Node's compile cache for every Node process of the run: the workers, the svcops CLI, the Pulumi
// program the in-test engine starts, the lab's emulators (each reads NODE_COMPILE_CACHE as it
// starts). Its folder is bin/svcops' own, or where the machine keeps it across clean clones (CI,
// .ci/run): each module is compiled once instead of in every process that loads it. The cache is
// checked against each file's content; NODE_DISABLE_COMPILE_CACHE=1 turns it off.
process.env.NODE_COMPILE_CACHE ||= fileURLToPath(new URL('./node_modules/.cache/svcops', import.meta.url))
module.enableCompileCache?.(process.env.NODE_COMPILE_CACHE)

export default defineConfig({
  // vitest orders files by its results cache (failed first, then longest first), kept under the
  // cache directory; CI (.ci/run) keeps it outside the clone with SVCOPS_TEST_CACHE_DIR, so a clean
  // clone still starts the longest files first.
  cacheDir: process.env.SVCOPS_TEST_CACHE_DIR || undefined,
  test: {
    globalSetup: ['test/support/tmpdir.ts'],
    // The Pulumi SDK's own stack captures, formatted as Node formats them (not source-mapped frame by frame).
    // The report as the writer of every run's end, as the CLI registers it (test/support/run-end-writer.ts).
    setupFiles: ['test/support/sdk-stack-captures.ts', 'test/support/run-end-writer.ts'],
    // Suites start real PostgreSQL clusters, sshd and supervisors on two cores. The e2e tier runs
    // five files at a time: its files wait on real services (a start, a health check, a connection,
    // a disk sync) for part of their time, which the other files fill (measured, both tiers: 440 s
    // with three, 409 s with four, 380 s with five, 376 s with six; the CPU idle 96, 46, 28 and 29 s
    // of the run, its total 750 to 791 s each time; docs/testing.md).
    pool: 'forks',
    poolOptions: { forks: { maxForks: 5, minForks: 1 }, threads: { maxThreads: 2, minThreads: 1, isolate: false } },
    // End-to-end tests start real services; a machine busy with other work makes them slower, never wrong.
    testTimeout: 180_000,
    hookTimeout: 240_000,
    teardownTimeout: 60_000,
    projects: [
      // The unit tier's files share their worker and its loaded modules (no isolation: loading the
      // modules again for each file was a quarter of the tier's time); a file that changes
      // process-wide state (environment variables, the systems made known, run observers) puts it
      // back when it ends. Its workers are threads: whether a pool recycles its workers between files
      // is the pool's setting (poolOptions below), and the forks stay isolated for e2e.
      { extends: true, test: { name: 'unit', include: UNIT_FILES, pool: 'threads', isolate: false } },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...UNIT_FILES, ...APART_FILES],
          // One PostgreSQL cluster for the run; files take databases copied from its template. The
          // recording labs are shared per worker and reset between files; the pool's teardown brings them down.
          globalSetup: ['test/support/shared-postgres.ts', 'test/support/lab-pool.ts'],
        },
      },
      // The cluster suite (test/cluster) on the stand-ins: the Kubernetes API stand-in, the in-test
      // Pulumi engine behind a `pulumi` command and the real kubectl, so that the suite's set-up (the
      // runbook's order, the stack it deploys) runs in CI; on a real cluster the same files run under
      // vitest.cluster.config.ts. One file: 8 cases here, from a minute and a half alone to a few minutes under load.
      {
        extends: true,
        test: { name: 'cluster', include: ['test/cluster/**/*.test.ts'], env: { SVCOPS_CLUSTER_TARGET: 'standin' } },
      },
    ],
  },
})
