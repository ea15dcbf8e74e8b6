/**
 * `svcops schedule backup`: the nightly backup on a systemd timer for host installs. The units are
 * checked by systemd's own tools (`systemd-analyze calendar` normalizes `--at`, `systemd-analyze
 * verify` loads every unit written or shown, and must say nothing about it); what this cannot show
 * is a timer firing, which needs a running systemd as PID 1. Values come from paths and stack files
 * svcops does not control: a newline in one would add a directive, and each directive has its own
 * escaping rule.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { stringify as toYaml } from 'yaml'
import { svcopsCommand } from '../../src/core/paths.ts'
import { unitItem, unitNode, unitWord } from '../../src/schedule/systemd-timer.ts'
import { ROOT, runSvcops, runSvcopsInProcess } from '../support/cli.ts'

/**
 * `systemd-analyze verify` of unit files: exit 0 and not one message about them (it exits 0 on
 * warnings such as an ignored relative path, so its output is read too).
 */
function verifyUnits(files: string[]): void {
  const result = spawnSync('systemd-analyze', ['verify', ...files], { encoding: 'utf8' })
  if (result.error) throw new Error(`systemd-analyze is missing; install it with: apt-get install -y systemd (${result.error.message})`)
  const about = (result.stdout + result.stderr).split('\n').filter((l) => files.some((f) => l.includes(f)))
  expect({ code: result.status, messages: about }).toEqual({ code: 0, messages: [] })
}

/** Writes the units a dry run printed into `dir` and verifies them. */
function verifyShown(units: { path: string; content: string }[], dir: string): void {
  mkdirSync(dir, { recursive: true })
  const files = units.map((u) => join(dir, u.path.split('/').at(-1) as string))
  units.forEach((u, i) => writeFileSync(files[i] as string, u.content))
  verifyUnits(files)
}

/** A stack file at `file` whose backup store is `storePath`. */
function writeStack(file: string, storePath: string): void {
  mkdirSync(join(file, '..'), { recursive: true })
  writeFileSync(
    file,
    toYaml({
      config: {
        'svcops:recording': {
          version: '1.4.0',
          hosts: [{ name: 'rec-1', url: 'http://127.0.0.1:8080', transport: 'local' }],
          database: { host: '127.0.0.1', name: 'recordings', user: 'recorder', password: { env: 'SVCOPS_NIGHTLY_DB_PASSWORD' } },
        },
        'svcops:backup': {
          store: { path: storePath },
          recipients: ['/etc/svcops/recipient.asc'],
          identity: { file: '/etc/svcops/identity.asc' },
        },
      },
    }),
  )
}

let dir: string
let stackFile: string

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'svcops-schedule-'))
  stackFile = join(dir, 'Pulumi.nightly.yaml')
  writeStack(stackFile, join(dir, 'store'))
})

const scheduleArgs = (args: string[]): string[] => ['--stack-file', stackFile, 'schedule', 'backup', ...args]
const scheduleEnv = { SVCOPS_NIGHTLY_DB_PASSWORD: 'never-in-a-unit' }
/** The real CLI in a child process: its exit code, stdout and stderr as a user or scheduler sees them. */
const schedule = (...args: string[]): ReturnType<typeof runSvcops> => runSvcops(scheduleArgs(args), { env: scheduleEnv })
/**
 * The same command in this process, for cases that read only its answer and the files it wrote: a
 * spawn costs about 0.4 s of CPU to start; each behaviour the user sees at the process (exit 0 with
 * the units on stdout, exit 2 with the sentence on stderr, the working directory) keeps a real one.
 */
const scheduleInProcess = (...args: string[]): ReturnType<typeof runSvcopsInProcess> =>
  runSvcopsInProcess(scheduleArgs(args), { env: scheduleEnv })

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
    // Node by absolute path (the one running svcops), bin/svcops' V8 flags, and exactly this stack file.
    const [node, ...cli] = svcopsCommand()
    expect(cli).toEqual(['--max-semi-space-size=4', join(ROOT, 'bin/svcops')])
    expect(result.units[0]?.content).toContain(
      `ExecStart=${node} ${cli.join(' ')} --stack-file ${stackFile} backup run --json --keep-last 7\n`,
    )
    expect(result.units[0]?.content).not.toContain('--env')
    expect(result.units[1]?.content).toContain('OnCalendar=Mon..Fri *-*-* 01:15:00\n')
    expect(result.enable).toEqual(['systemctl daemon-reload', 'systemctl enable --now svcops-backup-nightly.timer'])
    expect(existsSync(units)).toBe(false)
    verifyShown(result.units, join(dir, 'dry-verified'))
  })

  it('writes units that systemd-analyze verify loads, confined to the run folders and the store, with no secret in them', async () => {
    const units = join(dir, 'units')
    const run = await scheduleInProcess('--at', 'daily', '--unit-dir', units, '--user', 'root')
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toMatch(/Enable it with: systemctl daemon-reload && systemctl enable --now svcops-backup-nightly\.timer/)
    const service = join(units, 'svcops-backup-nightly.service')
    const timer = join(units, 'svcops-backup-nightly.timer')
    verifyUnits([service, timer])
    const text = readFileSync(service, 'utf8')
    expect(text).toContain('EnvironmentFile=-/etc/svcops/nightly.env\n')
    expect(text).toContain('ProtectSystem=strict\n')
    expect(text).toContain(`ReadWritePaths=${join(dir, 'store')}\n`)
    expect(readFileSync(timer, 'utf8')).toContain('Persistent=true\n')
    expect(statSync(service).mode & 0o777).toBe(0o644)
    expect(text + readFileSync(timer, 'utf8')).not.toContain('never-in-a-unit')
    // Again with the same answer: nothing to change.
    const again = await scheduleInProcess('--at', 'daily', '--unit-dir', units, '--user', 'root')
    expect(again.stdout).toContain(`unchanged ${service}`)
  })

  it('refuses to overwrite a unit somebody edited, unless --replace', async () => {
    const units = join(dir, 'edited')
    expect((await scheduleInProcess('--at', 'daily', '--unit-dir', units)).code).toBe(0)
    const timer = join(units, 'svcops-backup-nightly.timer')
    writeFileSync(timer, readFileSync(timer, 'utf8').replace('Persistent=true', 'Persistent=false'))
    const refused = await schedule('--at', 'weekly', '--unit-dir', units)
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain(`${timer} exists with other content; expected --replace to overwrite it`)
    expect(readFileSync(timer, 'utf8')).toContain('Persistent=false')
    expect((await scheduleInProcess('--at', 'weekly', '--unit-dir', units, '--replace')).code).toBe(0)
    expect(readFileSync(timer, 'utf8')).toContain('OnCalendar=Mon *-*-* 00:00:00\n')
    verifyUnits([join(units, 'svcops-backup-nightly.service'), timer])
  })

  it('refuses a calendar systemd cannot parse and a bad --keep-last, in one sentence each, writing nothing', async () => {
    const units = join(dir, 'bad')
    const calendar = await scheduleInProcess('--at', 'every night', '--unit-dir', units)
    expect(calendar.code).toBe(2)
    expect(calendar.stderr).toMatch(/--at: 'every night' is not valid \(.*\); expected a systemd calendar expression like/)
    const keep = await scheduleInProcess('--at', 'daily', '--keep-last', 'seven', '--unit-dir', units)
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
    expect(unitWord(';')).toBe('";"') // a lone unquoted ; would separate two commands
    // Environment= and ReadWritePaths= expand no variables: `$` stays one `$`.
    expect(unitItem('/srv/b$x')).toBe('/srv/b$x')
    expect(unitItem('A=1 $HOME')).toBe('"A=1 $HOME"')
    expect(unitItem('/srv/50%')).toBe('/srv/50%%')
    expect(unitItem('-/srv/x')).toBe('"-/srv/x"') // not the "ignore if missing" prefix
  })
})

describe('svcops schedule backup with values svcops does not control', () => {
  it('refuses a newline in the stack file path, the backup store path or the working directory, naming it, writing nothing', async () => {
    const units = join(dir, 'injected')
    const evil = join(dir, 'x\nExecStartPre=/bin/touch /tmp/svcops-pwned\n')
    const inPath = join(evil, 'Pulumi.nightly.yaml')
    writeStack(inPath, join(dir, 'store'))
    const byPath = await runSvcopsInProcess(['--stack-file', inPath, 'schedule', 'backup', '--at', 'daily', '--unit-dir', units])
    expect(byPath.code).toBe(2)
    expect(byPath.stderr).toMatch(
      /^svcops: the stack file path: '.*x\\nExecStartPre=\/bin\/touch \/tmp\/svcops-pwned\\n\/Pulumi\.nightly\.yaml' holds a control character .*; expected one line of printable text\.\n$/,
    )
    const inStore = join(dir, 'store-value', 'Pulumi.nightly.yaml')
    writeStack(inStore, '/srv/backups\nExecStartPre=/bin/touch /tmp/svcops-pwned')
    const byStore = await runSvcopsInProcess(['--stack-file', inStore, 'schedule', 'backup', '--at', 'daily', '--unit-dir', units])
    expect(byStore.code).toBe(2)
    expect(byStore.stderr).toContain(
      `svcops: ${inStore}: backup.store.path: '/srv/backups\\nExecStartPre=/bin/touch /tmp/svcops-pwned' holds a control character`,
    )
    mkdirSync(evil, { recursive: true })
    const byCwd = await runSvcops(['--stack-file', stackFile, 'schedule', 'backup', '--at', 'daily', '--unit-dir', units], { cwd: evil })
    expect(byCwd.code).toBe(2)
    expect(byCwd.stderr).toMatch(/^svcops: the working directory: '.*\\nExecStartPre=.*' holds a control character/)
    expect(existsSync(units)).toBe(false)
  })

  it("escapes $ and % by each directive's rule and runs the stack file it was given, by absolute path", async () => {
    const odd = join(dir, 'odd $HOME 100%')
    const file = join(odd, 'Pulumi.nightly.yaml')
    const store = join(odd, 'store $x')
    writeStack(file, store)
    const runs = join(odd, 'runs $y')
    const units = join(dir, 'odd-units')
    const run = await runSvcopsInProcess(['--stack-file', file, 'schedule', 'backup', '--at', 'daily', '--unit-dir', units], {
      env: { SVCOPS_RUNS_DIR: runs },
    })
    expect(run.code, run.stderr).toBe(0)
    const service = join(units, 'svcops-backup-nightly.service')
    verifyUnits([service, join(units, 'svcops-backup-nightly.timer')])
    const text = readFileSync(service, 'utf8')
    // Paths and variables: quoted, `%` doubled, `$` kept single (systemd keeps `$$` literally there).
    expect(text).toContain(`ReadWritePaths="${store.replace('%', '%%')}"\n`)
    expect(text).toContain(`Environment="SVCOPS_RUNS_DIR=${runs.replace('%', '%%')}"\n`)
    expect(text).not.toMatch(/^(ReadWritePaths|Environment)=.*\$\$/m)
    // ExecStart=: `$` doubled (variables are expanded there), the stack file pinned.
    expect(text).toContain(`--stack-file "${file.replaceAll('$', '$$$$').replace('%', '%%')}" backup run --json\n`)
  })

  it("starts the unit's svcops with an absolute Node >= 22.18, and refuses to write a unit for an older one", async () => {
    const shown = await runSvcops(['--stack-file', stackFile, 'schedule', 'backup', '--at', 'daily', '--dry-run', '--json'])
    const units = (JSON.parse(shown.stdout) as { units: { content: string }[] }).units
    const exec = /^ExecStart=(\S+) /m.exec(units[0]?.content ?? '')?.[1] ?? ''
    expect(exec.startsWith('/')).toBe(true)
    const version = execFileSync(exec, ['--version'], { encoding: 'utf8' }).trim()
    const [major = 0, minor = 0] = version.slice(1).split('.').map(Number)
    expect(major > 22 || (major === 22 && minor >= 18), version).toBe(true)
    expect(() => unitNode('/usr/bin/node', 'v20.19.2')).toThrow(
      'The Node.js running svcops (/usr/bin/node) is v20.19.2, which the unit would run svcops with; expected Node.js >= 22.18',
    )
    expect(unitNode('/opt/node/bin/node', '22.18.0')).toBe('/opt/node/bin/node')
  })
})
