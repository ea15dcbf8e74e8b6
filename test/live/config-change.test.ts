/**
 * What `write-config` decides, as a specification of the pure plan (src/live/hosts/config-change.ts):
 * the PSK, the settings file's place and the TCP endpoint variable for each crossing, from the
 * catalog's effects and the files as they are. The end-to-end tests prove the same on a lab host.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { liveHostsSchema } from '../../src/config/schema.ts'
import { LocalTransport } from '../../src/core/runner.ts'
import { planConfig, readConfigState, type ConfigState } from '../../src/live/hosts/config-change.ts'
import { fileDiff, type LiveHost } from '../../src/live/hosts/host-files.ts'
import { liveUnits } from '../../src/live/live-placement.ts'

const live = liveHostsSchema.parse({
  version: '5.2.0',
  host: { name: 'live-1' },
  controllerUrl: 'http://127.0.0.1:8080',
  metricsPorts: { 'system-controller': 9100, ingest: 9101, pipeline: 9102, 'control-panel': 9103 },
})
const LEGACY = '/opt/svc/system-controller/etc/svc_sc_settings.json'
const STRONG = 'Zq3vT8pW1xK9mB4nR7cY2hL6sD0fG5jA_uE-oI3wQ8t'
const WEAK = 'password1234password1234'
const newPsk = (): string => 'GENERATED'

function state(fields: { psk?: string; settingsPath?: string; where?: string; tcp?: string; controllerArgs?: string }): ConfigState {
  const env = (extra = ''): string =>
    `SVC_SYSTEM_CONTROLLER_URL=http://127.0.0.1:8080\n${fields.psk ? `SVC_SYSTEM_CONTROLLER_PSK=${fields.psk}\n` : ''}${extra}`
  const where = fields.where ?? LEGACY
  return {
    settings: { path: where, text: `${JSON.stringify({ ...(fields.psk ? { psk: fields.psk } : {}), listen: { port: 8080 } })}\n` },
    searched: [where],
    settingsPath: fields.settingsPath,
    envs: {
      'system-controller': {
        component: 'system-controller',
        host: 'live-1',
        path: '/etc/default/svc-system-controller',
        text: fields.controllerArgs ?? 'SVC_METRICS_PORT=9100\n',
      },
      ingest: { component: 'ingest', host: 'live-1', path: '/etc/default/svc-ingest', text: env() },
      pipeline: {
        component: 'pipeline',
        host: 'live-1',
        path: '/etc/default/svc-pipeline',
        text: env(fields.tcp ? `SVC_TCP_ENDPOINTS=${fields.tcp}\n` : ''),
      },
      'control-panel': { component: 'control-panel', host: 'live-1', path: '/etc/default/svc-control-panel', text: env() },
    },
  }
}

describe('the configuration svcops writes itself', () => {
  it('1.x -> 2.0: generates the PSK into the settings file and the three connecting components, leaving the settings in place', () => {
    const plan = planConfig(live, state({}), '1.0.0', '2.0.0', { newPsk })
    expect(plan.newPsk).toMatch(/there is no PSK, and every component needs one from 2\.0\.0/)
    expect(plan.moved).toBeUndefined()
    expect(plan.changes.map((c) => c.path)).toEqual([
      LEGACY,
      '/etc/default/svc-ingest',
      '/etc/default/svc-pipeline',
      '/etc/default/svc-control-panel',
    ])
    for (const c of plan.changes) expect(c.after).toContain('GENERATED')
  })

  it('keeps a PSK that passes what the target enforces: 2.x -> 5.x changes nothing', () => {
    expect(planConfig(live, state({ psk: WEAK }), '2.0.0', '5.2.0', { newPsk }).changes).toEqual([])
  })

  it('5.x -> 6.0: replaces a weak PSK everywhere and moves the settings file to /etc/opt/svc (written first, the old one removed last)', () => {
    const plan = planConfig(live, state({ psk: WEAK }), '5.2.0', '6.0.0', { newPsk })
    expect(plan.newPsk).toMatch(/fails the entropy check the system controller enforces from 6\.0\.0/)
    expect(plan.moved).toEqual({ from: LEGACY, to: '/etc/opt/svc/svc_sc_settings.json' })
    expect(plan.changes[0]?.path).toBe('/etc/opt/svc/svc_sc_settings.json')
    expect(plan.changes.at(-1)).toMatchObject({ path: LEGACY, after: undefined })
  })

  it('5.x -> 6.0: a strong PSK is kept, and settings already in the working directory stay there', () => {
    const plan = planConfig(live, state({ psk: STRONG, where: '/var/opt/svc/system-controller/svc_sc_settings.json' }), '5.2.0', '6.0.0', {
      newPsk,
    })
    expect(plan.newPsk).toBeUndefined()
    expect(plan.changes).toEqual([])
  })

  it('5.x -> 6.0: settings in the --settings-path directory of SVC_SC_ARGS stay there', () => {
    const plan = planConfig(
      live,
      state({ psk: STRONG, where: '/srv/studio/svc_sc_settings.json', settingsPath: '/srv/studio' }),
      '5.2.0',
      '6.0.0',
      {
        newPsk,
      },
    )
    expect(plan.moved).toBeUndefined()
  })

  it('5.x -> 6.0: renames SVC_TCP_ENDPOINTS to SVC_TCP_ENDPOINT for one endpoint', () => {
    const plan = planConfig(live, state({ psk: STRONG, tcp: '127.0.0.1:7101' }), '5.2.0', '6.0.0', { newPsk })
    expect(plan.tcp).toEqual({ from: 'SVC_TCP_ENDPOINTS', to: 'SVC_TCP_ENDPOINT', endpoint: '127.0.0.1:7101' })
    const pipeline = plan.changes.find((c) => c.path === '/etc/default/svc-pipeline')
    expect(pipeline?.after).toBe(
      `SVC_SYSTEM_CONTROLLER_URL=http://127.0.0.1:8080\nSVC_SYSTEM_CONTROLLER_PSK=${STRONG}\nSVC_TCP_ENDPOINT=127.0.0.1:7101\n`,
    )
  })

  it.each([
    [undefined, /SVC_TCP_ENDPOINTS lists 2 endpoints \(127\.0\.0\.1:7101, 127\.0\.0\.1:7102\).*expected one endpoint\./],
    [
      '10.0.0.1:1',
      /--tcp-endpoint: '10\.0\.0\.1:1' is not one of the endpoints of SVC_TCP_ENDPOINTS.*expected one of 127\.0\.0\.1:7101, 127\.0\.0\.1:7102\./,
    ],
  ])('5.x -> 6.0 with two endpoints and --tcp-endpoint %s: refused in one sentence', (chosen, message) => {
    expect(() =>
      planConfig(live, state({ psk: STRONG, tcp: '127.0.0.1:7101,127.0.0.1:7102' }), '5.2.0', '6.0.0', { newPsk, tcpEndpoint: chosen }),
    ).toThrow(message)
  })

  it('a settings file nowhere, where the target needs a PSK, is refused naming where svcops looked', () => {
    const none = { ...state({}), settings: undefined, searched: [LEGACY, '/etc/opt/svc/svc_sc_settings.json'] }
    expect(() => planConfig(live, none, '1.0.0', '2.0.0', { newPsk })).toThrow(
      /settings file svc_sc_settings\.json is in none of \/opt\/svc\/system-controller\/etc\/svc_sc_settings\.json, \/etc\/opt\/svc\/svc_sc_settings\.json/,
    )
  })
})

describe('the configuration across hosts (live.hosts)', () => {
  const spread = liveHostsSchema.parse({
    version: '5.2.0',
    controllerUrl: 'http://10.0.0.1:8080',
    hosts: [
      { name: 'live-1', components: { 'system-controller': 9100 } },
      { name: 'gpu-1', components: { ingest: 9101, pipeline: 9102 } },
      { name: 'gpu-2', components: { ingest: 9101, pipeline: 9102, 'control-panel': 9103 } },
    ],
  })
  const env = (psk: string, extra = ''): string =>
    `SVC_SYSTEM_CONTROLLER_URL=http://10.0.0.1:8080\nSVC_SYSTEM_CONTROLLER_PSK=${psk}\n${extra}`
  const spreadState = (psk: string): ConfigState => ({
    settings: { path: LEGACY, text: `${JSON.stringify({ psk, listen: { port: 8080 } })}\n` },
    searched: [LEGACY],
    settingsPath: undefined,
    envs: Object.fromEntries(
      liveUnits(spread).map((u) => [
        u.name,
        {
          component: u.component,
          host: u.host,
          path: `/etc/default/svc-${u.component}`,
          text:
            u.component === 'system-controller'
              ? 'SVC_METRICS_PORT=9100\n'
              : env(psk, u.component === 'pipeline' ? `SVC_TCP_ENDPOINTS=${u.host}:7101\n` : ''),
        },
      ]),
    ),
  })

  it('5.x -> 6.0: one new PSK in the settings file on the controller’s host and in every instance’s environment on its own host', () => {
    const plan = planConfig(spread, spreadState(WEAK), '5.2.0', '6.0.0', { newPsk })
    expect(plan.changes.map((c) => `${c.after === undefined ? 'remove' : 'write'} ${c.host}:${c.path}`)).toEqual([
      'write live-1:/etc/opt/svc/svc_sc_settings.json',
      'write gpu-1:/etc/default/svc-ingest',
      'write gpu-2:/etc/default/svc-ingest',
      'write gpu-1:/etc/default/svc-pipeline',
      'write gpu-2:/etc/default/svc-pipeline',
      'write gpu-2:/etc/default/svc-control-panel',
      `remove live-1:${LEGACY}`,
    ])
    for (const c of plan.changes.filter((x) => x.after !== undefined)) expect(c.after).toContain('GENERATED')
    const pipelines = plan.changes.filter((c) => c.path.endsWith('svc-pipeline'))
    expect(pipelines.map((c) => c.after?.match(/SVC_TCP_ENDPOINT=.*/)?.[0])).toEqual([
      'SVC_TCP_ENDPOINT=gpu-1:7101',
      'SVC_TCP_ENDPOINT=gpu-2:7101',
    ])
  })

  it('aligns the one instance whose PSK differs, on its host only', () => {
    const state = spreadState(STRONG)
    const stale = state.envs['gpu-2/ingest']
    if (!stale) throw new Error('no gpu-2/ingest')
    stale.text = env('an-older-key-of-this-studio')
    const plan = planConfig(spread, state, '5.2.0', '5.2.0', { newPsk })
    expect(plan.newPsk).toBeUndefined()
    expect(plan.changes.map((c) => `${c.host}:${c.path}`)).toEqual(['gpu-2:/etc/default/svc-ingest'])
    expect(plan.changes[0]?.after).toContain(STRONG)
  })
})

describe('the files as svcops reads them on a lab host (a sandbox root R, read through a local transport)', () => {
  function labHost(files: (root: string) => Record<string, string>): LiveHost {
    const root = mkdtempSync(join(tmpdir(), 'svcops-config-state-'))
    for (const [path, text] of Object.entries(files(root))) {
      mkdirSync(dirname(join(root, path)), { recursive: true })
      writeFileSync(join(root, path), text, { mode: 0o600 })
    }
    return { name: 'live-1', config: { name: 'live-1', root }, transport: new LocalTransport('live-1') }
  }
  const settings = `${JSON.stringify({ psk: STRONG, listen: { port: 8080 } })}\n`

  it.each([
    ['as the host names it', (_root: string) => '/srv/studio'],
    ['already under the host root, as the lab controller takes it', (root: string) => `${root}/srv/studio`],
  ])('finds the settings file in the --settings-path directory given %s, and keeps it there on 6.0', async (_how, dirIn) => {
    const host = labHost((root) => ({
      '/srv/studio/svc_sc_settings.json': settings,
      '/etc/default/svc-system-controller': `SVC_SC_ARGS=--settings-path ${dirIn(root)}\n`,
    }))
    try {
      const state = await readConfigState(
        live,
        { controller: host, units: liveUnits(live).map((unit) => ({ unit, host })) },
        '6.0.0',
        '6.0.0',
      )
      expect(state.settingsPath).toBe('/srv/studio')
      expect(state.settings?.path).toBe('/srv/studio/svc_sc_settings.json')
      const plan = planConfig(live, state, '6.0.0', '7.0.0', { newPsk })
      expect(plan.moved).toBeUndefined()
      expect(plan.changes.filter((c) => c.path.endsWith('svc_sc_settings.json'))).toEqual([])
    } finally {
      rmSync(host.config.root ?? '', { recursive: true, force: true })
    }
  })
})

describe('file diffs', () => {
  it('marks the removed line before the added one and masks what it is told to', () => {
    expect(fileDiff('/f', 'A=1\nK=secret\n', 'A=1\nK=other\n', (l) => l.replace(/secret|other/, '***'))).toEqual([
      '--- /f',
      '+++ /f',
      ' A=1',
      '-K=***',
      '+K=***',
    ])
  })
})
