/**
 * Which tier each test file belongs to (vitest.config.ts's projects `unit` and `e2e`).
 *
 * `unit`: starts no lab and no long-running real part (PostgreSQL, sshd, supervisord, the recording
 * service, Chromium, a Pushgateway) and reaches no network beyond the loopback stand-ins DESIGN.md
 * names (the manager emulator, the Kubernetes API stand-in, the Pulumi argv recorder, the in-test
 * Pulumi engine). One-shot local tools the product or the check itself runs (the svcops CLI,
 * `promtool check`, `systemd-analyze`, `npm pack --dry-run`, Debian's Node) are allowed: they answer
 * in a moment. `npm run test:unit` is the quick loop.
 *
 * A file that would qualify but takes long is left to e2e so that the quick loop stays quick: the
 * whole-program runs of the in-test Pulumi engine (test/infra/engine, field-ownership,
 * live-version-change, scheduled-jobs), the live system's Kubernetes runs (test/live/kubernetes),
 * the playbooks started through node and zx (test/cli/playbook-script) and `npm pack`
 * (test/lab/development-tool): each takes from 20 s to minutes.
 *
 * `e2e`: every other file under test/ (a file not listed here is e2e, so a new file is never
 * left out of `npm test`; list it here once it starts nothing real). test/tiers.test.ts checks
 * that each name here is a file that exists.
 *
 * Apart from both: test/lab/quickstart.test.ts (the README's quick start on a clean clone,
 * vitest.quickstart.config.ts, `npm run test:quickstart`) and test/cluster (its own project,
 * `cluster`, on the stand-ins in `npm test`; on a real cluster with vitest.cluster.config.ts,
 * `npm run test:cluster`).
 */
export const UNIT_FILES = [
  'test/architecture/layers.test.ts',
  'test/analysis/statistics.test.ts',
  'test/analysis/soak-report.test.ts',
  'test/contract/contract.test.ts',
  'test/backup/pieces.test.ts',
  'test/backup/zstd-frames.test.ts',
  'test/cli/cli.test.ts',
  'test/cli/operator-frictions.test.ts',
  'test/cli/node-version.test.ts',
  'test/cli/playbook-options.test.ts',
  'test/cli/schedule-upgrade.test.ts',
  'test/cli/schedule.test.ts',
  'test/config/checks.test.ts',
  'test/config/load.test.ts',
  'test/core/json-syntax.test.ts',
  'test/core/redact.test.ts',
  'test/core/retry-http.test.ts',
  'test/core/runner.test.ts',
  'test/core/sanitize.test.ts',
  'test/core/shell.test.ts',
  'test/doctor/host-view.test.ts',
  'test/docs/cli-in-docs.test.ts',
  'test/docs/stacks-examples.test.ts',
  'test/drivers/kubeconfig-trust.test.ts',
  'test/drivers/kubernetes-limits.test.ts',
  'test/drivers/kubernetes-tls.test.ts',
  'test/drivers/kubernetes.test.ts',
  'test/drivers/pg-tool-output.test.ts',
  'test/drivers/pulumi.test.ts',
  'test/drivers/pulumi-drift.test.ts',
  'test/hosts/systemd-judgement.test.ts',
  'test/infra/config.test.ts',
  'test/infra/containerfile.test.ts',
  'test/infra/kube-api-standin.test.ts',
  'test/infra/probes.test.ts',
  'test/infra/render.test.ts',
  'test/infra/stacks.test.ts',
  'test/lab/deb-cache.test.ts',
  'test/lab/demo-session.test.ts',
  'test/lab/live-helpers.test.ts',
  'test/lab/ports.test.ts',
  'test/lab/stale-runs.test.ts',
  'test/live/config-change.test.ts',
  'test/live/dry-run-unread-release.test.ts',
  'test/live/live-room.test.ts',
  'test/live/rollback-allow-set.test.ts',
  'test/manager/client.test.ts',
  'test/manager/credentialed-http.test.ts',
  'test/manager/emulator.test.ts',
  'test/recording/drivers.test.ts',
  'test/recording/kubernetes-dry-run.test.ts',
  'test/recording/rehearsal-job.test.ts',
  'test/recording/rollback-params.test.ts',
  'test/releases/catalog.test.ts',
  'test/releases/cli.test.ts',
  'test/releases/env.test.ts',
  'test/releases/metrics.test.ts',
  'test/releases/name-filter.test.ts',
  'test/releases/plan.test.ts',
  'test/releases/psk.test.ts',
  'test/releases/requests.test.ts',
  'test/releases/sdk-scan.test.ts',
  'test/review/config-review-shapes.test.ts',
  'test/review/config-review.test.ts',
  'test/runs/crash-matrix-live.test.ts',
  'test/runs/crash-matrix-recording.test.ts',
  'test/runs/hostile-output.test.ts',
  'test/runs/journal-order.test.ts',
  'test/runs/keep-record.test.ts',
  'test/runs/prompts.test.ts',
  'test/runs/record-migration.test.ts',
  'test/runs/report-stack-file.test.ts',
  'test/runs/runs-cli.test.ts',
  'test/runs/step-data.test.ts',
  'test/tiers.test.ts',
]

/** Files neither tier runs: each has a config and an npm script of its own. */
export const APART_FILES = ['test/lab/quickstart.test.ts', 'test/cluster/**']
