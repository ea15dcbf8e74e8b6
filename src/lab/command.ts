/**
 * `svcops lab up | status | down`: the embedded lab on this machine (PostgreSQL and the manager
 * emulator, as detached processes), its state under $SVCOPS_LAB_DIR (default .svcops/lab) and the
 * environment file stacks/Pulumi.lab.yaml that `--env lab` reads. The lab's own command group: the
 * registry (src/commands/registry.ts) loads it only when this folder is there, as in a checkout of
 * the repository; the installed product ships without src/lab.
 */
import { Command, Option } from 'commander'
import { printResult, showProgress } from '../commands/context.ts'

const REVISIONS = ['1.4.1', '1.6.1', '1.6.2'] as const

/** Parses an integer option; the range is checked by `lab up` itself (one sentence, exit 2). */
function parseInteger(value: string): number {
  return /^-?\d+$/.test(value) ? Number(value) : Number.NaN
}

/**
 * What to try first in the lab just started, from what it runs: a command that cannot work there
 * (`auth check` without the manager of a live-only lab) would be a poor first step.
 */
function nextCommands(entries: { kind: string; name: string }[]): string[] {
  const next: string[] = []
  if (entries.some((e) => e.name === 'manager emulator')) next.push('svcops auth check --env lab')
  if (entries.some((e) => e.kind === 'lab-host' && /^host rec-\d+$/.test(e.name)))
    next.push('svcops upgrade recording --env lab --to 2.0.0 --dry-run')
  if (entries.some((e) => e.kind === 'live-component')) next.push('svcops verify live --env lab', 'svcops plan live --env lab --to 7.0.0')
  return next
}

/** Declares `svcops lab up`, `lab status` and `lab down`; the work is imported when one runs. */
export function register(program: Command): void {
  const lab = program
    .command('lab')
    .description('Start, inspect and stop the embedded lab (PostgreSQL, manager emulator) on this machine.')
    .addHelpText(
      'after',
      `
The lab keeps its state in $SVCOPS_LAB_DIR (default .svcops/lab) and writes the environment file
stacks/Pulumi.lab.yaml (or under $SVCOPS_STACKS_DIR), so every command works with --env lab.

Examples:
  svcops lab up
  svcops auth check --env lab
  svcops lab status --json
  svcops lab down`,
    )

  lab
    .command('up')
    .description(
      'Start PostgreSQL, the manager emulator and the recording hosts (with --live V also the live production system on host live-1) as background processes and write the lab environment file.',
    )
    .addOption(
      new Option('--manager-revision <revision>', 'auth API revision the manager emulator runs as (1.4.1 issues 300 s tokens)')
        .choices(REVISIONS)
        .default('1.6.2'),
    )
    .option('--hosts <n>', 'number of recording hosts (sandboxes with dpkg, supervisord, reachable over a loopback sshd)', parseInteger, 3)
    .addOption(
      new Option(
        '--host-kind <kind>',
        'sandbox: dpkg --root trees with supervisord (fast); systemd: Debian machines booted with systemd in systemd-nspawn, apt from a signed repository, sudo (root only, at most 8)',
      ).choices(['sandbox', 'systemd']),
    )
    // Not --version: commander gives the root's -V/--version precedence anywhere on the command line.
    .option('--version <version>', 'recording service release installed on every host (default: the oldest lab release, 1.4.0)')
    .addOption(new Option('--release <version>', 'same as --version').hideHelp())
    .option('--recordings <k>', 'recordings created through the recording API once the hosts are up', parseInteger, 6)
    .option(
      '--rehearsal-host',
      'also set up host rehearsal-1 (sandbox hosts) on scratch database recordings_rehearsal and name it in recording.rehearsal, for svcops rehearse recording',
    )
    .option(
      '--live <version>',
      'also start the live production system of this release on host live-1 (system controller, ingest, pipeline, control panel)',
    )
    .option('--live-weak-psk', 'give the live system a low-entropy PSK (a 6.x controller refuses to start with it)')
    .option(
      '--live-hosts <n>',
      'spread the live system over hosts live-1..live-N (svcops:live.hosts): the system controller on live-1, an ingest, a pipeline and a control panel on each other host',
      parseInteger,
    )
    .option(
      '--live-tcp-endpoints <n>',
      'TCP control panel endpoints the pipeline is configured with (default 1; more than 1 only before 6.0)',
      parseInteger,
    )
    .option('--dry-run', 'print the steps without starting anything')
    .addHelpText(
      'after',
      `
Ctrl-C while it runs stops everything it started. A lab already up in the same directory is an error.
Hosts are named rec-1, rec-2, ...; each runs its own service on its own port (see docs/lab.md).

Examples:
  svcops lab up
  svcops lab up --hosts 10 --version 1.5.0 --recordings 50
  svcops lab up --hosts 3 --rehearsal-host                      # a host to rehearse upgrades on (docs/upgrade.md)
  svcops lab up --hosts 2 --host-kind systemd                  # real hosts: systemd, apt, sudo (docs/lab.md)
  svcops lab up --manager-revision 1.4.1
  svcops lab up --hosts 0 --live 5.2.0 --live-tcp-endpoints 2   # the live system only (see docs/lab.md)
  svcops lab up --hosts 0 --live 5.2.0 --live-hosts 3           # the live system on three hosts
  svcops lab up --hosts 0 --host-kind systemd --live 1.0.0 --live-hosts 2   # ... on real systemd hosts (root)
  svcops lab up --dry-run --json`,
    )
    .action(
      async (
        options: {
          managerRevision: (typeof REVISIONS)[number]
          hosts: number
          release?: string
          version?: string
          recordings: number
          rehearsalHost?: boolean
          hostKind?: 'sandbox' | 'systemd'
          live?: string
          liveWeakPsk?: boolean
          liveTcpEndpoints?: number
          liveHosts?: number
          dryRun?: boolean
        },
        command: Command,
      ) => {
        const { labUp, labUpPlan } = await import('./lab.ts')
        const upOptions = {
          managerRevision: options.managerRevision,
          hosts: options.hosts,
          recordings: options.recordings,
          ...(options.hostKind !== undefined ? { hostKind: options.hostKind } : {}),
          ...(options.rehearsalHost ? { rehearsalHost: true } : {}),
          ...((options.version ?? options.release) ? { version: options.version ?? options.release } : {}),
          ...(options.live !== undefined ? { live: options.live } : {}),
          ...(options.liveWeakPsk ? { liveWeakPsk: true } : {}),
          ...(options.liveTcpEndpoints !== undefined ? { liveTcpEndpoints: options.liveTcpEndpoints } : {}),
          ...(options.liveHosts !== undefined ? { liveHosts: options.liveHosts } : {}),
        }
        if (options.dryRun) {
          const steps = labUpPlan(upOptions)
          printResult(command, { dryRun: true, steps }, `lab up would:\n${steps.map((s, i) => `  ${i + 1}. ${s}`).join('\n')}`)
          return
        }
        const stop = showProgress(command)
        try {
          const state = await labUp(upOptions)
          const services = state.entries.filter((e) => e.kind !== 'files')
          const next = nextCommands(state.entries)
          printResult(
            command,
            {
              ok: true,
              envFile: state.envFile,
              managerRevision: options.managerRevision,
              services: services.map(({ name, kind, pid, port, url }) => ({ name, kind, pid, port, url })),
              next,
            },
            () =>
              [
                'The lab is up:',
                ...services.map(
                  (e) => `  ${e.name.padEnd(20)} ${e.url ?? (e.port ? `127.0.0.1:${e.port}` : '')}${e.pid ? `  (pid ${e.pid})` : ''}`,
                ),
                `Environment file: ${state.envFile ?? ''} (use --env lab)`,
                `Next: ${next.join('   ')}`,
                'Stop it with: svcops lab down',
              ].join('\n'),
          )
        } finally {
          stop()
        }
      },
    )

  lab
    .command('status')
    .description('Show what the lab started and whether each part still runs.')
    .addHelpText('after', '\nExamples:\n  svcops lab status\n  svcops lab status --json')
    .action(async (_options: object, command: Command) => {
      const { labStatus } = await import('./lab.ts')
      const { liveComponentDetails } = await import('./live-lab.ts')
      const plain = labStatus()
      const details = await liveComponentDetails(plain.entries)
      const entries = plain.entries.map((e) => ({ ...e, ...details[e.name] }))
      // ok: the lab is up, complete, and every part it started still runs (what a script waits for).
      const status = { ok: plain.up && plain.complete && entries.every((e) => e.running), ...plain, entries }
      const live = (e: (typeof status.entries)[number]): string =>
        e.name in details
          ? `  ${details[e.name]?.version ?? 'version unknown'}, ${details[e.name]?.connected ? 'connected' : 'not connected'}`
          : ''
      printResult(command, status, () =>
        status.entries.length === 0
          ? `The lab is not up (no ${status.stateFile}).`
          : [
              `The lab is ${status.up ? (status.complete ? 'up' : 'partly up') : 'down'}:`,
              ...status.entries.map(
                (e) =>
                  `  ${e.kind === 'files' ? (e.running ? 'present' : 'missing') : e.running ? 'running' : 'stopped'}  ${e.name}${e.url ? `  ${e.url}` : e.port ? `  127.0.0.1:${e.port}` : ''}${e.pid ? `  (pid ${e.pid})` : ''}${live(e)}`,
              ),
            ].join('\n'),
      )
    })

  lab
    .command('down')
    .description('Stop everything the lab started and remove its temp dirs and environment file (safe to run twice).')
    .option('--dry-run', 'print what would be stopped without stopping it')
    .addHelpText('after', '\nExamples:\n  svcops lab down\n  svcops lab down --dry-run')
    .action(async (options: { dryRun?: boolean }, command: Command) => {
      const { labDown, labDownPlan } = await import('./lab.ts')
      if (options.dryRun) {
        const steps = labDownPlan()
        printResult(
          command,
          { dryRun: true, steps },
          steps.length ? `lab down would:\n${steps.map((s, i) => `  ${i + 1}. ${s}`).join('\n')}` : 'The lab is not up; nothing to stop.',
        )
        return
      }
      const stop = showProgress(command)
      try {
        const { stopped } = await labDown()
        printResult(
          command,
          { ok: true, stopped },
          stopped.length ? `Stopped: ${stopped.join(', ')}.` : 'The lab was not up; nothing to stop.',
        )
      } finally {
        stop()
      }
    })
}
