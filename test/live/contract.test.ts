/**
 * The contract on a real live lab host (docs/contract.md): the checks are the seed's endpoints and
 * what the stack declares, not code. `svcops probe` tries every interface and, with one declared
 * assumption broken, names exactly that one; a second contract declared in the stack (the
 * connection read from each component's own `/health`, not the controller's `/components`; the
 * connection metric under the site's own name, `svc_ctl_link_up`, which the lab's components expose
 * when their environment says so; the pipeline's environment file elsewhere, `svcops:live.envFiles`)
 * carries an upgrade, a verify and a rollback, and the probe with the default metric name declared
 * against such components names exactly that check; a declared check whose path does
 * not answer stops the upgrade in its preflight, before any component is stopped.
 */
import { readFileSync, renameSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { labLiveChecks } from '../../src/lab/live/lab-contract.ts'
import { connectedMetricVariable } from '../../src/lab/live/paths.ts'
import { gateIds, LIVE_COMPONENTS, PRODUCT, startLiveLab, waitUntil, type LiveLab } from '../support/live-lab.ts'

let lab: LiveLab

beforeAll(async () => {
  lab = await startLiveLab({ version: '6.0.0', cli: 'in-process' })
}, 240_000)

afterAll(async () => {
  await lab?.stop()
})

interface Row {
  part: string
  where: string
  interface: string
  source: string
  holds: boolean | null
  evidence: string
  key?: string
}

async function probe(): Promise<{ code: number; rows: Row[] }> {
  const run = await lab.svcops(['probe', '--json'])
  return { code: run.code ?? -1, rows: (JSON.parse(run.stdout) as { rows: Row[] }).rows }
}

const MEMBERS = ['ingest', 'pipeline', 'control-panel'] as const

/** The site's name for the metric that says a component is connected to the controller. */
const LINK_METRIC = 'svc_ctl_link_up'

/**
 * The second contract: the connection as each component reports it on its own port and in its
 * metric of the site's name (`metric`), the release's metric names, the controller on /status.
 */
function secondContract(metric = '{product}_ctl_link_up'): Array<Record<string, unknown>> {
  return [
    { name: 'the controller answers', components: ['system-controller'], web: { path: '{api}/status', contains: { status: 'ok' } } },
    {
      name: 'says it is connected, on its own port',
      components: [...MEMBERS],
      web: { target: 'component', path: '/health', contains: { connected: true, version: '{version}' } },
    },
    { name: 'its link to the controller is up', components: [...MEMBERS], metric: { name: metric, equals: 1 } },
    { name: 'the metric names of its release', components: ['pipeline'], metric: { path: '/metrics', releaseNames: true } },
  ]
}

/** The value of `name` in the component's `/metrics`, undefined when it is not exposed or does not answer. */
async function metricValue(component: (typeof MEMBERS)[number], name: string): Promise<number | undefined> {
  const port = lab.live().metricsPorts?.[component]
  try {
    const text = await (await fetch(`http://127.0.0.1:${port ?? 0}/metrics`, { signal: AbortSignal.timeout(2000) })).text()
    const line = text.split('\n').find((l) => l.startsWith(`${name} `))
    return line === undefined ? undefined : Number(line.slice(name.length + 1))
  } catch {
    return undefined
  }
}

describe('the contract on a live lab host', () => {
  it('svcops probe: every interface holds on the lab as its stack declares it, the seed endpoints by UUID among them (exit 0)', async () => {
    const { code, rows } = await probe()
    expect(code).toBe(0)
    expect(rows.filter((r) => r.holds === false)).toEqual([])
    const seed = rows.filter((r) => r.source === 'seed').map((r) => `${r.where} ${r.interface}`)
    expect(seed).toEqual([
      'ingest GET /api/v2/ingests/{uuid}?expand=true',
      'pipeline GET /api/v2/pipelines/{uuid}?expand=true',
      'control-panel GET /api/v2/controlpanels/{uuid}',
    ])
    expect(rows.filter((r) => r.interface === 'connected to the system controller' && r.holds).map((r) => r.where)).toEqual([
      'ingest',
      'pipeline',
      'control-panel',
    ])
  })

  it('svcops probe with one assumption broken (the connection metric under another name) names exactly that one, with the key to set (exit 5)', async () => {
    const checks = labLiveChecks().map((c) =>
      c.name === 'reports itself connected' ? { ...c, metric: { name: '{product}_link_up', equals: 1 } } : c,
    )
    lab.setLive({ checks })
    try {
      const { code, rows } = await probe()
      expect(code).toBe(5)
      const failed = rows.filter((r) => r.holds === false)
      expect([...new Set(failed.map((r) => r.interface))]).toEqual(['reports itself connected'])
      expect(failed.map((r) => r.where)).toEqual(['ingest', 'pipeline', 'control-panel'])
      expect(failed[0]?.evidence).toBe('svc_link_up is not exposed')
      expect(failed[0]?.key).toBe('live.checks[2] (reports itself connected)')
    } finally {
      lab.setLive({ checks: labLiveChecks() })
    }
  })

  it('a declared check whose path answers 404 stops the upgrade in its preflight: nothing stopped, nothing installed', async () => {
    lab.setLive({
      checks: [
        ...labLiveChecks(),
        { name: 'the ingest lists its sources', components: ['ingest'], web: { path: '{api}/ingest-sources/{uuid}' } },
      ],
    })
    try {
      const pids = LIVE_COMPONENTS.map((c) => lab.pid(c))
      const run = await lab.svcops([
        'upgrade',
        'live',
        '--to',
        '7.0.0',
        '--yes',
        ...gateIds(lab.live(), '6.0.0', '7.0.0').flatMap((g) => ['--ack', g]),
      ])
      expect(run.code).toBe(1)
      expect(run.stderr).toContain(
        'svcops:live.checks asks for what live-1 does not have on 6.0.0: ingest: the ingest lists its sources: GET /api/v2/ingest-sources/',
      )
      expect(run.stderr).toContain('answered 404; expected 200; nothing was stopped.')
      expect(Object.values(lab.versions())).toEqual(['6.0.0', '6.0.0', '6.0.0', '6.0.0'])
      expect(LIVE_COMPONENTS.map((c) => lab.pid(c))).toEqual(pids)
    } finally {
      lab.setLive({ checks: labLiveChecks() })
    }
  })

  it("components exposing the connection under the site's metric name: svcops probe with the default name declared names exactly that check (exit 5)", async () => {
    // The site's components call the metric svc_ctl_link_up: the lab's take the name from their
    // environment file, read at start.
    for (const c of MEMBERS) {
      lab.setEnv(c, `${lab.env(c)}${connectedMetricVariable(PRODUCT.prefix)}=${LINK_METRIC}\n`)
      lab.supervisorctl(['restart', `${PRODUCT.prefix}-${c}`])
    }
    for (const c of MEMBERS) await waitUntil(`${c} to expose ${LINK_METRIC} 1`, async () => (await metricValue(c, LINK_METRIC)) === 1)
    expect(await metricValue('ingest', 'svc_controller_connected')).toBeUndefined()

    lab.setLive({ checks: secondContract('{product}_controller_connected') })
    const { code, rows } = await probe()
    expect(code).toBe(5)
    const failed = rows.filter((r) => r.holds === false)
    expect([...new Set(failed.map((r) => r.interface))]).toEqual(['its link to the controller is up'])
    expect(failed.map((r) => r.where)).toEqual([...MEMBERS])
    expect(failed[0]?.evidence).toBe('svc_controller_connected is not exposed')
    expect(failed[0]?.key).toBe('live.checks[2] (its link to the controller is up)')
  })

  it("a second contract declared in the stack (the site's connection metric, the pipeline's environment file elsewhere) carries an upgrade, a probe and a verify", async () => {
    // The site keeps the pipeline's environment in /etc/opt/svc/pipeline.env (the lab's component
    // still finds it through a link at the old place); svcops reads and writes it where the stack says.
    const elsewhere = '/etc/opt/svc/pipeline.env'
    renameSync(lab.file('/etc/default/svc-pipeline'), lab.file(elsewhere))
    symlinkSync('../opt/svc/pipeline.env', lab.file('/etc/default/svc-pipeline'))
    lab.setLive({ checks: secondContract(), envFiles: { pipeline: elsewhere } })
    const probed = await probe()
    expect(probed.code).toBe(0)
    expect(probed.rows.filter((r) => r.interface === 'its link to the controller is up' && r.holds).map((r) => r.where)).toEqual([
      ...MEMBERS,
    ])
    expect(probed.rows.find((r) => r.where === 'pipeline' && r.interface === elsewhere)).toMatchObject({
      holds: true,
      key: 'live.envFiles.pipeline',
    })
    const up = await lab.svcops([
      'upgrade',
      'live',
      '--to',
      '7.0.0',
      '--yes',
      '--json',
      ...gateIds(lab.live(), '6.0.0', '7.0.0').flatMap((g) => ['--ack', g]),
    ])
    expect(up.code, up.stderr).toBe(0)
    expect(Object.values(lab.versions())).toEqual(['7.0.0', '7.0.0', '7.0.0', '7.0.0'])
    const checked = JSON.stringify(JSON.parse(up.stdout))
    expect(checked).toContain('says it is connected, on its own port')
    expect(checked).toContain('its link to the controller is up')
    expect(checked).toContain('GET /api/v3/ingests/{uuid}?expand=true answers (seed)')
    expect(checked).not.toContain('connected to the system controller')
    // The run backed up and read the pipeline's environment where the stack says, not at the default place.
    const { runId } = JSON.parse(up.stdout) as { runId: string }
    const journal = readFileSync(join(lab.runsDir, runId, 'journal.jsonl'), 'utf8')
    expect(journal).toContain(elsewhere)
    expect(journal).not.toContain('/etc/default/svc-pipeline')

    // The upgraded components kept the site's name: svcops edits their environment files key by key.
    for (const c of MEMBERS) expect(await metricValue(c, LINK_METRIC)).toBe(1)
    const verify = await lab.svcops(['verify', 'live', '--json'])
    expect(verify.code, verify.stderr).toBe(0)
    expect(verify.stdout).toContain('its link to the controller is up')
  })

  it('the second contract carries the rollback of that upgrade, and the verify after it', async () => {
    const back = await lab.svcops(['rollback', 'live', '--yes'])
    expect(back.code, back.stderr).toBe(0)
    expect(Object.values(lab.versions())).toEqual(['6.0.0', '6.0.0', '6.0.0', '6.0.0'])
    for (const c of MEMBERS) expect(await metricValue(c, LINK_METRIC)).toBe(1)
    const verify = await lab.svcops(['verify', 'live', '--json'])
    expect(verify.code, verify.stderr).toBe(0)
    expect(verify.stdout).toContain('its link to the controller is up')
  })
})
