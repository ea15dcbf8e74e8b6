/**
 * Readiness where svcops' checks look: every container of every rendered stack that declares a port
 * one of svcops' checks reads (the recording service's and the manager's HTTP port through their
 * Service, the controller's API, the media components' metrics through the pod proxy) has a
 * readiness probe on a port it declares, so "every pod ready" means the port the next check reads
 * answers. Ingest and control panels declare only the metrics port: their probe is on it. The
 * rendering engine's probe stays on its TCP endpoint, the port the seed names and the one control
 * panels connect to (its metrics port is read once the pod is ready).
 */
import { describe, expect, it } from 'vitest'
import type { IContainer } from 'kubernetes-models/v1'
import { buildStack, deployOf, deployStacks, nameOf, objectsOfKind, podOf } from './helpers.ts'
import type { PreviewResult } from '../../src/infra/preview.ts'
import { AWAIT_TIMEOUT_ANNOTATION } from '../../src/infra/workload.ts'

/** The port a container's readiness probe targets (a name or a number), if it has one. */
function probedPort(c: IContainer): string | number | undefined {
  const p = c.readinessProbe
  return p?.httpGet?.port ?? p?.tcpSocket?.port ?? p?.grpc?.port
}

/** Every container of every Deployment and CronJob, with the workload's name. */
function containersOf(r: PreviewResult): { workload: string; container: IContainer }[] {
  const deployments = objectsOfKind(r, 'Deployment').flatMap((d) =>
    (podOf(d).spec?.containers ?? []).map((container) => ({ workload: nameOf(d), container })),
  )
  const jobs = objectsOfKind(r, 'CronJob').flatMap((o) =>
    (
      (o.unwrapped as { spec: { jobTemplate: { spec: { template: { spec: { containers: IContainer[] } } } } } }).spec.jobTemplate.spec
        .template.spec.containers ?? []
    ).map((container) => ({ workload: nameOf(o), container })),
  )
  return [...deployments, ...jobs]
}

/** The named ports svcops' checks read on a container of the platform. */
const CHECKED = new Set(['http', 'https', 'api', 'metrics', 'control'])

const stacks = deployStacks()

describe.each(stacks)('the %s stack, as svcops render shows it', (stack) => {
  const variants: [string, ((c: Record<string, unknown>) => void) | undefined][] = [
    ['as written', undefined],
    [
      'without live.metrics',
      (c) => {
        delete (deployOf(c).live as { metrics?: unknown }).metrics
      },
    ],
    [
      'with live.metrics',
      (c) => {
        ;(deployOf(c).live as { metrics?: unknown }).metrics = { port: 9100 }
      },
    ],
  ]
  it.each(variants)('has a readiness probe on a declared port of every container with a port a check reads (%s)', async (_what, change) => {
    const r = await buildStack(stack, change)
    let checked = 0
    for (const { workload, container } of containersOf(r)) {
      const ports = container.ports ?? []
      const names = ports.map((p) => p.name)
      if (!names.some((n) => n !== undefined && CHECKED.has(n))) continue
      checked++
      const probed = probedPort(container)
      expect(probed, `${workload}/${container.name} declares ${names.join(', ')} and has no readiness probe`).toBeDefined()
      expect(
        names.includes(String(probed)) || ports.some((p) => p.containerPort === probed),
        `${workload}/${container.name}: probe on ${String(probed)}`,
      ).toBe(true)
      // A container whose only port is the metrics port is ready when that port answers.
      if (names.length === 1 && names[0] === 'metrics') expect(container.readinessProbe?.httpGet?.port).toBe('metrics')
    }
    expect(checked).toBeGreaterThanOrEqual(4)
  })
})

it('gives ingest and control panels a readiness probe on the metrics path the checks read', async () => {
  const r = await buildStack('prod', (c) => {
    ;(deployOf(c).live as { metrics?: unknown }).metrics = { port: 9100, path: '/stats' }
  })
  for (const name of ['svc-ingest', 'svc-control-panel']) {
    const d = objectsOfKind(r, 'Deployment').find((o) => nameOf(o) === name)
    const c = d ? podOf(d).spec?.containers[0] : undefined
    expect(c?.ports).toEqual([{ name: 'metrics', containerPort: 9100, protocol: 'TCP' }])
    expect(c?.readinessProbe?.httpGet).toEqual({ path: '/stats', port: 'metrics' })
  }
})

describe.each(stacks)("the %s stack's await timeouts", (stack) => {
  it("lets `pulumi up` wait for every Deployment with a startup probe as long as that probe lets a start (a migration) take, plus the provider's own 10 minutes", async () => {
    const r = await buildStack(stack)
    let checked = 0
    for (const d of objectsOfKind(r, 'Deployment')) {
      const probe = (podOf(d).spec?.containers ?? [])[0]?.startupProbe
      const annotations = (d.unwrapped as { metadata: { annotations?: Record<string, string> } }).metadata.annotations ?? {}
      if (!probe) {
        // The provider's default (10 minutes) for the others.
        expect(annotations[AWAIT_TIMEOUT_ANNOTATION], nameOf(d)).toBeUndefined()
        continue
      }
      checked++
      const startup = (probe.initialDelaySeconds ?? 0) + (probe.periodSeconds ?? 10) * (probe.failureThreshold ?? 3)
      expect(Number(annotations[AWAIT_TIMEOUT_ANNOTATION]), nameOf(d)).toBe(startup + 600)
    }
    // The recording service migrates at its first start: 10 s x 60 of startup probe.
    const recording = objectsOfKind(r, 'Deployment').find((d) => nameOf(d).endsWith('-recording'))
    if (recording)
      expect((recording.unwrapped as { metadata: { annotations: Record<string, string> } }).metadata.annotations).toMatchObject({
        [AWAIT_TIMEOUT_ANNOTATION]: '1200',
      })
    expect(checked).toBeGreaterThanOrEqual(recording ? 1 : 0)
  })
})
