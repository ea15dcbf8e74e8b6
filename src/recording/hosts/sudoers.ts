/**
 * `svcops render sudoers`: the sudo rules that let the recording hosts' SSH user run exactly the
 * commands the recording playbooks run as root there (upgrade, rollback, and the rehearsal on the
 * stack's rehearsal host; doctor and verify need none), argv-exact, the version a pattern that
 * admits one version and nothing else (src/drivers/become.ts). The same commands the preflight
 * checks with `sudo -n -l`.
 */
import { dirname } from 'node:path'
import type { Environment } from '../../config/schema.ts'
import { BadInputError } from '../../core/errors.ts'
import { ANY_VERSION, renderSudoers } from '../../drivers/become.ts'
import { packageDriver } from '../../drivers/packages.ts'
import { serviceDriver } from '../../drivers/services.ts'
import { settingsFor } from '../recording-settings.ts'

/**
 * The sudoers file for each SSH user of the environment's recording hosts and of its rehearsal host
 * (`recording.rehearsal.host`: the rehearsal installs, stops and starts the service there with the
 * same drivers), one after the other.
 */
export function recordingSudoers(env: Environment): string {
  const rec = env.recording
  // The rehearsal host is a host like the others for sudo: the same package, service and drivers.
  const hosts = [...(rec?.hosts ?? []), ...(rec?.rehearsal?.host ? [rec.rehearsal.host] : [])]
  const users = [...new Set(hosts.flatMap((h) => (h.ssh ? [h.ssh.user] : [])))]
  if (!rec || users.length === 0)
    throw new BadInputError(
      `recording.hosts: ${env.file} names no recording host (nor rehearsal host) reached over SSH; sudo rules are for the SSH user of such hosts.`,
    )
  // dpkg installs files svcops copies to each host (the lab's sandboxes); dnf's install goes up or
  // down through `sh -c`, which a rule could only allow as a shell.
  if (rec.packageDriver !== 'apt')
    throw new BadInputError(
      `recording.packageDriver: ${rec.packageDriver} is not one svcops renders sudo rules for; expected apt (dpkg installs files copied to sandboxes, dnf installs through a shell).`,
    )
  const settings = settingsFor(env, rec)
  const pkg = packageDriver(rec.packageDriver)
  const svc = serviceDriver(rec.serviceDriver)
  const host = { name: 'any' }
  const commands = [
    ...pkg.stageCommands(host, settings.package, ANY_VERSION),
    ...pkg.installCommands(host, settings.package, ANY_VERSION),
    svc.stopCommand(host, settings.service),
    svc.startCommand(host, settings.service),
  ]
  return users
    .map((user) =>
      renderSudoers({
        user,
        heading: [
          `svcops render sudoers --env ${env.name}: what the recording playbooks run as root on ${hosts
            .filter((h) => h.ssh?.user === user)
            .map((h) => (h === rec.rehearsal?.host ? `${h.name} (the rehearsal host)` : h.name))
            .join(', ')} (${pkg.name}, ${svc.name}), for ${user} alone.`,
          `Install as /etc/sudoers.d/svcops (mode 0440) after visudo -cf accepts it; the hosts say ssh.become: sudo.`,
        ],
        notes: [
          `Besides these rules, ${user} needs: the folder ${dirname(settings.hostLockPath)} to write (the host lock),`,
          `membership of systemd-journal (journalctl -u reads the journal), and of the service's group (the doctor reads its files as it would).`,
        ],
        commands,
      }),
    )
    .join('\n')
}
