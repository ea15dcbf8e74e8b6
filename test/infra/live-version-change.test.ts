/**
 * The assumption under the live upgrade's preview rule (src/live/kubernetes/live-preview.ts,
 * `liveComponentChanges`), checked on the program itself: run through @pulumi/pulumi's run entry
 * against the stand-in engine (test/infra/engine), a change of `svcops:deploy.live.version` in the
 * prod stack changes only objects inside the system controller's and the media components'
 * ComponentResources (and the jobs' stack copy), and a `pskRotation` change adds the PSK's objects,
 * which the rule accepts only when the run rotated it. The changes are the engine's registrations
 * compared as `planChanges` compares them; the real engine's diff is not involved.
 */
import { describe, expect, it } from 'vitest'
import type { PreviewDigest } from '../../src/drivers/pulumi.ts'
import { liveComponentChanges } from '../../src/live/kubernetes/live-preview.ts'
import { runEngine, type EngineRun, type RunOptions } from './engine/engine.ts'
import { planChanges } from './engine/replace.ts'
import { deployOf, stackConfig, writeStack, type LooseConfig } from './helpers.ts'

const DB_PASSWORD = 'db-Pa55word-for-the-live-version-test-41c9'
const CREDENTIALS: Partial<RunOptions> = { config: { 'svcops:databasePassword': DB_PASSWORD }, secretKeys: ['svcops:databasePassword'] }
const RUN_TIMEOUT = 900_000

/** `pulumi up` of prod with its config changed by `change`, after `base` (or from nothing). */
function up(change: (c: LooseConfig) => void, base?: EngineRun): Promise<EngineRun> {
  const config = structuredClone(stackConfig('prod'))
  change(config)
  return runEngine({
    stack: 'prod',
    preview: false,
    stackFile: writeStack('prod', config),
    ...(base ? { state: base.state } : {}),
    ...CREDENTIALS,
  })
}

/** The changes as `pulumi preview --json` lists its steps (op and urn). */
function asPreview(before: EngineRun, after: EngineRun): PreviewDigest {
  return { steps: planChanges(before, after).map((c) => ({ op: c.action, urn: c.urn })) }
}

describe('a live version change of the prod stack, as the program registers it', () => {
  it(
    'touches only the live components (and the jobs’ stack copy); a rotation adds only the PSK’s objects',
    async () => {
      const base = await up((c) => (deployOf(c).live.version = '6.2.0'))
      expect(base.exitCode, base.stderr).toBe(0)
      const moved = await up((c) => (deployOf(c).live.version = '7.0.0'), base)
      expect(moved.exitCode, moved.stderr).toBe(0)
      const cluster = { prefix: 'svc', stackMap: 'svc-svcops-stack' }
      const version = liveComponentChanges(asPreview(base, moved), cluster, { rotation: false })
      expect(version.other).toEqual([])
      expect(version.targets.some((u) => u.endsWith('::svc-system-controller-deployment'))).toBe(true)
      expect(version.targets.some((u) => u.endsWith('::svc-pipeline-deployment'))).toBe(true)

      const rotated = await up((c) => {
        deployOf(c).live.version = '7.0.0'
        deployOf(c).pskRotation = 'svcops-run'
      }, moved)
      expect(rotated.exitCode, rotated.stderr).toBe(0)
      const digest = asPreview(moved, rotated)
      expect(liveComponentChanges(digest, cluster, { rotation: true }).other).toEqual([])
      expect(liveComponentChanges(digest, cluster, { rotation: false }).other).toEqual(['update kubernetes:core/v1:Secret svc-psk-secret'])
    },
    RUN_TIMEOUT,
  )
})
