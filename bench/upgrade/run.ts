/**
 * Upgrade benchmarks, side by side in one run (never part of `npm test`):
 *
 * 1. Downtime of one host, 1.4.0 -> 1.5.0: `svcops upgrade recording` (stop -> healthy, and stop ->
 *    verified, from its report) against the bare procedure as a shell script over SSH (stop; dpkg -i;
 *    start; poll GET / until it answers), once with the package already on the host and once
 *    copying it (scp) inside the window, as a script that does not stage first must.
 * 2. Fleet of N lab hosts (default 10), batch 5: wall time of `svcops upgrade recording --batch 5`
 *    (canary, then batches; backup + test restore, verification) against an equivalent Ansible
 *    playbook (serial [1, 5], forks 5, pipelining on; pg_dump once, then per host: copy the .deb,
 *    stop, dpkg -i, start, wait for GET /, status, last log lines).
 *
 *   node bench/upgrade/run.ts [--rounds 3] [--fleet 10] [--fleet-rounds 3]
 *
 * Each fleet round runs both tools 1.4.0 -> 1.5.0 (svcops puts the fleet back on 1.4.0 between
 * runs, unmeasured); the table gives the median and the range.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { findDebFile } from '../../src/drivers/packages.ts'
import { runCli, startUpgradeLab, type UpgradeLab } from '../../test/upgrade/fixture.ts'
import { requireTools, TOOLS } from '../require-tools.ts'

requireTools(
  'bench/upgrade/run.ts',
  TOOLS.ansible,
  TOOLS.sshClient,
  TOOLS.sshServer,
  TOOLS.labHost,
  TOOLS.postgresServer,
  TOOLS.postgresClient,
)

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    fleet: { type: 'string', default: '10' },
    'fleet-rounds': { type: 'string', default: '3' },
  },
})
const rounds = Number(values.rounds)
const fleetSize = Number(values.fleet)
const fleetRounds = Number(values['fleet-rounds'])
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN
const s = (ms: number): string => (ms / 1000).toFixed(2)
const range = (xs: number[]): string => `${s(Math.min(...xs))} – ${s(Math.max(...xs))}`

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

async function svcopsUpgrade(
  lab: UpgradeLab,
  to: string,
  extra: string[] = [],
): Promise<{
  wall: number
  report: {
    downtime: Array<{ downtimeMs?: number; host: string }>
    timeline: Array<{ step: string; host?: string; status: string; time: string }>
  }
}> {
  const t0 = performance.now()
  const r = await runCli(['--stack-file', lab.envFile, 'upgrade', 'recording', '--to', to, '--yes', '--json', ...extra])
  const wall = performance.now() - t0
  if (r.code !== 0) throw new Error(`svcops upgrade failed (${r.code}): ${r.stderr.slice(-500)}`)
  const out = JSON.parse(r.stdout) as { report: Awaited<ReturnType<typeof svcopsUpgrade>>['report'] }
  return { wall, report: out.report }
}

function healthyWindow(report: Awaited<ReturnType<typeof svcopsUpgrade>>['report'], host: string): number {
  const stop = report.timeline.find((e) => e.step === 'stop' && e.host === host && e.status === 'start')
  const healthy = report.timeline.find((e) => e.step === 'wait-healthy' && e.host === host && e.status === 'ok')
  return stop && healthy ? Date.parse(healthy.time) - Date.parse(stop.time) : NaN
}

// ---- 1. downtime of one host
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

// ---- 2. fleet: svcops --batch 5 vs Ansible serial [1, 5], forks 5
const fleet = await startUpgradeLab({ hosts: fleetSize, version: '1.4.0', recordings: 20 })
const fleetRows = { ansible: [] as number[], svcops: [] as number[] }
let dir: string | undefined
try {
  const env = fleet.env()
  const rec = env.recording!
  const f = sshFacts(fleet)
  dir = mkdtempSync(join(tmpdir(), 'svcops-bench-ansible-'))
  const inventory = [
    '[recording]',
    ...rec.hosts.map(
      (h) =>
        `${h.name} ansible_host=127.0.0.1 ansible_port=${f.port} ansible_user=${f.user} ansible_ssh_private_key_file=${f.key} root=${h.root!} url=${h.url}`,
    ),
  ].join('\n')
  writeFileSync(join(dir, 'inventory.ini'), inventory + '\n')
  writeFileSync(
    join(dir, 'ansible.cfg'),
    [
      '[defaults]',
      'forks = 5',
      'host_key_checking = False',
      'interpreter_python = /usr/bin/python3',
      'stdout_callback = default',
      '[ssh_connection]',
      'pipelining = True',
      'ssh_args = -o ControlMaster=auto -o ControlPersist=60s -o UserKnownHostsFile=/dev/null',
    ].join('\n') + '\n',
  )
  const db = rec.database
  const dbPassword = readFileSync((db.password as { file: string }).file, 'utf8').trim()
  const deb = findDebFile(rec.packageDir, rec.package, '1.5.0')
  writeFileSync(
    join(dir, 'upgrade.yml'),
    `- hosts: recording
  serial: [1, 5]
  gather_facts: false
  vars:
    conf: "{{ root }}/etc/supervisor/supervisord.conf"
    cache: "{{ root }}/var/cache/svcops/packages"
  tasks:
    - name: back up the database
      run_once: true
      delegate_to: localhost
      ansible.builtin.command: pg_dump -Fc -f ${dir}/backup.dump
      environment: { PGHOST: "${db.host}", PGPORT: "${db.port}", PGUSER: "${db.user}", PGDATABASE: "${db.name}", PGPASSWORD: "{{ lookup('env', 'BENCH_PGPASSWORD') }}" }
    - name: copy the package
      ansible.builtin.copy: { src: "${deb}", dest: "{{ cache }}/" }
    - name: stop
      ansible.builtin.command: supervisorctl -c {{ conf }} stop svc-recording
    - name: install
      ansible.builtin.command: dpkg --root={{ root }} --admindir={{ root }}/var/lib/dpkg --log={{ root }}/var/log/dpkg.log --force-script-chrootless --force-not-root --force-bad-path --force-confdef --force-confold -i {{ cache }}/${deb.split('/').pop()!}
    - name: start
      ansible.builtin.command: supervisorctl -c {{ conf }} start svc-recording
    - name: wait until healthy
      ansible.builtin.uri: { url: "{{ url }}/" }
      register: health
      until: health.status == 200
      retries: 100
      delay: 0.2
    - name: status
      ansible.builtin.command: supervisorctl -c {{ conf }} status svc-recording
    - name: last log lines
      ansible.builtin.command: tail -n 50 {{ root }}/var/log/svc/recording.log
`,
  )
  for (let r = 0; r < fleetRounds; r++) {
    if (r > 0) await svcopsUpgrade(fleet, '1.4.0', ['--batch', '5'])
    const t0 = performance.now()
    const a = spawnSync('ansible-playbook', ['-i', 'inventory.ini', 'upgrade.yml'], {
      cwd: dir,
      encoding: 'utf8',
      env: { ...process.env, ANSIBLE_CONFIG: join(dir, 'ansible.cfg'), BENCH_PGPASSWORD: dbPassword },
    })
    fleetRows.ansible.push(performance.now() - t0)
    if (a.error) throw a.error
    if (a.status !== 0) throw new Error(`ansible-playbook failed (exit ${a.status}): ${a.stdout.slice(-2000)}`)
    const after = await fleet.versions()
    if (Object.values(after).some((v) => v !== '1.5.0')) throw new Error(`Ansible left versions ${JSON.stringify(after)}`)
    await svcopsUpgrade(fleet, '1.4.0', ['--batch', '5'])
    fleetRows.svcops.push((await svcopsUpgrade(fleet, '1.5.0', ['--batch', '5'])).wall)
  }
} finally {
  await fleet.stop()
  if (dir) rmSync(dir, { recursive: true, force: true })
}

const table = [
  `Downtime of one host, 1.4.0 -> 1.5.0, median of ${rounds} rounds (s):`,
  '',
  '| procedure | stop -> healthy | stop -> verified |',
  '|---|---:|---:|',
  `| bare shell over SSH (stop; dpkg -i; start; poll GET /), package on the host | ${s(median(rows.bare))} | — |`,
  `| bare shell, package copied inside the window | ${s(median(rows.bareCopy))} | — |`,
  `| svcops upgrade recording (staged before the stop; review-config, check-logs, verify-host) | ${s(median(rows.svcHealthy))} | ${s(median(rows.svcVerified))} |`,
  '',
  `Fleet of ${fleetSize} lab hosts, batch 5, median of ${fleetRounds} rounds (wall time, s):`,
  '',
  '| tool | median | min – max | ratio (medians) |',
  '|---|---:|---:|---:|',
  `| ansible-playbook (serial [1, 5], forks 5, pipelining; pg_dump + copy, stop, dpkg -i, start, wait GET /, status, log) | ${s(median(fleetRows.ansible))} | ${range(fleetRows.ansible)} | 1.00 |`,
  `| svcops upgrade recording --batch 5 (canary + batches; verified backup with test restore; full verification) | ${s(median(fleetRows.svcops))} | ${range(fleetRows.svcops)} | ${(median(fleetRows.svcops) / median(fleetRows.ansible)).toFixed(2)} |`,
  '',
  `Per round, svcops / Ansible: ${fleetRows.svcops.map((v, i) => (v / (fleetRows.ansible[i] ?? NaN)).toFixed(2)).join(', ')}.`,
].join('\n')
process.stdout.write(table + '\n')
