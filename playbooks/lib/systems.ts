/**
 * The registry of systems, built at the edge: each system's folder gives its object (name, title,
 * description: src/recording/index.ts, src/live/index.ts) and this file adds what lives above the
 * systems — the playbook file that runs it — into one entry per system. The CLI (src/commands)
 * declares its verbs from it and looks a run's system up by name (`systemByName`); nothing is registered as a
 * side effect of an import, and a system's playbooks and steps load only when one of its verbs runs
 * (`load`, `verbs[...].main`): this file is cheap, the CLI declares `svcops <verb> <system>` from it
 * at start-up. A third system plugs in here: its folder's object in `SYSTEM_FOLDERS`
 * (system-folders.ts) and one row of `SYSTEMS`, with its option tables and playbooks; no command code.
 */
import { BadInputError } from '../../src/core/errors.ts'
import type { Environment } from '../../src/config/schema.ts'
import { SYSTEM_FOLDERS } from '../../src/edge/system-folders.ts'
import type { RunOutcome } from '../../src/runs/playbook.ts'
import type { LockPolicy } from '../../src/runs/lock-policy.ts'
import type { RecordedFrom } from '../../src/runs/run-actions.ts'
import type { RunPlan, RunRequest, RunSystem } from '../../src/runs/run-system.ts'
import type { RunParams } from '../../src/runs/run-record.ts'
import type { SystemDescription } from '../../src/runs/system-description.ts'
import type { CommandSpec } from '../../src/core/option-table.ts'
import { UPGRADE_LIVE, ROLLBACK_LIVE, VERIFY_LIVE } from './live-commands.ts'
import { ROLLBACK_RECORDING, UPGRADE_RECORDING, VERIFY_RECORDING } from './recording-commands.ts'
import type { CommandMain } from '../../src/edge/script.ts'

/** How a continued run may treat the environment's lock another run holds (`--break-lock`, `--force`: lock-policy.ts). */
export interface Breaking {
  lockPolicy?: LockPolicy
}

/** The verbs every system's runs answer, over its run system (src/runs/run-actions.ts). */
export interface SystemActions {
  /** `svcops resume ID [--rollback]`: continues run `id` from its journal, or rolls it back. */
  resume: (id: string, options: { rollback?: boolean; env?: Environment } & Breaking) => Promise<RunOutcome>
  /** `svcops resume ID --dry-run`: what is left to do (or what the rollback would do); reads only. */
  planResume: (id: string, options: { rollback: boolean } & RecordedFrom) => Promise<RunPlan>
  /** A dry run's plan as text. */
  render: (plan: RunPlan) => string
  /**
   * `svcops resume ID --retry`: a new run to the same target reusing the rolled-back run's backup;
   * absent for a system whose runs are started again by their own upgrade instead.
   */
  retry?: (id: string, options: { env?: Environment } & Breaking) => Promise<RunOutcome>
}

/** The verbs a system may offer as `svcops <verb> <system>`, each declared once from its table. */
export const VERBS = [
  { name: 'upgrade', description: 'Upgrade a part of the platform.' },
  { name: 'rollback', description: 'Roll back a part of the platform.' },
  { name: 'verify', description: 'Verify a part of the platform.' },
] as const

/** The name of a verb of `VERBS`. */
export type VerbName = (typeof VERBS)[number]['name']

/**
 * A verb of one system: the table its command and its playbook's script are built from, and the
 * function both call (loaded, with the playbook, only when the command runs).
 */
export interface SystemVerb {
  readonly spec: CommandSpec
  /** The playbook's command function; its flags are those `spec` parses. */
  readonly main: () => Promise<CommandMain<never>>
}

/** One system as the CLI and the scripts see it. */
export interface SystemEntry {
  readonly name: string
  /** In sentences: "the recording service". */
  readonly title: string
  /** How a run of it is started again when it cannot be retried: "svcops upgrade live". */
  readonly startAgain: string
  /** Its commands by verb (`svcops upgrade recording`, ...): declarations only, cheap at start-up. */
  readonly verbs: Partial<Record<VerbName, SystemVerb>>
  /** What reports, notifications and metrics know of it; cheap (no playbook, no step is loaded). */
  description(): Promise<SystemDescription>
  /** Its playbooks and the actions over them: loaded when one of its verbs runs. */
  load(): Promise<SystemActions>
}

/** The actions over `system` (the engine's generic start, resume and plan of any system). */
export async function actionsOf<P extends RunParams, Req extends RunRequest, C>(
  system: RunSystem<P, Req, C>,
  extra: Pick<SystemActions, 'retry'> = {},
): Promise<SystemActions> {
  const { planSystemContinuation, renderRunPlan, resumeSystemRun } = await import('../../src/runs/run-actions.ts')
  return {
    resume: (id, options) => resumeSystemRun(system, id, options),
    planResume: (id, options) => planSystemContinuation(system, id, options),
    render: (plan) => renderRunPlan(system, plan),
    ...extra,
  }
}

const [recordingFolder, liveFolder] = SYSTEM_FOLDERS

/** The recording service's run system, built by its upgrade playbook (which loads its steps). */
const recordingRuns = async () => (await import('../upgrade.ts')).recording
/** What its commands do, over that system. */
const recordingActions = () => import('./recording-actions.ts')
/** The live system's run system, built by its upgrade playbook. */
const liveRuns = async () => (await import('../upgrade-live.ts')).live
/** What its commands do, over that system. */
const liveActions = () => import('./live-actions.ts')
/** What `verify <system>` does, over the system its verify playbook gives. */
const verifyActions = () => import('./verify-actions.ts')

/** Every system svcops runs, in the order of `SYSTEM_FOLDERS`: each folder's object with its playbooks. */
export const SYSTEMS: readonly SystemEntry[] = [
  {
    ...recordingFolder,
    startAgain: 'svcops upgrade recording',
    verbs: {
      upgrade: { spec: UPGRADE_RECORDING, main: async () => (await recordingActions()).upgradeRecordingCommand(await recordingRuns()) },
      rollback: { spec: ROLLBACK_RECORDING, main: async () => (await recordingActions()).rollbackRecordingCommand(await recordingRuns()) },
      verify: {
        spec: VERIFY_RECORDING,
        main: async () => (await verifyActions()).verifyRecordingCommand((await import('../verify.ts')).verifyRecordingSystem),
      },
    },
    load: async () => {
      const [recording, { retryRecording }] = await Promise.all([recordingRuns(), recordingActions()])
      return actionsOf(recording, { retry: (id, options) => retryRecording(recording, id, options) })
    },
  },
  {
    ...liveFolder,
    startAgain: 'svcops upgrade live',
    verbs: {
      upgrade: { spec: UPGRADE_LIVE, main: async () => (await liveActions()).upgradeLiveCommand(await liveRuns()) },
      rollback: { spec: ROLLBACK_LIVE, main: async () => (await liveActions()).rollbackLiveCommand(await liveRuns()) },
      verify: {
        spec: VERIFY_LIVE,
        main: async () => (await verifyActions()).verifyLiveCommand((await import('../verify-live.ts')).verifyLiveSystem),
      },
    },
    load: async () => {
      // A rotation of the PSK (`svcops psk rotate`) is a run of the live system too: resumed by its own playbook.
      // A rehearsal (`svcops rehearse live`) too, by its own system: its lock, its context on the copy, its playbook.
      const [live, { pskRotatePlaybook }, { liveRehearsal }, { withLiveRehearsals }] = await Promise.all([
        liveRuns(),
        import('../psk-rotate.ts'),
        import('../rehearse-live.ts'),
        import('../../src/live/hosts/live-rehearsal-system.ts'),
      ])
      const runs = withLiveRehearsals(
        { ...live, playbook: (run) => (run.kind === 'psk-rotate' ? pskRotatePlaybook : live.playbook(run)) },
        liveRehearsal,
      )
      return actionsOf(runs)
    },
  },
]

/** The system named `name` (a run record's `system`), or one sentence listing the systems there are. */
export function systemByName(name: string): SystemEntry {
  const found = SYSTEMS.find((s) => s.name === name)
  if (!found)
    throw new BadInputError(`system: '${name}' is not a system svcops runs; expected one of ${SYSTEMS.map((s) => s.name).join(', ')}.`)
  return found
}
