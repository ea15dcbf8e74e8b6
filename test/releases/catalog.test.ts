/**
 * The catalog is the seed's Versioning section as data: this walks the seed's tables at test time
 * and fails when a row has no change in the catalog, or a change quotes text that is not in its row.
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { AUTH_API, AUTH_REVISIONS } from '../../src/releases/auth.ts'
import { expandName, LIVE_CHANGES, LIVE_RELEASES } from '../../src/releases/live.ts'
import { planLive } from '../../src/releases/plan.ts'
import { RECORDING_RULES } from '../../src/releases/recording-rules.ts'
import { LIVE_COMPONENTS } from '../../src/releases/types.ts'
import * as v from '../../src/releases/versions.ts'

// The specification lives in ../shared beside the checkout (as on CI); SVCOPS_SEED overrides it.
const SEED = process.env.SVCOPS_SEED ?? fileURLToPath(new URL('../../../shared/seed/000_c9d1a7f7aced8b05.txt', import.meta.url))
const seed = readFileSync(SEED, 'utf8')

interface SeedRow {
  release: string
  area: string
  change: string
}

/** Every table row under "Live production system: changes per major release". */
function liveRows(): SeedRow[] {
  const start = seed.indexOf('### Live production system: changes per major release')
  expect(start).toBeGreaterThan(0)
  const rows: SeedRow[] = []
  let release = ''
  for (const line of seed.slice(start).split('\n')) {
    const heading = /^#### (\d+\.\d+\.\d+) \(from /.exec(line)
    if (heading) release = heading[1] ?? ''
    const cells = /^\| (.+?) \| (.+) \|$/.exec(line)
    if (!cells || !release || cells[1] === 'Area' || /^-+$/.test(cells[1] ?? '')) continue
    rows.push({ release, area: cells[1] ?? '', change: cells[2] ?? '' })
  }
  return rows
}

const rows = liveRows()

describe('catalog of the live production system', () => {
  it('reads every major of the seed (2.0.0 to 7.0.0) and all their rows', () => {
    expect([...new Set(rows.map((r) => r.release))]).toEqual(LIVE_RELEASES.map((r) => r.version))
    expect(rows.length).toBe(32)
  })

  it.each(rows.map((r) => [`${r.release} ${r.area}: ${r.change.slice(0, 60)}`, r] as const))(
    'represents the seed row %s',
    (_label, row) => {
      const matching = LIVE_CHANGES.filter((c) => c.release === row.release && c.area === row.area && row.change.includes(c.seed))
      expect(matching.length, `no catalog change quotes this row`).toBeGreaterThan(0)
    },
  )

  it.each(LIVE_CHANGES.map((c) => [c.id, c] as const))(
    'change %s quotes its own row and appears in the plan of its release',
    (_id, change) => {
      const row = rows.find((r) => r.release === change.release && r.area === change.area && r.change.includes(change.seed))
      expect(row, `seed fragment not found in a ${change.release} "${change.area}" row: ${change.seed}`).toBeDefined()
      const previous = `${change.major - 1}.0.0`
      const plan = planLive(previous, change.release)
      expect(plan.items.map((i) => i.id)).toContain(change.id)
      expect(planLive(change.release, `${change.major}.9.9`).items.map((i) => i.id)).not.toContain(change.id)
    },
  )

  it('quotes every backticked name of each row in some change of that row', () => {
    for (const row of rows) {
      const names = [...row.change.matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? '')
      const text = LIVE_CHANGES.filter((c) => c.release === row.release && c.area === row.area)
        .map((c) => [c.seed, c.summary, c.action, c.old, c.new].join(' '))
        .join(' ')
      const expanded = text.replaceAll('{prefix}', 'svc').replaceAll('{PREFIX}', 'SVC').replaceAll('{product_dir}', '<product_dir>')
      for (const name of names) expect(expanded, `${row.release} ${row.area} misses ${name}`).toContain(name)
    }
  })

  it('has unique ids of the form <release>/<slug>', () => {
    const ids = LIVE_CHANGES.map((c) => c.id)
    expect(new Set(ids).size).toBe(ids.length)
    for (const c of LIVE_CHANGES) expect(c.id.startsWith(`${c.release}/`)).toBe(true)
  })

  it('fills the product prefix and folder from config into names', () => {
    expect(expandName('{PREFIX}_TCP_ENDPOINT {prefix}_sc_settings.json /etc/opt/{product_dir}', { prefix: 'acme', dir: 'acme-live' })).toBe(
      'ACME_TCP_ENDPOINT acme_sc_settings.json /etc/opt/acme-live',
    )
  })
})

describe('version helpers derived from the catalog', () => {
  it.each([
    ['1.0.0', '/api/v1', false, false, false, 'SVC_TCP_ENDPOINTS', false],
    ['2.0.0', '/api/v1', true, false, false, 'SVC_TCP_ENDPOINTS', false],
    ['2.9.3', '/api/v1', true, false, false, 'SVC_TCP_ENDPOINTS', false],
    ['3.0.0', '/api/v2', true, false, false, 'SVC_TCP_ENDPOINTS', false],
    ['4.2.1', '/api/v2', true, false, false, 'SVC_TCP_ENDPOINTS', false],
    ['5.0.0', '/api/v2', true, false, false, 'SVC_TCP_ENDPOINTS', true],
    ['5.9.9', '/api/v2', true, false, false, 'SVC_TCP_ENDPOINTS', true],
    ['6.0.0', '/api/v2', true, true, true, 'SVC_TCP_ENDPOINT', true],
    ['6.4.0-rc.1', '/api/v2', true, true, true, 'SVC_TCP_ENDPOINT', true],
    ['7.0.0', '/api/v3', true, true, true, 'SVC_TCP_ENDPOINT', true],
    ['v7.3.2', '/api/v3', true, true, true, 'SVC_TCP_ENDPOINT', true],
  ] as const)(
    'version %s: prefix %s, PSK required %s, entropy %s, settings path %s, %s, CA cert %s',
    (version, prefix, psk, entropy, settingsFlag, tcp, ca) => {
      expect(v.apiPrefix(version)).toBe(prefix)
      expect(v.pskRequired(version)).toBe(psk)
      expect(v.pskEntropyEnforced(version)).toBe(entropy)
      expect(v.supportsSettingsPathFlag(version)).toBe(settingsFlag)
      expect(v.settingsSearchPaths(version, 'acme')).toEqual(settingsFlag ? ['.', '/etc/opt/acme'] : [])
      expect(v.tcpEndpointVariable(version)).toBe(tcp)
      expect(v.supportsCustomCaCert(version)).toBe(ca)
    },
  )

  it('names variables and files with the configured prefix', () => {
    expect(v.pskVariable()).toBe('SVC_SYSTEM_CONTROLLER_PSK')
    expect(v.pskVariable('acme')).toBe('ACME_SYSTEM_CONTROLLER_PSK')
    expect(v.settingsFileName()).toBe('svc_sc_settings.json')
    expect(v.settingsFileName('acme')).toBe('acme_sc_settings.json')
    expect(v.tcpEndpointVariable('6.0.0', 'acme')).toBe('ACME_TCP_ENDPOINT')
    expect(v.settingsPathFlag()).toBe('--settings-path')
  })

  it.each([
    ['1.0.0', 'pipeline', ['svc_queueing_video_frames']],
    ['4.0.0', 'pipeline', ['svc_video_frames_in_queue']],
    ['5.2.0', 'ingest', ['svc_ingest_source_dropped_frames', 'svc_ingest_source_duplicated_frames', 'svc_ingest_source_lost_frames']],
    [
      '6.0.0',
      'ingest',
      [
        'svc_ingest_source_dropped_audio_frames',
        'svc_ingest_source_dropped_video_frames',
        'svc_ingest_source_duplicated_audio_frames',
        'svc_ingest_source_duplicated_video_frames',
        'svc_ingest_source_lost_audio_frames',
        'svc_ingest_source_lost_video_frames',
      ],
    ],
    ['7.0.0', 'system-controller', []],
    ['7.0.0', 'control-panel', []],
  ] as const)('gives the metric names of %s %s from the metric effects, with the product prefix', (version, component, names) => {
    expect(v.liveMetricNames(version, component)).toEqual(names)
    expect(v.liveMetricNames(version, component, 'acme')).toEqual(names.map((n) => n.replace(/^svc_/, 'acme_')))
  })

  it('names the component of every metric change: no metric effect without one of the live components', () => {
    const metricChanges = LIVE_CHANGES.filter((c) => c.effect?.type === 'metric-rename' || c.effect?.type === 'metric-split')
    expect(metricChanges.length).toBeGreaterThan(0)
    for (const c of metricChanges) expect(LIVE_COMPONENTS).toContain((c.effect as { component: string }).component)
  })

  it.each(['7', '7.0', 'seven', '1.2.3.4', '', ' 1..2'])('refuses the version %j with one sentence', (bad) => {
    expect(() => v.parseVersion(bad)).toThrow(/^The version '.*' is not valid: expected MAJOR\.MINOR\.PATCH like 6\.0\.0\.$/)
  })

  it('orders versions numerically, not as text', () => {
    expect(v.compareVersions('10.0.0', '9.9.9')).toBeGreaterThan(0)
    expect(v.compareVersions('6.10.0', '6.9.0')).toBeGreaterThan(0)
    expect(v.compareVersions('6.0.0', '6.0.0')).toBe(0)
  })
})

describe('auth API revisions and recording service rules', () => {
  it.each([
    ['1.4.1', 300, false],
    ['1.6.1', 3600, true],
    ['1.6.2', 3600, true],
  ] as const)('auth API %s: token lifetime %d s, scope rules and error codes documented: %s', (revision, lifetime, rules) => {
    expect(v.authTokenLifetime(revision)).toBe(lifetime)
    const facts = AUTH_API.find((r) => r.revision === revision)
    expect(facts?.scopeRulesDocumented).toBe(rules)
    expect(facts?.errorCodesDocumented).toBe(rules)
    expect(facts?.logoutKeepsTokensDocumented).toBe(rules)
  })

  it('quotes the seed for every auth revision and recording rule', () => {
    const auth = seed.slice(seed.indexOf('### Authentication API'), seed.indexOf('### Recording service\n'))
    expect(AUTH_REVISIONS).toEqual(['1.4.1', '1.6.1', '1.6.2'])
    for (const r of AUTH_API) expect(auth).toContain(r.seed)
    const recording = seed.slice(seed.indexOf('### Recording service\n'), seed.indexOf('### Live production system'))
    for (const r of RECORDING_RULES) expect(recording, r.id).toContain(r.seed)
  })

  it('has a recording rule for every numbered item of the seed', () => {
    const recording = seed.slice(seed.indexOf('### Recording service\n'), seed.indexOf('### Live production system'))
    const items = recording.split('\n').filter((l) => /^\d+\. /.test(l))
    expect(items).toHaveLength(6)
    for (const item of items)
      expect(
        RECORDING_RULES.some((r) => item.includes(r.seed)),
        item,
      ).toBe(true)
  })
})
