/**
 * `svcops rehearse live` on a live lab host on 5.2.0 with a weak PSK and two TCP endpoints: the
 * upgrade to 7.0.0's file changes (settings file moved to /etc/opt, a new PSK everywhere, the TCP
 * endpoint variable renamed to one endpoint) rehearsed on a copy of the host's files, checked as
 * verify live checks the target's files; production's files, versions and processes unchanged, and
 * no PSK in any output. On real dpkg, supervisord and sshd (test/support/live-lab.ts).
 */
import { describe, expect, it } from 'vitest'
import { useLiveLab } from '../support/live-lab.ts'

const lab = useLiveLab({ version: '5.2.0', weakPsk: true, tcpEndpoints: 2, cli: 'in-process' })

/** The host as an operator checks it: every settings and environment file, and the installed versions. */
function production(): unknown {
  return { files: lab().snapshot(), versions: lab().versions() }
}

/** The two TCP endpoints the lab's pipeline is configured with. */
function endpoints(): string[] {
  const line = lab()
    .env('pipeline')
    .split('\n')
    .find((l) => l.startsWith('SVC_TCP_ENDPOINTS='))
  return (line?.slice('SVC_TCP_ENDPOINTS='.length) ?? '').split(',').filter(Boolean)
}

describe('svcops rehearse live', () => {
  it('5.2.0 -> 7.0.0 with two TCP endpoints: fails with the refusal the upgrade would make (one endpoint expected), exit 1, production unchanged', async () => {
    const before = production()
    const run = await lab().svcops(['rehearse', 'live', '--to', '7.0.0'])
    expect(run.code, run.stderr).toBe(1)
    expect(run.stdout).toMatch(
      /^Live rehearsal of 5\.2\.0 -> 7\.0\.0 on a copy of lab's files: FAILED — .*SVC_TCP_ENDPOINTS lists 2 endpoints/m,
    )
    expect(production()).toEqual(before)
  })

  it('with --tcp-endpoint: passes on the copy (settings where 7.0.0 reads them, one strong PSK everywhere, one endpoint), the moves listed; production, its PSK and its processes unchanged; no PSK printed', async () => {
    const before = production()
    const pids = lab().pid('system-controller')
    const [keep = ''] = endpoints()
    const run = await lab().svcops(['rehearse', 'live', '--to', '7.0.0', '--tcp-endpoint', keep, '--json'])
    expect(run.code, run.stderr).toBe(0)
    const result = JSON.parse(run.stdout) as {
      ok: boolean
      verdict: string
      from: string
      changes: Array<{ path: string; change: string; why: string[] }>
      checks: Array<{ check: string; ok: boolean; detail?: string }>
      api: { from: string; to: string }
    }
    expect(result).toMatchObject({ ok: true, verdict: 'passed', from: '5.2.0', api: { from: '/api/v2', to: '/api/v3' } })
    expect(result.checks.map((c) => [c.check, c.ok])).toEqual(
      expect.arrayContaining([
        ['settings file where 7.0.0 reads it', true],
        ["every component's SVC_SYSTEM_CONTROLLER_PSK is the controller's PSK", true],
        ['the PSK passes the entropy check', true],
        ["production's settings and environment files as they were", true],
      ]),
    )
    expect(result.checks.find((c) => c.check.includes('SVC_TCP_ENDPOINT holds one endpoint'))).toMatchObject({
      ok: true,
      detail: `SVC_TCP_ENDPOINT=${keep}`,
    })
    // The settings file is written under /etc/opt and removed where 5.2.0 kept it; every connecting component gets the new PSK.
    expect(result.changes.some((c) => c.change === 'written' && c.path.startsWith('/etc/opt/'))).toBe(true)
    expect(result.changes.some((c) => c.change === 'removed')).toBe(true)
    expect(result.changes.flatMap((c) => c.why).join('\n')).toMatch(/new PSK: the PSK fails the entropy check/)
    expect(production()).toEqual(before)
    expect(lab().pid('system-controller')).toBe(pids)
    for (const psk of lab().psks()) for (const text of lab().everythingPrinted()) expect(text).not.toContain(psk)
  })

  it('refuses a release that is not newer than the running one, in one sentence (exit 2), before anything is copied', async () => {
    const run = await lab().svcops(['rehearse', 'live', '--to', '5.2.0'])
    expect(run.code).toBe(2)
    expect(run.stderr).toMatch(
      /--to: 5\.2\.0 is not newer than 5\.2\.0, the release the live system runs; expected a later release to rehearse\./,
    )
  })
})
