/**
 * `svcops schedule upgrade`: an upgrade at the start of a maintenance window on a systemd timer for
 * host installs. The units are checked by systemd's own tools (`systemd-analyze calendar` for
 * `--at`, `systemd-analyze verify` for every unit written or shown); a timer firing needs systemd
 * as PID 1 and is not shown here. A second run at the same version changes nothing (the upgrade's
 * own no-op), so the timer itself only has to start `upgrade ... --yes` in the window.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { stringify as toYaml } from 'yaml'
import { svcopsCommand } from '../../src/core/paths.ts'
import { runSvcops, runSvcopsInProcess } from '../support/cli.ts'

/** `systemd-analyze verify`: exit 0 and not one message about the files. */
function verifyUnits(files: string[]): void {
  const result = spawnSync('systemd-analyze', ['verify', ...files], { encoding: 'utf8' })
  if (result.error) throw new Error(`systemd-analyze is missing; install it with: apt-get install -y systemd (${result.error.message})`)
  const about = (result.stdout + result.stderr).split('\n').filter((l) => files.some((f) => l.includes(f)))
  expect({ code: result.status, messages: about }).toEqual({ code: 0, messages: [] })
}

let dir: string
let stackFile: string

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'svcops-schedule-upgrade-'))
  stackFile = join(dir, 'Pulumi.weekly.yaml')
  writeFileSync(
    stackFile,
    toYaml({
      config: {
        'svcops:recording': {
          version: '1.4.0',
          hosts: [{ name: 'rec-1', url: 'http://127.0.0.1:8080', transport: 'local' }],
          database: { host: '127.0.0.1', name: 'recordings', user: 'recorder', password: { env: 'SVCOPS_WEEKLY_DB_PASSWORD' } },
        },
      },
    }),
  )
})

const scheduleArgs = (args: string[]): string[] => ['--stack-file', stackFile, 'schedule', 'upgrade', ...args]
const scheduleEnv = { SVCOPS_WEEKLY_DB_PASSWORD: 'never-in-a-unit' }
/** The real CLI in a child process: its exit code, stdout and stderr as a user or scheduler sees them. */
const schedule = (...args: string[]): ReturnType<typeof runSvcops> => runSvcops(scheduleArgs(args), { env: scheduleEnv })
/**
 * The same command in this process, for cases that read only its answer and the files it wrote (a
 * spawn costs about 0.4 s of CPU to start): the dry run and the first refusal keep a real process.
 */
const scheduleInProcess = (...args: string[]): ReturnType<typeof runSvcopsInProcess> =>
  runSvcopsInProcess(scheduleArgs(args), { env: scheduleEnv })

describe('svcops schedule upgrade', () => {
  it('shows the units of a recording upgrade in its window with --dry-run, verified by systemd, and writes nothing', async () => {
    const units = join(dir, 'dry')
    const run = await schedule(
      ...['--system', 'recording', '--to', '2.0.0', '--at', 'Sun 2:30', '--window', '2h', '--unit-dir', units, '--dry-run', '--json'],
    )
    expect(run.code, run.stderr).toBe(0)
    const result = JSON.parse(run.stdout) as { calendar: string; units: { path: string; content: string }[]; enable: string[] }
    expect(result.calendar).toBe('Sun *-*-* 02:30:00')
    expect(result.units.map((u) => u.path)).toEqual([
      join(units, 'svcops-upgrade-recording-weekly.service'),
      join(units, 'svcops-upgrade-recording-weekly.timer'),
    ])
    const [node, ...cli] = svcopsCommand()
    // The upgrade itself, unattended, bounded by the window; exactly this stack file, Node by absolute path.
    expect(result.units[0]?.content).toContain(
      `ExecStart=${node} ${cli.join(' ')} --stack-file ${stackFile} upgrade recording --to 2.0.0 --yes --json --window 2h\n`,
    )
    expect(node?.startsWith('/')).toBe(true)
    // A window missed while the host was off is not caught up at boot, outside it.
    expect(result.units[1]?.content).toContain('OnCalendar=Sun *-*-* 02:30:00\nPersistent=false\n')
    expect(result.enable).toEqual(['systemctl daemon-reload', 'systemctl enable --now svcops-upgrade-recording-weekly.timer'])
    expect(existsSync(units)).toBe(false)
    const shown = join(dir, 'dry-verified')
    mkdirSync(shown)
    const files = result.units.map((u) => join(shown, u.path.split('/').at(-1) as string))
    result.units.forEach((u, i) => writeFileSync(files[i] as string, u.content))
    verifyUnits(files)
  })

  it('writes the units, which systemd-analyze verify loads, with no secret in them', async () => {
    const units = join(dir, 'units')
    const run = await scheduleInProcess(
      '--system',
      'recording',
      '--to',
      '2.0.0',
      '--at',
      'Sun 02:30',
      '--unit-dir',
      units,
      '--user',
      'root',
    )
    expect(run.code, run.stderr).toBe(0)
    const service = join(units, 'svcops-upgrade-recording-weekly.service')
    const timer = join(units, 'svcops-upgrade-recording-weekly.timer')
    expect(run.stdout).toContain(`wrote ${service}`)
    verifyUnits([service, timer])
    expect(readFileSync(service, 'utf8') + readFileSync(timer, 'utf8')).not.toContain('never-in-a-unit')
  })

  it('refuses bad input in one sentence each, writing nothing', async () => {
    const units = join(dir, 'refused')
    const cases: Array<[string[], string]> = [
      [['--system', 'recording', '--to', 'latest', '--at', 'daily'], "--to: 'latest' is not valid; expected a version like 2.0.0."],
      [['--system', 'recording', '--to', '2.0.0', '--at', 'daily', '--window', 'soon'], "--window: 'soon' is not a duration"],
      [
        ['--system', 'live', '--to', '7.0.0', '--at', 'daily', '--window', '2h'],
        "--window: '2h' is not used by the live upgrade, which has no batches to stop between",
      ],
      [['--system', 'recording', '--to', '2.0.0', '--at', 'daily', '--ack', 'x/y'], "--ack: 'x/y' is only for --system live"],
      [
        ['--system', 'live', '--to', '7.0.0', '--at', 'daily'],
        'live: missing or not on hosts; expected the svcops:live section of a host install',
      ],
      [['--system', 'recording', '--to', '2.0.0', '--at', 'someday'], "--at: 'someday' is not valid"],
      [['--system', 'recording', '--to', '2.0.0', '--at', 'daily', '--user', 'a b'], "--user: 'a b' is not valid"],
    ]
    for (const [i, [args, message]] of cases.entries()) {
      const run = await (i === 0 ? schedule : scheduleInProcess)(...args, '--unit-dir', units)
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(2)
      expect(run.stderr).toContain(message)
    }
    const wrong = await scheduleInProcess('--system', 'database', '--to', '2.0.0', '--at', 'daily', '--unit-dir', units)
    expect(wrong.code).not.toBe(0)
    expect(wrong.stderr).toContain("'database'")
    expect(existsSync(units)).toBe(false)
  })
})
