/**
 * Upgrade benchmarks, side by side in one run (never part of `npm test`):
 *
 * 1. Downtime of one host, 1.4.0 -> 1.5.0: `svcops upgrade recording` (stop -> healthy, and stop ->
 *    verified, from its report) against the bare procedure as a shell script over SSH (stop; dpkg -i;
 *    start; poll GET / until it answers), once with the package already on the host and once
 *    copying it (scp) inside the window, as a script that does not stage first must.
 * 2. Fleet of N lab hosts (default 10), batch B (default 5): `svcops upgrade recording --batch B`
 *    (canary, then batches; backup + test restore, verification) against an equivalent Ansible
 *    playbook (bench/upgrade/ansible.ts: serial [1, B], forks B) on the same lab; wall time, and
 *    CPU time and peak RSS of each tool's own process tree (bench/measure.ts).
 * 3. With `--scale 10,25,50`: the orchestrator alone (the svcops process tree: the CLI and the
 *    pg_dump/pg_restore/psql it runs; not the hosts' sshd sessions, supervisords and services) at
 *    each fleet size, on the same lab (`--hosts rec-1,...`): wall, CPU seconds, CPU per host, peak RSS.
 *
 *   node bench/upgrade/run.ts [--rounds 3] [--fleet 10] [--fleet-rounds 3] [--batch 5] [--scale 10,25,50] [--cpu-prof DIR]
 *
 * `--rounds 0` skips part 1, `--fleet-rounds 0` the side by side. Each fleet round runs both tools
 * 1.4.0 -> 1.5.0 (`svcops rollback recording --to 1.4.0` puts the fleet back between runs, unmeasured); the tables give the
 * median and the range, and the load average before and after each part.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { parseArgs } from 'node:util'
import { svcopsCommand } from '../../src/core/paths.ts'
import { findDebFile } from '../../src/drivers/packages.ts'
import { startUpgradeLab, type UpgradeLab } from '../../test/recording/fixture.ts'
import { loadAverage, measureCommand, median, type Measured } from '../measure.ts'
import { requireTools, TOOLS } from '../require-tools.ts'
import { writeAnsibleFleet } from './ansible.ts'

requireTools(
  'bench/upgrade/run.ts',
  TOOLS.ansible,
  TOOLS.sshClient,
  TOOLS.sshServer,
  TOOLS.labHost,
  TOOLS.postgresServer,
  TOOLS.postgresClient,
  TOOLS.time,
)

const MAX_FLEET = 50
const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    fleet: { type: 'string', default: '10' },
    'fleet-rounds': { type: 'string', default: '3' },
    batch: { type: 'string', default: '5' },
    scale: { type: 'string', default: '' },
    'cpu-prof': { type: 'string' },
  },
})

/** A whole number of at least `min` (and at most `max`) from flag `name`, else exit 2 with one sentence. */
function wholeNumber(name: string, text: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const n = Number(text)
  if (/^\d+$/.test(text) && n >= min && n <= max) return n
  process.stderr.write(
    `--${name}: '${text}' is not valid; expected a whole number from ${min} to ${max === Number.MAX_SAFE_INTEGER ? 'up' : max}.\n`,
  )
  process.exit(2)
}
const rounds = wholeNumber('rounds', values.rounds, 0)
const fleetSize = wholeNumber('fleet', values.fleet, 1, MAX_FLEET)
const fleetRounds = wholeNumber('fleet-rounds', values['fleet-rounds'], 0)
const batchSize = wholeNumber('batch', values.batch, 1)
const scale = values.scale ? values.scale.split(',').map((n) => wholeNumber('scale', n.trim(), 1, fleetSize)) : []

const s = (ms: number): string => (ms / 1000).toFixed(2)
const f1 = (x: number): string => x.toFixed(1)
const range = (xs: number[]): string => `${Math.min(...xs).toFixed(2)} – ${Math.max(...xs).toFixed(2)}`

interface SshFacts {
  port: number
  user: string
  key: string
}

function sshFacts(lab: UpgradeLab): SshFacts {
  const ssh = lab.env().recording!.hosts[0]!.ssh!
  return { port: ssh.port, user: ssh.user, key: ssh.keyFile! }
}

const sshOpts = (f: SshFacts) => [
  '-i',
  f.key,
  '-p',
  String(f.port),
  '-o',
  'StrictHostKeyChecking=no',
  '-o',
  'UserKnownHostsFile=/dev/null',
  '-o',
  'LogLevel=ERROR',
]

/** The bare procedure on one host over SSH; prints the window (stop -> healthy) in ms. */
function bareScript(root: string, url: string, deb: string, copyFrom?: string): string {
  const conf = `${root}/etc/supervisor/supervisord.conf`
  const cache = `${root}/var/cache/svcops/packages`
  return [
    'set -e',
    't0=$(date +%s%N)',
    `supervisorctl -c ${conf} stop svc-recording >/dev/null`,
    ...(copyFrom ? [`cp ${copyFrom} ${cache}/${deb}`] : []),
    `dpkg --root=${root} --admindir=${root}/var/lib/dpkg --log=${root}/var/log/dpkg.log --force-script-chrootless --force-not-root --force-bad-path --force-confdef --force-confold -i ${cache}/${deb} >/dev/null`,
    `supervisorctl -c ${conf} start svc-recording >/dev/null`,
    `until curl -fs ${url}/ >/dev/null; do sleep 0.05; done`,
    't1=$(date +%s%N)',
    'echo $(( (t1 - t0) / 1000000 ))',
  ].join('\n')
}

function runBare(lab: UpgradeLab, version: string, copyInside: boolean): number {
  const f = sshFacts(lab)
  const host = lab.env().recording!.hosts[0]!
  const file = findDebFile(lab.env().recording!.packageDir, 'svc-recording', version)
  const name = file.split('/').pop()!
  const cache = `${host.root!}/var/cache/svcops/packages`
  // A world-readable copy the host's user can read; outside the window it goes into the host's cache
  // (staged), or the script copies it in inside the window, as a procedure without staging must.
  const shared = `${tmpdir()}/svcops-bench-${name}`
  spawnSync('cp', [file, shared])
  spawnSync('chmod', ['a+r', shared])
  const prep = copyInside ? `mkdir -p ${cache} && rm -f ${cache}/${name}` : `mkdir -p ${cache} && cp ${shared} ${cache}/${name}`
  const p = spawnSync('ssh', [...sshOpts(f), `${f.user}@127.0.0.1`, prep], { encoding: 'utf8' })
  if (p.status !== 0) throw new Error(`staging failed: ${p.stderr}`)
  const staging = copyInside ? shared : undefined
  const r = spawnSync('ssh', [...sshOpts(f), `${f.user}@127.0.0.1`, 'bash -s'], {
    input: bareScript(host.root!, host.url, name, staging),
    encoding: 'utf8',
  })
  if (r.status !== 0) throw new Error(`bare script failed: ${r.stderr}`)
  return Number(r.stdout.trim())
}

interface UpgradeReport {
  downtime: Array<{ downtimeMs?: number; host: string }>
  timeline: Array<{ step: string; host?: string; status: string; time: string }>
}

/** `svcops upgrade recording` as users run it (bin/svcops), measured; fails the benchmark if the upgrade failed. */
async function svcopsUpgrade(
  lab: UpgradeLab,
  to: string,
  extra: string[] = [],
  nodeFlags: string[] = [],
): Promise<Measured & { report: UpgradeReport }> {
  const [node = process.execPath, ...cli] = svcopsCommand()
  const argv = [node, ...nodeFlags, ...cli, '--stack-file', lab.envFile, 'upgrade', 'recording', '--to', to, '--yes', '--json', ...extra]
  const r = await measureCommand(argv)
  if (r.code !== 0) {
    // The lab (and the run's report with it) is removed when the benchmark ends: print the report first.
    const report = /See the report: (\S+)/.exec(r.stderr)?.[1]
    if (report && existsSync(report)) process.stderr.write(readFileSync(report, 'utf8'))
    throw new Error(`svcops upgrade failed (${r.code}): ${r.stderr.slice(-500)}`)
  }
  return { ...r, report: (JSON.parse(r.stdout) as { report: UpgradeReport }).report }
}

/**
 * Puts the fleet back on 1.4.0 between measured runs (unmeasured): `svcops rollback recording --to`,
 * since an upgrade to an older version is refused.
 */
async function svcopsReset(lab: UpgradeLab): Promise<void> {
  const [node = process.execPath, ...cli] = svcopsCommand()
  const r = await measureCommand([node, ...cli, '--stack-file', lab.envFile, 'rollback', 'recording', '--to', '1.4.0', '--yes', '--json'])
  if (r.code !== 0) throw new Error(`svcops rollback --to 1.4.0 failed (${r.code}): ${r.stderr.slice(-500)}`)
}

/** A verified backup taken on 1.4.0 (unmeasured), which `rollback recording --to 1.4.0` needs to know 1.4.0's schema. */
async function svcopsBackupRun(lab: UpgradeLab): Promise<void> {
  const [node = process.execPath, ...cli] = svcopsCommand()
  const r = await measureCommand([node, ...cli, '--stack-file', lab.envFile, 'backup', 'run', '--json'])
  if (r.code !== 0) throw new Error(`svcops backup run failed (${r.code}): ${r.stderr.slice(-500)}`)
}

function healthyWindow(report: UpgradeReport, host: string): number {
  const stop = report.timeline.find((e) => e.step === 'stop' && e.host === host && e.status === 'start')
  const healthy = report.timeline.find((e) => e.step === 'wait-healthy' && e.host === host && e.status === 'ok')
  return stop && healthy ? Date.parse(healthy.time) - Date.parse(stop.time) : NaN
}

/** With `--cpu-prof DIR`: Node's CPU profile of the measured run, written to DIR/scale-<hosts>.cpuprofile. */
function profileFlags(name: string): string[] {
  const dir = values['cpu-prof']
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-name=${name}.cpuprofile`] : []
}

const out: string[] = []

// ---- 1. downtime of one host
if (rounds > 0) {
  const before = loadAverage()
  const single = await startUpgradeLab({ hosts: 1, version: '1.4.0', recordings: 20 })
  const rows = { bare: [] as number[], bareCopy: [] as number[], svcHealthy: [] as number[], svcVerified: [] as number[] }
  try {
    for (let i = 0; i < rounds; i++) {
      rows.bare.push(runBare(single, '1.5.0', false))
      runBare(single, '1.4.0', false)
      rows.bareCopy.push(runBare(single, '1.5.0', true))
      runBare(single, '1.4.0', false)
      const up = await svcopsUpgrade(single, '1.5.0')
      rows.svcHealthy.push(healthyWindow(up.report, 'rec-1'))
      rows.svcVerified.push(up.report.downtime[0]?.downtimeMs ?? NaN)
      runBare(single, '1.4.0', false)
    }
  } finally {
    await single.stop()
    for (const v of ['1.4.0', '1.5.0']) rmSync(`${tmpdir()}/svcops-bench-svc-recording_${v}_all.deb`, { force: true })
  }
  out.push(
    `Downtime of one host, 1.4.0 -> 1.5.0, median of ${rounds} rounds (s); load average ${before} before, ${loadAverage()} after:`,
    '',
    '| procedure | stop -> healthy | stop -> verified |',
    '|---|---:|---:|',
    `| bare shell over SSH (stop; dpkg -i; start; poll GET /), package on the host | ${s(median(rows.bare))} | — |`,
    `| bare shell, package copied inside the window | ${s(median(rows.bareCopy))} | — |`,
    `| svcops upgrade recording (staged before the stop; review-config, check-logs, verify-host) | ${s(median(rows.svcHealthy))} | ${s(median(rows.svcVerified))} |`,
    '',
  )
}

// ---- 2. fleet: svcops --batch B vs Ansible serial [1, B], forks B; 3. the orchestrator at each size
if (fleetRounds > 0 || scale.length > 0) {
  const before = loadAverage()
  const fleet = await startUpgradeLab({ hosts: fleetSize, version: '1.4.0', recordings: 20 })
  const ansible = writeAnsibleFleet(fleet.env(), '1.5.0', batchSize)
  const batch = ['--batch', String(batchSize)]
  const rows = { ansible: [] as Measured[], svcops: [] as Measured[] }
  const scaled: Array<{ hosts: number; run: Measured }> = []
  let afterFleet = ''
  try {
    await svcopsBackupRun(fleet)
    for (let r = 0; r < fleetRounds; r++) {
      if (r > 0) await svcopsReset(fleet)
      rows.ansible.push(await ansible.run())
      const after = await fleet.versions()
      if (Object.values(after).some((v) => v !== '1.5.0')) throw new Error(`Ansible left versions ${JSON.stringify(after)}`)
      await svcopsReset(fleet)
      rows.svcops.push(await svcopsUpgrade(fleet, '1.5.0', batch))
      process.stderr.write(
        `fleet round ${r + 1}/${fleetRounds} (load average ${loadAverage()}): Ansible ${f1(rows.ansible.at(-1)?.wallS ?? NaN)} s, CPU ${f1(rows.ansible.at(-1)?.cpuS ?? NaN)} s; svcops ${f1(rows.svcops.at(-1)?.wallS ?? NaN)} s, CPU ${f1(rows.svcops.at(-1)?.cpuS ?? NaN)} s\n`,
      )
    }
    afterFleet = loadAverage()
    if (fleetRounds > 0) await svcopsReset(fleet)
    for (const n of scale) {
      const hosts = ['--hosts', Array.from({ length: n }, (_, i) => `rec-${i + 1}`).join(',')]
      const run = await svcopsUpgrade(fleet, '1.5.0', [...batch, ...hosts], profileFlags(`scale-${n}`))
      scaled.push({ hosts: n, run })
      process.stderr.write(`scale ${n} hosts: ${f1(run.wallS)} s, CPU ${f1(run.cpuS)} s, ${run.rssMb.toFixed(0)} MB\n`)
      // The next size starts from 1.4.0 too; after the last the lab goes.
      if (n !== scale.at(-1)) await svcopsReset(fleet)
    }
  } finally {
    ansible.remove()
    await fleet.stop()
  }
  if (fleetRounds > 0) {
    const wall = (xs: Measured[]) => median(xs.map((x) => x.wallS))
    const row = (name: string, xs: Measured[], ratio: string) =>
      `| ${name} | ${wall(xs).toFixed(2)} | ${range(xs.map((x) => x.wallS))} | ${median(xs.map((x) => x.cpuS)).toFixed(1)} | ${median(xs.map((x) => x.rssMb)).toFixed(0)} | ${ratio} |`
    out.push(
      `Fleet of ${fleetSize} lab hosts, batch ${batchSize}, median of ${fleetRounds} rounds; load average ${before} before the lab, ${afterFleet} after the rounds:`,
      '',
      "| tool | wall (s) | wall min – max | CPU of the tool's process tree (s) | peak RSS (MB) | wall ratio (medians) |",
      '|---|---:|---:|---:|---:|---:|',
      row(
        `ansible-playbook (serial [1, ${batchSize}], forks ${batchSize}, pipelining; pg_dump + copy, stop, dpkg -i, start, wait GET /, status, log)`,
        rows.ansible,
        '1.00',
      ),
      row(
        `svcops upgrade recording --batch ${batchSize} (canary + batches; verified backup with test restore; full verification)`,
        rows.svcops,
        (wall(rows.svcops) / wall(rows.ansible)).toFixed(2),
      ),
      '',
      `Per round, svcops / Ansible wall: ${rows.svcops.map((v, i) => (v.wallS / (rows.ansible[i]?.wallS ?? NaN)).toFixed(2)).join(', ')}.`,
      '',
    )
  }
  if (scaled.length > 0) {
    const first = scaled[0]
    out.push(
      `The orchestrator (the svcops process tree) by fleet size, batch ${batchSize}, one run each on the same lab; load average ${loadAverage()} at the end:`,
      '',
      '| hosts | wall (s) | CPU (s) | CPU per host (s) | CPU per host vs the first row | peak RSS (MB) |',
      '|---:|---:|---:|---:|---:|---:|',
      ...scaled.map(
        ({ hosts, run }) =>
          `| ${hosts} | ${run.wallS.toFixed(1)} | ${run.cpuS.toFixed(1)} | ${(run.cpuS / hosts).toFixed(3)} | ${first ? (run.cpuS / hosts / (first.run.cpuS / first.hosts)).toFixed(2) : ''} | ${run.rssMb.toFixed(0)} |`,
      ),
      '',
      `Each added host: ${scaled
        .slice(1)
        .map((x, i) => {
          const prev = scaled[i]!
          return `${prev.hosts} -> ${x.hosts}: ${((x.run.cpuS - prev.run.cpuS) / (x.hosts - prev.hosts)).toFixed(3)} s of CPU`
        })
        .join('; ')}.`,
      '',
    )
  }
}

process.stdout.write(out.join('\n'))
