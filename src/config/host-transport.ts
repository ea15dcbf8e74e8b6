/**
 * How a host of the stack is reached, said by the stack and never guessed (DESIGN.md rule 12: the
 * operator's own machine is a target only when the stack says so). A host is reached over `ssh`, or
 * is this machine when it says `transport: local`, or is a lab sandbox (`root`, a directory that
 * `svcops lab up` made on this machine). A host with none of them used to mean "this machine", so a
 * cluster stack with a host missing its `ssh` planned `systemctl stop` on the operator's laptop.
 */

/** The fields of a host that decide its transport (a recording host, `live.host`, `live.hosts[i]`). */
export interface HostReach {
  ssh?: unknown
  transport?: 'local' | undefined
  root?: string | undefined
}

/** How the host is reached: over SSH, on this machine as declared, or in a lab sandbox on this machine. */
export type Reach = 'ssh' | 'local' | 'sandbox'

/**
 * The host's reach, or the one sentence that refuses it (without the file name), `field` being the
 * host's dot-path (`recording.hosts[0]`).
 */
export function reachOf(host: HostReach, field: string): { reach: Reach } | { refusal: string } {
  if (host.ssh !== undefined && host.transport === 'local')
    return {
      refusal: `${field}: has both ssh and transport: local; expected one of them (ssh to reach the host, transport: local for this machine).`,
    }
  if (host.ssh !== undefined) return { reach: 'ssh' }
  if (host.transport === 'local') return { reach: 'local' }
  if (host.root !== undefined) return { reach: 'sandbox' }
  return {
    refusal: `${field}: has no ssh; expected ssh: { host, user, hostKey } to reach it, or transport: local to act on this machine.`,
  }
}

/** Every host of the environment's hosts sections with its dot-path, for the loader's rule. */
export function hostsOf(env: {
  recording?: { hosts: HostReach[]; rehearsal?: { host?: HostReach | undefined } | undefined } | undefined
  live?: { host?: HostReach | undefined; hosts?: HostReach[] | undefined } | undefined
}): { field: string; host: HostReach }[] {
  return [
    ...(env.recording?.hosts ?? []).map((host, i) => ({ field: `recording.hosts[${i}]`, host })),
    ...(env.recording?.rehearsal?.host ? [{ field: 'recording.rehearsal.host', host: env.recording.rehearsal.host }] : []),
    ...(env.live?.host ? [{ field: 'live.host', host: env.live.host }] : []),
    ...(env.live?.hosts ?? []).map((host, i) => ({ field: `live.hosts[${i}]`, host })),
  ]
}
