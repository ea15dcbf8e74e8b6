/**
 * `svcops probe` against a recording lab (docs/contract.md): the manager's auth API and scopes,
 * each host's transport, `GET /`, `GET /api/v1/content` and configuration file, and the database
 * all hold; with one assumption broken (the configuration file elsewhere) the probe names exactly
 * that one with the stack key to set, and changes nothing. The stack's declared checks of the service
 * (`svcops:recording.checks`) are asked after the seed's own, by the probe and by `verify recording`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCliInProcess, startUpgradeLab, type UpgradeLab } from './fixture.ts'

let lab: UpgradeLab

beforeAll(async () => {
  lab = await startUpgradeLab({ hosts: 2, version: '2.0.0', recordings: 2 })
}, 120_000)

afterAll(async () => {
  await lab?.stop()
})

interface Row {
  part: string
  where: string
  interface: string
  holds: boolean | null
  evidence: string
  key?: string
}

async function probe(): Promise<{ code: number; rows: Row[]; stderr: string }> {
  const run = await runCliInProcess(['--stack-file', lab.envFile, 'probe', '--json'])
  return { code: run.code ?? -1, stderr: run.stderr, rows: (JSON.parse(run.stdout) as { rows: Row[] }).rows }
}

describe('svcops probe on a recording lab', () => {
  it('every interface holds: manager, each host (transport, GET /, the content list, the configuration file), the database (exit 0)', async () => {
    const { code, rows, stderr } = await probe()
    expect(code, stderr).toBe(0)
    expect(rows.filter((r) => r.holds !== true)).toEqual([])
    expect(rows.map((r) => `${r.part} ${r.where === 'rec-1' || r.where === 'rec-2' ? r.where : '-'} ${r.interface}`)).toEqual(
      expect.arrayContaining([
        'manager - POST /api/v1/auth/login, /token, /logout',
        'recording rec-1 GET /',
        'recording rec-2 GET /api/v1/content?limit=N',
        'database - PostgreSQL',
      ]),
    )
  })

  it('with the configuration file assumed elsewhere, names exactly that assumption on each host with recording.configPath (exit 5), nothing changed', async () => {
    const versions = await lab.versions()
    const count = (await lab.listAll()).length
    const before = lab.env().recording?.configPath
    lab.setRecording({ configPath: '/etc/opt/svc/elsewhere.json' })
    try {
      const { code, rows } = await probe()
      expect(code).toBe(5)
      const failed = rows.filter((r) => r.holds === false)
      expect(failed.map((r) => `${r.where} ${r.interface} ${r.key ?? ''}`)).toEqual([
        'rec-1 /etc/opt/svc/elsewhere.json recording.configPath',
        'rec-2 /etc/opt/svc/elsewhere.json recording.configPath',
      ])
    } finally {
      lab.setRecording({ configPath: before })
    }
    expect(await lab.versions()).toEqual(versions)
    expect((await lab.listAll()).length).toBe(count)
  })

  it("runs the lab stack's declared checks (svcops:recording.checks) on each host, and names a declared one whose path does not answer with its key (exit 5)", async () => {
    const { rows } = await probe()
    expect(rows.filter((r) => r.interface === 'its configuration file').map((r) => `${r.where} ${String(r.holds)}`)).toEqual([
      'rec-1 true',
      'rec-2 true',
    ])
    const before = lab.env().recording?.checks
    lab.setRecording({ checks: [...(before ?? []), { name: 'reports ready', web: { path: '/ready', contains: { ready: true } } }] })
    try {
      const { code, rows: broken } = await probe()
      expect(code).toBe(5)
      const failed = broken.filter((r) => r.holds === false)
      expect(failed.map((r) => `${r.where} ${r.interface} ${r.key ?? ''}`)).toEqual([
        'rec-1 reports ready recording.checks[1] (reports ready)',
        'rec-2 reports ready recording.checks[1] (reports ready)',
      ])
      expect(failed[0]?.evidence).toBe('GET /ready answered 404; expected 200')
    } finally {
      lab.setRecording({ checks: before })
    }
  })

  it('svcops verify recording asks the declared checks after the seed’s own and fails naming one that does not hold', async () => {
    const before = lab.env().recording?.checks
    lab.setRecording({
      checks: [{ name: 'a file that is not there', command: { argv: ['test', '-e', '{root}/etc/opt/{product}/absent.json'] } }],
    })
    try {
      const run = await runCliInProcess(['--stack-file', lab.envFile, 'verify', 'recording', '--no-test-recording', '--json'])
      expect(run.code).toBe(1)
      const hosts = (
        JSON.parse(run.stdout) as { hosts: Array<{ host: string; checks: Array<{ check: string; ok: boolean; detail?: string }> }> }
      ).hosts
      const checks = hosts[0]?.checks ?? []
      // After GET / and the content list, before the service's status.
      expect(checks.map((c) => c.check.replace(/limit=\d+/, 'limit=N')).slice(0, 3)).toEqual([
        'GET / (health)',
        'GET /api/v1/content?limit=N',
        'a file that is not there',
      ])
      expect(checks.filter((c) => !c.ok).map((c) => c.check)).toEqual(['a file that is not there'])
      expect(checks[2]?.detail).toMatch(/^test -e \S+\/etc\/opt\/svc\/absent\.json exited 1/)
    } finally {
      lab.setRecording({ checks: before })
    }
  })
})
