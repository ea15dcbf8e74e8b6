/**
 * Least-privilege become on the live system's hosts (`ssh.become: sudo`): the commands the live
 * playbooks (upgrade, rollback) run as root on each host — each component's package staged and
 * installed, its service stopped and started, and the fixed commands that read, write and remove
 * the settings file and the environment files on that host (host-files.ts) — as the sudoers rules
 * `svcops render sudoers` prints, and as the `sudo -n -l` checks the preflight runs before anything
 * stops. verify and the doctor run nothing as root.
 */
import type { Environment, LiveConfig, LiveHostConfig } from '../../config/schema.ts'
import { runCommand } from '../../core/runner.ts'
import { ANY_VERSION, becomesWithSudo, renderSudoers, sudoCheck } from '../../drivers/become.ts'
import { packageDriver, type PlannedCommand } from '../../drivers/packages.ts'
import { serviceDriver } from '../../drivers/services.ts'
import { componentPackage, productOf } from '../layout.ts'
import { liveUnits, placedHosts } from '../live-placement.ts'
import { fileCommands, SVCOPS_HOST_DIR, type LiveHost } from './host-files.ts'
import { configFilesOf } from './live-host-config.ts'

/**
 * Every command the live playbooks run as root on `host` (distinct, in the order a run needs them),
 * the packages at each of `versions` (the version pattern of a rule by default).
 */
export function liveRootCommands(live: LiveConfig, host: LiveHostConfig, versions: string[] = [ANY_VERSION]): PlannedCommand[] {
  const product = productOf(live)
  const pkg = packageDriver(live.packageDriver)
  const svc = serviceDriver(live.serviceDriver)
  const packages = [...new Set(liveUnits(live).flatMap((u) => (u.host === host.name ? [componentPackage(product, u.component)] : [])))]
  const files = configFilesOf(live).filter((f) => f.host === host.name)
  const commands = [
    ...packages.flatMap((name) => [
      ...versions.flatMap((v) => [...pkg.stageCommands(host, name, v), ...pkg.installCommands(host, name, v)]),
      svc.stopCommand(host, name),
      svc.startCommand(host, name),
    ]),
    ...files.flatMap((f) => Object.values(fileCommands(host, f.path))),
  ].filter((c) => c.asRoot)
  return commands.filter((c, i) => commands.findIndex((d) => d.argv.join('\0') === c.argv.join('\0')) === i)
}

/** The sudoers file of each SSH user of the environment's live hosts that become root with sudo; undefined when none does. */
export function liveSudoers(env: Environment): string | undefined {
  return env.live && env.live.platform === 'hosts' ? renderLiveSudoers(env.live, env.name) : undefined
}

/** `liveSudoers` of a live section on hosts (`envName` for the heading). */
export function renderLiveSudoers(live: LiveConfig, envName: string): string | undefined {
  const hosts = placedHosts(live)
    .map((p) => p.config)
    .filter((h) => h.ssh && becomesWithSudo(h))
  const users = [...new Set(hosts.flatMap((h) => (h.ssh ? [h.ssh.user] : [])))]
  if (!users.length) return undefined
  return users
    .map((user) => {
      const mine = hosts.filter((h) => h.ssh?.user === user)
      return renderSudoers({
        user,
        heading: [
          `svcops render sudoers --env ${envName}: what the live playbooks run as root on ${mine.map((h) => h.name).join(', ')} (${live.packageDriver}, ${live.serviceDriver}, the settings and environment files), for ${user} alone.`,
          `Install as /etc/sudoers.d/svcops (mode 0440) after visudo -cf accepts it; the hosts say ssh.become: sudo.`,
        ],
        notes: [
          `Besides these rules, ${user} needs: the folder ${SVCOPS_HOST_DIR} to write (the run lock, the runs and their copies of the files),`,
          `and membership of systemd-journal (journalctl -u reads the journal).`,
        ],
        commands: mine.flatMap((h) => liveRootCommands(live, h)),
      })
    })
    .join('\n')
}

/**
 * On each host that becomes root with sudo, whether its sudo grants every root command the live
 * playbooks run with the packages at `versions` (`sudo -n -l -- argv`, which runs nothing): the
 * sentence of each refused one, naming the rule.
 */
export async function findMissingSudoRules(live: LiveConfig, hosts: LiveHost[], versions: string[]): Promise<string[]> {
  const missing: string[] = []
  for (const h of hosts) {
    const config = placedHosts(live).find((p) => p.config.name === h.name)?.config
    if (!config || !becomesWithSudo(config) || !config.ssh) continue
    for (const cmd of liveRootCommands(live, config, [...new Set(versions)])) {
      const check = sudoCheck(h.name, config.ssh.user, cmd)
      const result = await runCommand(h.transport, check.argv, { check: false })
      if (result.code !== 0) missing.push(check.missing)
    }
  }
  return missing
}
