/**
 * The rehearsal's Job on Kubernetes as svcops writes it, from production's Deployment as the Pulumi
 * program renders it (the prod stack, through the in-test engine): V's image against the scratch
 * database, the recordings on the stack's copy and never on production's claim, and labels that
 * none of the program's Service, NetworkPolicy and PodDisruptionBudget selects. And the prediction
 * where the Job cannot stand for production: no number, the reason instead.
 */
import type { V1Deployment, V1NetworkPolicy } from '@kubernetes/client-node'
import { beforeAll, describe, expect, it } from 'vitest'
import { rehearsalJob, rehearsalLabels, type JobSpecInput } from '../../src/recording/kubernetes/rehearsal-job.ts'
import { egressLimits } from '../../src/recording/kubernetes/rehearsal-network.ts'
import { describePrediction, predict, withLimits } from '../../src/recording/rehearse/prediction.ts'
import { buildStack, objectNamed, objectsOfKind } from '../infra/helpers.ts'
import type { PreviewResult } from '../../src/infra/preview.ts'

let prod: PreviewResult
let deployment: V1Deployment

const input: JobSpecInput = {
  name: 'svc-recording-rehearsal',
  namespace: 'svc-prod',
  container: 'recording-service',
  image: 'registry.example.internal/svc/recording:2.1.0',
  databaseVariable: 'SVC_DB_NAME',
  database: 'recordings_rehearsal',
  claim: 'svc-recordings-copy',
  runId: 'R1',
  version: '2.1.0',
}

beforeAll(async () => {
  prod = await buildStack('prod')
  deployment = objectNamed(prod, 'Deployment', 'svc-recording').unwrapped
})

/** Whether a label selector's matchLabels select `labels`. */
function selects(selector: Record<string, string> | undefined, labels: Record<string, string>): boolean {
  return !!selector && Object.entries(selector).every(([k, v]) => labels[k] === v)
}

describe("the rehearsal's Job, from the program's Deployment", () => {
  it("runs V's image against the scratch database (env wins over the Secret's envFrom), with the Deployment's probes", () => {
    const job = rehearsalJob(deployment, input)
    const c = job.spec?.template.spec?.containers[0]
    const real = deployment.spec?.template.spec?.containers.find((x) => x.name === 'recording-service')
    expect(c?.image).toBe('registry.example.internal/svc/recording:2.1.0')
    expect(c?.envFrom).toEqual(real?.envFrom)
    expect(c?.env?.filter((e) => e.name === 'SVC_DB_NAME')).toEqual([{ name: 'SVC_DB_NAME', value: 'recordings_rehearsal' }])
    expect(c?.readinessProbe).toEqual(real?.readinessProbe)
    expect(c?.startupProbe).toEqual(real?.startupProbe)
    expect(job.spec).toMatchObject({
      backoffLimit: 0,
      activeDeadlineSeconds: expect.any(Number) as number,
      ttlSecondsAfterFinished: expect.any(Number) as number,
    })
    expect(job.spec?.template.spec?.restartPolicy).toBe('Never')
  })

  it("mounts the stack's copy of the recordings, never production's claim; without a copy, an empty directory", () => {
    const claims = (j: ReturnType<typeof rehearsalJob>) =>
      (j.spec?.template.spec?.volumes ?? []).flatMap((v) => (v.persistentVolumeClaim ? [v.persistentVolumeClaim.claimName] : []))
    expect(claims(rehearsalJob(deployment, input))).toEqual(['svc-recordings-copy'])
    const { claim: _none, ...withoutClaim } = input
    const bare = rehearsalJob(deployment, withoutClaim)
    expect(claims(bare)).toEqual([])
    expect(bare.spec?.template.spec?.volumes?.find((v) => v.name === 'recordings')).toEqual({ name: 'recordings', emptyDir: {} })
  })

  it("carries labels none of the program's Service, NetworkPolicy and PodDisruptionBudget selects", () => {
    const labels = rehearsalJob(deployment, input).spec?.template.metadata?.labels ?? {}
    expect(labels).toEqual(rehearsalLabels('svc-recording-rehearsal'))
    const service = objectNamed(prod, 'Service', 'svc-recording').unwrapped as { spec: { selector: Record<string, string> } }
    const policy = objectNamed(prod, 'NetworkPolicy', 'svc-recording').unwrapped as {
      spec: { podSelector: { matchLabels: Record<string, string> } }
    }
    const budget = objectNamed(prod, 'PodDisruptionBudget', 'svc-recording').unwrapped as {
      spec: { selector: { matchLabels: Record<string, string> } }
    }
    const podLabels = deployment.spec?.template.metadata?.labels ?? {}
    // Each selects production's pods (the check can fail), and not the rehearsal's.
    for (const selector of [service.spec.selector, policy.spec.podSelector.matchLabels, budget.spec.selector.matchLabels]) {
      expect(selects(selector, podLabels)).toBe(true)
      expect(selects(selector, labels)).toBe(false)
    }
  })
})

describe("the namespace's NetworkPolicies and the rehearsal's pod", () => {
  it("the program's own policies let the Job's pod out (its rehearsal policy under the default deny); without that one, each limiting policy is named", () => {
    const labels = rehearsalLabels('svc-recording-rehearsal')
    const program = objectsOfKind(prod, 'NetworkPolicy').map((o) => o.unwrapped as V1NetworkPolicy)
    const own = program.find((p) => p.spec?.podSelector?.matchLabels?.['app.kubernetes.io/name'] === 'recording-rehearsal')
    const service = program.find((p) => p.metadata?.name === 'svc-recording')
    expect(own?.spec?.egress).toEqual(service?.spec?.egress) // the database server and the manager, as the service
    expect(own?.spec?.ingress).toEqual([])
    expect(egressLimits(program, labels)).toEqual([])
    const ingressOnly: V1NetworkPolicy = { metadata: { name: 'ingress-only' }, spec: { podSelector: {}, policyTypes: ['Ingress'] } }
    const notRecording: V1NetworkPolicy = {
      metadata: { name: 'others' },
      spec: {
        podSelector: { matchExpressions: [{ key: 'app.kubernetes.io/name', operator: 'NotIn', values: ['recording-service'] }] },
        egress: [],
      },
    }
    const without = [...program.filter((p) => p !== own), ingressOnly, notRecording]
    expect(egressLimits(without, labels).map((l) => l.split(' selects')[0])).toEqual(['NetworkPolicy default-deny', 'NetworkPolicy others'])
    expect(egressLimits(without, labels)[0]).toBe(
      "NetworkPolicy default-deny selects the rehearsal's pod and limits its egress, and no policy names that pod (app.kubernetes.io/name=recording-rehearsal): it reaches the scratch database only if a rule lets it reach the database server",
    )
  })
})

describe('a prediction the rehearsal cannot stand for', () => {
  const measures = { stopMs: 100, installMs: 50, firstStartMs: 4000, restartMs: 1000, verifyMs: 200, rollbackMs: 3000 }
  const facts = {
    from: '2.0.0',
    to: '2.1.0',
    fingerprint: 'f'.repeat(64),
    databaseBytes: 1 << 20,
    batches: [['svc-recording']],
    windowMs: 60_000,
  }
  const limit = "the rehearsal's Job has its recordings on an empty directory"

  it('gives no number, and says why', () => {
    const p = withLimits(predict(measures, facts), [limit])
    expect(p.verdict).toBe('no prediction')
    expect([p.rolloutMs, p.canaryDowntimeMs, p.migrationMs, p.rollbackMs]).toEqual([undefined, undefined, undefined, undefined])
    const lines = describePrediction(p)
    expect(lines.join('\n')).not.toMatch(/downtime per host|rollout of/)
    expect(lines).toContain(`  not like production: ${limit}`)
  })

  it('keeps a failure and its cause, with the reason beside it; without limits the prediction is as it was', () => {
    const failed = withLimits(predict(measures, { ...facts, failure: { cause: 'it failed', logLines: [] } }), [limit])
    expect(failed).toMatchObject({ verdict: 'failed', cause: 'it failed', limits: [limit] })
    expect(withLimits(predict(measures, facts), [])).toEqual(predict(measures, facts))
  })
})
