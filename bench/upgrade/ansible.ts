/**
 * The Ansible side of the fleet benchmark: the same upgrade procedure as a playbook on the same lab
 * (inventory of the lab's hosts over its sshd, `serial: [1, B]`, `forks: B`, pipelining and
 * ControlPersist on): pg_dump once, then per host copy the .deb, stop, dpkg -i, start, wait for
 * GET /, status, the last log lines.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Environment } from '../../src/config/schema.ts'
import { findDebFile } from '../../src/drivers/packages.ts'
import { measureCommand, type Measured } from '../measure.ts'

/** A playbook and inventory written for one lab; `run()` upgrades the fleet to the package's version. */
export interface AnsibleFleet {
  run(): Promise<Measured>
  remove(): void
}

/** Writes inventory, ansible.cfg and the playbook for the lab's recording hosts, upgrading to `version`. */
export function writeAnsibleFleet(env: Environment, version: string, batch: number): AnsibleFleet {
  const rec = env.recording
  if (!rec) throw new Error('The lab environment has no recording section.')
  const ssh = rec.hosts[0]?.ssh
  if (!ssh?.keyFile) throw new Error('The lab hosts have no SSH key file.')
  const dir = mkdtempSync(join(tmpdir(), 'svcops-bench-ansible-'))
  const inventory = [
    '[recording]',
    ...rec.hosts.map(
      (h) =>
        `${h.name} ansible_host=127.0.0.1 ansible_port=${ssh.port} ansible_user=${ssh.user} ansible_ssh_private_key_file=${ssh.keyFile} root=${h.root!} url=${h.url}`,
    ),
  ].join('\n')
  writeFileSync(join(dir, 'inventory.ini'), inventory + '\n')
  writeFileSync(
    join(dir, 'ansible.cfg'),
    [
      '[defaults]',
      `forks = ${batch}`,
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
  const deb = findDebFile(rec.packageDir, rec.package, version)
  writeFileSync(
    join(dir, 'upgrade.yml'),
    `- hosts: recording
  serial: [1, ${batch}]
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
  return {
    async run() {
      const measured = await measureCommand(['ansible-playbook', '-i', 'inventory.ini', 'upgrade.yml'], {
        cwd: dir,
        env: { ANSIBLE_CONFIG: join(dir, 'ansible.cfg'), BENCH_PGPASSWORD: dbPassword },
      })
      if (measured.code !== 0) throw new Error(`ansible-playbook failed (exit ${measured.code}): ${measured.stdout.slice(-2000)}`)
      return measured
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  }
}
