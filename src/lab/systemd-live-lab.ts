/**
 * `svcops lab up --host-kind systemd --live V --live-hosts N`: the live production system on N real
 * Debian machines booted with systemd (src/lab/systemd-hosts.ts), as the recording service is with
 * the same kind. Every lab release of every live component goes into a signed apt repository of its
 * own, served on loopback (src/lab/apt-repo.ts); each host installs its components' packages with
 * apt-get as root (their postinst runs as root), writes the settings file and the environment files
 * root's and 0600 as an operator would, and starts the components' systemd units. svcops reaches
 * each host over its own sshd as the unprivileged user `svcops`, whose only root rights are the
 * rules `svcops render sudoers` prints for the live hosts (src/live/hosts/live-sudo.ts); the
 * environment file says `packageDriver: apt`, `serviceDriver: systemd` and `ssh.become: sudo`.
 */
import { randomBytes } from 'node:crypto'
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { liveHostsSchema } from '../config/schema.ts'
import { OperationError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { registerSecret } from '../core/redact.ts'
import { requireBinary } from '../core/runner.ts'
import { renderLiveSudoers } from '../live/hosts/live-sudo.ts'
import { generatePsk } from '../releases/pre-shared-key.ts'
import { pskRequired } from '../releases/versions.ts'
import { aptSourcesLine, buildAptRepo, serveAptRepo } from './apt-repo.ts'
import { liveHostsSectionOf, pickPorts, writeFiles, type LabLiveHost } from './live-hosts-lab.ts'
import { checkLabLiveOptions, liveLabPackagesDir, spreadComponents, weakPsk, type LabLiveOptions } from './live-lab.ts'
import { buildLivePackages } from './live/package.ts'
import { DEFAULT_LIVE_PRODUCT, livePackageName } from './live/paths.ts'
import { CONNECTING_COMPONENTS, LIVE_COMPONENTS, findLiveLabRelease, type LiveComponent } from './live/releases.ts'
import { readComponentHealth } from './live-wait.ts'
import { freePortNotIn } from './ports.ts'
import type { LabSteps } from './state.ts'
import { bootLabHost, KEYRING_ON_HOST, makeClientKey } from './systemd-lab.ts'
import { runAsHostRoot, systemdHostRoot, type SystemdHostInfo } from './systemd-hosts.ts'

const PRODUCT = DEFAULT_LIVE_PRODUCT

/** What the systemd live part started: the hosts and the `svcops:live` section. */
export interface SystemdLivePart {
  section: Record<string, unknown>
  hosts: SystemdHostInfo[]
}

/** Steps of `lab up --dry-run --host-kind systemd --live V --live-hosts N`. */
export function systemdLivePlan(options: LabLiveOptions): string[] {
  const o = checkLabLiveOptions(options)
  if (!o) return []
  return [
    `build the live component packages (every lab release, each with a systemd unit) unless cached, and a signed apt repository of them served on loopback`,
    `boot hosts live-1 to live-${o.liveHosts} one after the other: Debian with systemd in systemd-nspawn, user svcops; apt-get install each host's components ${o.live} (the system controller on live-1, an ingest, a pipeline and a control panel on each other host)`,
    `write the settings file on live-1 and each instance's environment file (root's, 0600, the one PSK)`,
    `systemctl start the components (live-1 first) and wait for them; give svcops the rules svcops render sudoers prints for the live hosts`,
  ]
}

/** Waits until every component of the host answers its `/health` and each connecting one is connected (but where the release never connects). */
async function waitForUnits(host: SystemdHostInfo, h: LabLiveHost, version: string, timeoutMs = 90_000): Promise<void> {
  const connects = findLiveLabRelease(version)?.fault !== 'never-connects'
  const deadline = Date.now() + timeoutMs
  let waiting: string[] = []
  while (Date.now() < deadline) {
    waiting = []
    for (const [component, port] of Object.entries(h.components) as [LiveComponent, number][]) {
      const health = await readComponentHealth(port)
      if (!health) waiting.push(`${component} (no answer on ${port})`)
      else if (connects && CONNECTING_COMPONENTS.includes(component) && !health.connected) waiting.push(`${component} (not connected)`)
    }
    if (!waiting.length) return
    await new Promise((r) => setTimeout(r, 200))
  }
  const journal = await runAsHostRoot(host, ['journalctl', '-n', '10', '--no-pager', '-o', 'cat'], { check: false })
  throw new OperationError(
    `The live components on systemd host ${host.name} did not come up within ${timeoutMs} ms: ${waiting.join('; ')}; the journal's last lines: ${journal.stdout.trim()}`,
  )
}

/** Boots the live hosts in turn, starts the components on the controller's host first, and gives the sudo rules to each host's SSH user. */
export async function startSystemdLiveHosts(lab: LabSteps, options: Required<LabLiveOptions>): Promise<SystemdLivePart> {
  requireBinary('systemd-nspawn', 'systemd-container')
  if (process.getuid?.() !== 0)
    throw new OperationError('--host-kind systemd: systemd-nspawn boots machines only as root; run svcops lab up as root.')
  const version = options.live
  const dir = mkdtempSync(join(tmpdir(), 'svcops-lab-systemd-live-'))
  chmodSync(dir, 0o755)
  lab.record({ kind: 'files', name: 'systemd live host layers', info: {}, paths: [dir], stop: 'remove the files' })
  const packageDir = await events.step('build the live component packages', () =>
    buildLivePackages(liveLabPackagesDir(lab.paths.dir), PRODUCT),
  )
  const debs = readdirSync(packageDir)
    .filter((f) => f.endsWith('.deb'))
    .map((f) => join(packageDir, f))
  const repo = await events.step('build the signed apt repository of the live releases', () => buildAptRepo(join(dir, 'apt'), debs))
  mkdirSync(lab.paths.logsDir, { recursive: true })
  const served = await events.step('serve the live apt repository on loopback', () =>
    serveAptRepo(repo, join(lab.paths.logsDir, 'apt-repo-live.log'), (entry) => lab.record({ ...entry, name: 'apt repository (live)' })),
  )
  const keyFile = await makeClientKey(lab, 'systemd-live-hosts_ed25519')
  const labId = randomBytes(3).toString('hex')
  const given = new Set<number>()
  const spread = spreadComponents(options.liveHosts)
  const booted: SystemdHostInfo[] = []
  const hosts: LabLiveHost[] = []
  // In turn: a boot is a systemd and its units starting on this machine's two cores.
  for (const [i, components] of spread.entries()) {
    const name = `live-${i + 1}`
    const sshPort = await freePortNotIn(given)
    given.add(sshPort)
    const info = await events.step(`host ${name}: boot with systemd, install ${components.join(', ')} ${version} with apt-get`, () =>
      bootLabHost(
        lab,
        {
          name,
          dir: join(dir, name),
          machine: `svcops-${labId}-${name}`,
          sshPort,
          clientPublicKey: readFileSync(`${keyFile}.pub`, 'utf8'),
          apt: { sourcesLine: aptSourcesLine(served.url, KEYRING_ON_HOST), keyring: repo.keyring, keyringOnHost: KEYRING_ON_HOST },
        },
        components.map((c) => `${livePackageName(PRODUCT.prefix, c)}=${version}`),
      ),
    )
    booted.push(info)
    hosts.push({
      host: { name, root: systemdHostRoot(info), user: 'root' },
      components: Object.fromEntries(components.map((c) => [c, 0])),
      tcpEndpoints: [],
    })
  }
  const controllerPort = await pickPorts(hosts, options.liveTcpEndpoints)
  const psk = !pskRequired(version) ? undefined : registerSecret(options.liveWeakPsk ? weakPsk() : generatePsk())
  // The settings file and the environment files: root's, 0600, as svcops writes them through sudo.
  writeFiles(hosts, version, controllerPort, psk)
  for (const [i, h] of hosts.entries()) {
    const host = booted[i] as SystemdHostInfo
    await events.step(`host ${host.name}: start the live components' units`, async () => {
      for (const c of LIVE_COMPONENTS.filter((x) => h.components[x] !== undefined))
        await runAsHostRoot(host, ['systemctl', 'start', livePackageName(PRODUCT.prefix, c)])
      await waitForUnits(host, h, version)
    })
  }
  const controllerUrl = `http://127.0.0.1:${controllerPort}`
  const section = {
    ...liveHostsSectionOf({ version, hosts, controllerUrl }, (h) => {
      const info = booted.find((b) => b.name === h.host.name) as SystemdHostInfo
      return { ssh: { host: '127.0.0.1', port: info.sshPort, user: info.user, keyFile, hostKey: info.hostKey, become: 'sudo' } }
    }),
    packageDriver: 'apt',
    serviceDriver: 'systemd',
  }
  // Each host's SSH user: exactly the rules svcops render sudoers --env lab prints for the live hosts.
  const sudoers = renderLiveSudoers(liveHostsSchema.parse(section), 'lab') ?? ''
  for (const info of booted) {
    const file = join(systemdHostRoot(info), 'etc/sudoers.d/svcops')
    writeFileSync(file, sudoers, { mode: 0o440 })
    chmodSync(file, 0o440)
  }
  events.info(`the live system ${version} on ${booted.length} systemd host${booted.length === 1 ? '' : 's'}`)
  return { section, hosts: booted }
}
