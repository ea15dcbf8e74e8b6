/**
 * `svcops schedule backup`: the nightly backup on a systemd timer for host installs. The units are
 * checked by systemd's own tools (`systemd-analyze calendar` normalizes `--at`, `systemd-analyze
 * verify` loads the written units); what this cannot show is a timer firing, which needs a running
 * systemd as PID 1.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { stringify as toYaml } from 'yaml'
import { unitWord } from '../../src/schedule/systemd-timer.ts'
import { ROOT, runSvcops } from '../support/cli.ts'

let dir: string
let stackFile: string

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'svcops-schedule-'))
  stackFile = join(dir, 'Pulumi.nightly.yaml')
  writeFileSync(
    stackFile,
    toYaml({
      config: {
        'svcops:recording': {
          version: '1.4.0',
          hosts: [{ name: 'rec-1', url: 'http://127.0.0.1:8080' }],
          database: { host: '127.0.0.1', name: 'recordings', user: 'recorder', password: { env: 'SVCOPS_NIGHTLY_DB_PASSWORD' } },
        },
        'svcops:backup': {
          store: { path: join(dir, 'store') },
          recipients: [join(dir, 'recipient.asc')],
          identity: { file: join(dir, 'identity.asc') },
        },
      },
    }),
  )
})

const schedule = (...args: string[]): ReturnType<typeof runSvcops> =>
  runSvcops(['--stack-file', stackFile, 'schedule', 'backup', ...args], { env: { SVCOPS_NIGHTLY_DB_PASSWORD: 'never-in-a-unit' } })

describe('svcops schedule backup', () => {
  it('shows both units with --dry-run, the calendar as systemd normalizes it, and writes nothing', async () => {
    const units = join(dir, 'dry')
    const run = await schedule('--at', 'Mon..Fri 1:15', '--keep-last', '7', '--unit-dir', units, '--dry-run', '--json')
    expect(run.code, run.stderr).toBe(0)
    const result = JSON.parse(run.stdout) as { calendar: string; units: { path: string; content: string }[]; enable: string[] }
    expect(result.calendar).toBe('Mon..Fri *-*-* 01:15:00')
    expect(result.units.map((u) => u.path)).toEqual([
      join(units, 'svcops-backup-nightly.service'),
      join(units, 'svcops-backup-nightly.timer'),
    ])
    expect(result.units[0]?.content).toContain(`ExecStart=${join(ROOT, 'bin/svcops')} backup run --env nightly --json --keep-last 7\n`)
    expect(result.units[1]?.content).toContain('OnCalendar=Mon..Fri *-*-* 01:15:00\n')
    expect(result.enable).toEqual(['systemctl daemon-reload', 'systemctl enable --now svcops-backup-nightly.timer'])
    expect(existsSync(units)).toBe(false)
  })

  it('writes units that systemd-analyze verify loads, confined to the run folders and the store, with no secret in them', async () => {
    const units = join(dir, 'units')
    const run = await schedule('--at', 'daily', '--unit-dir', units, '--user', 'root')
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toMatch(/Enable it with: systemctl daemon-reload && systemctl enable --now svcops-backup-nightly\.timer/)
    const service = join(units, 'svcops-backup-nightly.service')
    const timer = join(units, 'svcops-backup-nightly.timer')
    execFileSync('systemd-analyze', ['verify', service, timer], { stdio: 'pipe' })
    const text = readFileSync(service, 'utf8')
    expect(text).toContain(`Environment=SVCOPS_STACKS_DIR=${dir}\n`)
    expect(text).toContain('EnvironmentFile=-/etc/svcops/nightly.env\n')
    expect(text).toContain('ProtectSystem=strict\n')
    expect(text).toContain(`ReadWritePaths=${join(dir, 'store')}\n`)
    expect(readFileSync(timer, 'utf8')).toContain('Persistent=true\n')
    expect(statSync(service).mode & 0o777).toBe(0o644)
    expect(text + readFileSync(timer, 'utf8')).not.toContain('never-in-a-unit')
    // Again with the same answer: nothing to change.
    const again = await schedule('--at', 'daily', '--unit-dir', units, '--user', 'root')
    expect(again.stdout).toContain(`unchanged ${service}`)
  })

  it('refuses to overwrite a unit somebody edited, unless --replace', async () => {
    const units = join(dir, 'edited')
    expect((await schedule('--at', 'daily', '--unit-dir', units)).code).toBe(0)
    const timer = join(units, 'svcops-backup-nightly.timer')
    writeFileSync(timer, readFileSync(timer, 'utf8').replace('Persistent=true', 'Persistent=false'))
    const refused = await schedule('--at', 'weekly', '--unit-dir', units)
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain(`${timer} exists with other content; expected --replace to overwrite it`)
    expect(readFileSync(timer, 'utf8')).toContain('Persistent=false')
    expect((await schedule('--at', 'weekly', '--unit-dir', units, '--replace')).code).toBe(0)
    expect(readFileSync(timer, 'utf8')).toContain('OnCalendar=Mon *-*-* 00:00:00\n')
  })

  it('refuses a calendar systemd cannot parse and a bad --keep-last, in one sentence each, writing nothing', async () => {
    const units = join(dir, 'bad')
    const calendar = await schedule('--at', 'every night', '--unit-dir', units)
    expect(calendar.code).toBe(2)
    expect(calendar.stderr).toMatch(/--at: 'every night' is not valid \(.*\); expected a systemd calendar expression like/)
    const keep = await schedule('--at', 'daily', '--keep-last', 'seven', '--unit-dir', units)
    expect(keep.code).toBe(2)
    expect(keep.stderr).toContain("--keep-last: 'seven' is not valid; expected a whole number.")
    expect(existsSync(units)).toBe(false)
  })

  it('quotes unit command words the way systemd reads them back', () => {
    expect(unitWord('/opt/svcops/bin/svcops')).toBe('/opt/svcops/bin/svcops')
    expect(unitWord('a b')).toBe('"a b"')
    expect(unitWord('50%')).toBe('50%%')
    expect(unitWord('$HOME')).toBe('$$HOME')
    expect(unitWord('say "hi"')).toBe('"say \\"hi\\""')
  })
})
