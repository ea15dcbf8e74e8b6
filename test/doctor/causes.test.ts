/**
 * One lab fault per cause of the seed's "common upgrade problems": with the fault on, the doctor
 * names that cause and no other, with its evidence; with it off, nothing.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { doctorRecording } from '../../playbooks/doctor.ts'
import { switchLabFault, type LabFault } from '../../src/lab/recording-faults.ts'
import { runCli, startUpgradeLab, type UpgradeLab } from '../recording/fixture.ts'

let lab: UpgradeLab
const target = () => ({
  env: lab.env(),
  superuserPassword: readFileSync(join(lab.labDir, 'secrets', 'postgres-password'), 'utf8').trim(),
})

beforeAll(async () => {
  lab = await startUpgradeLab({ hosts: 1, version: '1.4.0', recordings: 6 })
}, 180_000)

afterAll(async () => {
  await lab?.stop()
})

const cases: { fault: LabFault; cause: string; evidence: RegExp }[] = [
  { fault: 'config-syntax', cause: 'config-syntax', evidence: /recording\.json:\d+:\d+: .*JSON/ },
  { fault: 'password-unreadable', cause: 'file-permissions', evidence: /recording\.dbpass/ },
  { fault: 'tables-not-owned', cause: 'schema-change-permission', evidence: /table public\.recordings: owner postgres/ },
  { fault: 'storage-unwritable', cause: 'storage-paths', evidence: /dr-xr-xr-x/ },
  { fault: 'location-renamed', cause: 'storage-location-names', evidence: /location "main"/ },
  { fault: 'media-api-wrong', cause: 'media-api', evidence: /media\.invalid/ },
  { fault: 'tiny-cache', cause: 'content-info-cache', evidence: /contentInfoCacheSize = 1/ },
  { fault: 'rate-limit', cause: 'write-rate-limit', evidence: /writeRateLimit = 1/ },
  { fault: 'missing-index', cause: 'list-query', evidence: /Seq Scan on recordings/ },
  { fault: 'storage-full', cause: 'disk-io', evidence: /df .* 0 +100%|\b0 KiB free|svcops-lab-full/ },
]

/**
 * A slow synchronous write is this machine's disk under the load of other work (CI runs several
 * files at once), not a lab fault: disk-io's warning of one is left out of what a case compares.
 */
const slowWriteHere = (f: { cause: string; severity: string; summary: string }) =>
  f.cause === 'disk-io' && f.severity === 'warning' && /^A synchronous 4 KiB write to location /.test(f.summary)

describe('svcops doctor recording names the cause of each lab fault, and no other', () => {
  it('finds nothing on a healthy lab, and lists every cause with its check', async () => {
    const d = await doctorRecording(lab.env())
    const loaded = d.findings.some(slowWriteHere)
    expect(d.findings.filter((f) => !slowWriteHere(f))).toEqual([])
    expect(new Set(d.checks.map((c) => c.cause)).size).toBe(15)
    expect(d.checks.filter((c) => c.status !== 'ok' && !(loaded && c.cause === 'disk-io'))).toEqual([])
    // Each measure with its unit: "a synchronous 4 KiB write took 3 ms", never a bare "write 3".
    expect(d.checks.find((c) => c.cause === 'disk-io')?.detail).toMatch(/KiB free of \d+ KiB, a synchronous 4 KiB write took \d+ ms/)
  })

  for (const c of cases) {
    it(`${c.fault}: names ${c.cause} with its evidence and remedy`, async () => {
      await switchLabFault(target(), c.fault, true)
      try {
        const d = await doctorRecording(lab.env())
        const findings = d.findings.filter((f) => !slowWriteHere(f))
        expect(findings.map((f) => f.cause)).toEqual([c.cause])
        const finding = findings[0]!
        expect(finding.evidence.join('\n')).toMatch(c.evidence)
        expect(finding.remedy.length).toBeGreaterThan(10)
      } finally {
        await switchLabFault(target(), c.fault, false)
      }
    })
  }

  it('the CLI exits 5 with the findings as JSON when something needs a person', async () => {
    await switchLabFault(target(), 'tables-not-owned', true)
    try {
      const run = await runCli(['--stack-file', lab.envFile, '--json', 'doctor', 'recording'])
      expect(run.code, run.stderr).toBe(5)
      const out = JSON.parse(run.stdout) as { findings: { cause: string; severity: string }[] }
      expect(out.findings).toEqual([expect.objectContaining({ cause: 'schema-change-permission', severity: 'error' })])
    } finally {
      await switchLabFault(target(), 'tables-not-owned', false)
    }
  })
})
