import { describe, expect, it } from 'vitest'
import { BadInputError } from '../../src/core/errors.ts'
import { LIVE_CHANGES } from '../../src/releases/live.ts'
import { formatPlan, planLive } from '../../src/releases/plan.ts'

describe('svcops plan live', () => {
  it.each([
    ['1.0.0', '2.0.0', ['2.0.0']],
    ['2.3.1', '3.0.0', ['3.0.0']],
    ['3.2.0', '7.0.0', ['4.0.0', '5.0.0', '6.0.0', '7.0.0']],
    ['5.9.0', '6.0.1', ['6.0.0']],
    ['1.0.0', '7.4.0', ['2.0.0', '3.0.0', '4.0.0', '5.0.0', '6.0.0', '7.0.0']],
  ] as const)('from %s to %s crosses %j and lists every change of those releases in order', (from, to, releases) => {
    const plan = planLive(from, to)
    expect(plan.releases).toEqual(releases)
    const expected = LIVE_CHANGES.filter((c) => (releases as readonly string[]).includes(c.release)).map((c) => c.id)
    expect(plan.items.map((i) => i.id)).toEqual(expected)
    expect(plan.groups.flatMap((g) => g.items).length).toBe(plan.items.length)
  })

  it('groups by who acts, in the order svcops, operator, API client, SDK', () => {
    const plan = planLive('1.0.0', '7.0.0')
    expect(plan.groups.map((g) => g.actor)).toEqual(['svcops', 'operator', 'api-client', 'sdk'])
    const svcops = plan.groups[0]?.items.map((i) => i.id) ?? []
    expect(svcops).toEqual(
      expect.arrayContaining([
        '2.0.0/psk-settings-file',
        '2.0.0/psk-env',
        '6.0.0/psk-entropy',
        '6.0.0/settings-search-path',
        '6.0.0/tcp-endpoint',
      ]),
    )
  })

  it('says what svcops does and the exact command for changes it handles, and nothing for manual ones', () => {
    const plan = planLive('3.0.0', '6.0.0')
    const metric = plan.items.find((i) => i.id === '6.0.0/dropped-frames')
    expect(metric?.command).toBe('svcops migrate metrics --from 3.0.0 --to 6.0.0 FILES')
    expect(metric?.old).toBe('svc_ingest_source_dropped_frames')
    const manual = plan.items.find((i) => i.id === '5.0.0/output-streams-multiple')
    expect(manual?.svcops).toBeNull()
    expect(formatPlan(plan)).toMatch(
      /^- 6\.0\.0\/[a-z0-9-]+ — Rendering engine: For the TCP control panel `SVC_TCP_ENDPOINTS` is renamed `SVC_TCP_ENDPOINT`/m,
    )
  })

  it('shows each change by its gate id and one --ack line for every gate people must handle', () => {
    const plan = planLive('3.0.0', '6.0.0')
    const text = formatPlan(plan)
    const gates = plan.items.filter((i) => i.actor !== 'svcops').map((i) => i.id)
    expect(text).toContain(`- 5.0.0/output-streams-multiple — `)
    expect(text.match(/--ack /g)).toHaveLength(1)
    expect(text).toContain(`gate(s) for people; once handled, upgrade with: --ack ${gates.join(',')}`)
  })

  it('uses the product prefix and folder from config', () => {
    const plan = planLive('5.0.0', '6.0.0', { prefix: 'acme', dir: 'acme-live' })
    const text = JSON.stringify(plan)
    expect(text).toContain('ACME_TCP_ENDPOINT')
    expect(text).toContain('/etc/opt/acme-live')
    expect(text).toContain('acme_ingest_source_lost_audio_frames')
    expect(text).not.toMatch(/SVC_|svc_ingest/)
  })

  it('answers equal versions and upgrades within a major with an empty plan that says so', () => {
    expect(planLive('6.1.0', '6.1.0')).toMatchObject({ items: [], notes: ['--from and --to are both 6.1.0: there is nothing to upgrade.'] })
    expect(planLive('6.1.0', '6.3.0').notes[0]).toMatch(/same major release/)
  })

  it('notes versions newer than the catalog', () => {
    expect(planLive('6.0.0', '8.0.0').notes.join(' ')).toMatch(/8\.0\.0 is newer than the last release in the catalog \(7\.0\.0\)/)
  })

  it.each([
    ['7.0.0', '3.0.0', /--from 7\.0\.0 is newer than --to 3\.0\.0/],
    ['7', '8.0.0', /The version '7' is not valid/],
    ['3.0.0', 'latest', /The version 'latest' is not valid/],
    ['0.9.0', '2.0.0', /older than the first release the catalog describes \(1\.0\.0\)/],
  ])('refuses --from %s --to %s with one sentence', (from, to, message) => {
    expect(() => planLive(from, to)).toThrow(BadInputError)
    expect(() => planLive(from, to)).toThrow(message)
  })
})
