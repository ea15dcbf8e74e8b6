/**
 * The rollback's decisions on the Kubernetes platform, on the real lab: real PostgreSQL, the real
 * backup library, and the lab's recording service as what answers behind the Service. The context
 * is the one a Kubernetes run builds (`recording.platform: kubernetes`: the Deployment is the one
 * target); its URL is pointed at the lab's host, and the lab host's own platform (package and service) plays
 * what `pulumi up` and the scale to 0 do to the pods (no cluster and no Pulumi CLI here). The steps
 * are the playbook's own: backup, decide, export, restore, re-create, verify.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadEnvironmentFile } from '../../src/config/load.ts'
import type { Environment } from '../../src/config/schema.ts'
import { Journal } from '../../src/runs/journal.ts'
import type { RecordingParams } from '../../src/recording/recording-params.ts'
import { closeRecordingContext, recordingContext, type RecordingContext } from '../../src/recording/recording-context.ts'
import { backupAndVerify } from '../../src/recording/backup-step.ts'
import { snapshotContent } from '../../src/recording/content-steps.ts'
import type { openKubernetesPlatform } from '../../src/recording/kubernetes/recording-kubernetes-platform.ts'
import {
  decideRestore,
  decisionOf,
  exportLaterRecordings,
  recreateLaterRecordings,
  restoreBackup,
  verifyRecreated,
} from '../../src/recording/rollback-steps.ts'
import { newUpgradeRecord } from '../../src/recording/recording-system.ts'
import { ROOT } from '../support/cli.ts'
import { startUpgradeLab, type UpgradeLab } from './fixture.ts'

let lab: UpgradeLab
let env: Environment
let ctx: RecordingContext
let journal: Journal<RecordingParams>

/** The lab's stack on the kubernetes platform: no hosts, the Deployment from the prod stack's svcops:deploy. */
function kubernetesStack(): Environment {
  const doc = parseYaml(readFileSync(lab.envFile, 'utf8')) as { config: Record<string, Record<string, unknown>> }
  const prod = parseYaml(readFileSync(join(ROOT, 'stacks/Pulumi.prod.yaml'), 'utf8')) as { config: Record<string, Record<string, unknown>> }
  // The lab's hosts and its host checks (a command check: refused on Kubernetes, which has no host) stay behind.
  const { hosts: _hosts, checks: _checks, ...recording } = doc.config['svcops:recording'] ?? {}
  doc.config['svcops:recording'] = { ...recording, platform: 'kubernetes' }
  const { jobs: _jobs, upgradeSchedule: _u, backupSchedule: _b, ...deploy } = prod.config['svcops:deploy'] ?? {}
  doc.config['svcops:deploy'] = deploy
  const file = join(lab.dir, 'stacks', 'Pulumi.cluster.yaml')
  writeFileSync(file, toYaml(doc))
  return loadEnvironmentFile(file, 'lab')
}

/** What happens to the pods: the lab host's service stopped, its package set to `version`, started, healthy. */
async function pods(action: 'stop' | { start: string }): Promise<void> {
  const hostEnv = lab.env()
  const hostCtx = await recordingContext(hostEnv, Journal.inMemory(newUpgradeRecord({ env: hostEnv, to: '2.0.0' })))
  try {
    const h = hostCtx.allTargets[0]
    if (!h) throw new Error('the lab has no host')
    if (action === 'stop') {
      await hostCtx.platform.stop(h)
      return
    }
    const v = action.start
    await hostCtx.platform.stage(h, [v])
    await hostCtx.platform.install(h, v)
    await hostCtx.platform.start(h)
    for (let i = 0; i < 100 && !(await lab.healthy().catch(() => [false]))[0]; i++) await new Promise((r) => setTimeout(r, 200))
  } finally {
    await closeRecordingContext(hostCtx)
  }
}

beforeAll(async () => {
  lab = await startUpgradeLab({ hosts: 1, version: '1.5.0', recordings: 4 })
  env = kubernetesStack()
  journal = Journal.create(newUpgradeRecord({ env, to: '2.0.0' }))
  ctx = await recordingContext(env, journal)
  const service = lab.env().recording?.hosts[0]?.url
  const platform = ctx.platform as ReturnType<typeof openKubernetesPlatform>
  if (!platform.cluster || !service) throw new Error('expected the kubernetes platform and a lab host')
  platform.cluster.url = service // the Service: here the lab's recording service answers behind it
})
afterAll(async () => {
  await closeRecordingContext(ctx)
  await lab.stop()
})

describe('the rollback on the Kubernetes platform, on the real lab', () => {
  it('runs on the Deployment as its one target, and takes the verified backup and the snapshot before anything stops', async () => {
    expect(ctx.allTargets.map((h) => h.name)).toEqual(['svc-recording'])
    expect(journal.run.params.hosts).toEqual(['svc-recording'])
    await snapshotContent.act(ctx)
    const backup = await backupAndVerify.act(ctx)
    expect(backup.changed?.[0]).toMatch(/^created and verified backup /)
    expect(journal.run.params.snapshotIds).toHaveLength(4)
    expect(journal.run.params.fingerprintBefore).toBe(await lab.fingerprint())
  })

  it('keeps the database when the schema did not change, and moves only the Deployment', async () => {
    await lab.create('written after the backup, on 1.5.0')
    journal.append({ step: 'stop', host: 'svc-recording', status: 'ok', disruptive: true })
    const decision = decisionOf(await decideRestore.act(ctx, { dataLoss: false }))
    expect(decision).toEqual({
      restore: false,
      reason: 'the schema did not change and no recording went missing',
      hosts: ['svc-recording'],
    })
  })

  it('restores when 2.0.0 migrated the schema, and re-creates every recording written since the backup', async () => {
    const before = journal.run.params.fingerprintBefore
    await pods('stop')
    await pods({ start: '2.0.0' }) // the new pods start and migrate
    expect(await lab.fingerprint()).not.toBe(before)
    await lab.create('written after the migration, on 2.0.0')
    const decision = decisionOf(await decideRestore.act(ctx, { dataLoss: false }))
    expect(decision.restore).toBe(true)
    expect(decision.reason).toMatch(/^the schema fingerprint changed \(/)
    expect(decision.hosts).toEqual(['svc-recording'])
    const exported = await exportLaterRecordings.act(ctx)
    expect(exported.data?.count).toBe(2)
    await pods('stop') // scaled to 0: no session is left on the database
    await restoreBackup.act(ctx)
    expect(await lab.fingerprint()).toBe(before)
    await pods({ start: '1.5.0' }) // the previous version
    const recreated = await recreateLaterRecordings.act(ctx, ctx.allTargets[0]!)
    expect(recreated.data?.newlyCreated).toBe(2)
    await verifyRecreated.act(ctx, ctx.allTargets[0]!)
    const titles = (await lab.listAll()).map((r) => r.title)
    expect(titles).toEqual(expect.arrayContaining(['written after the backup, on 1.5.0', 'written after the migration, on 2.0.0']))
    expect(titles).toHaveLength(6)
  })
})
