/**
 * How the commands that run playbooks show them: the `CommandIO` of a commander command (its global
 * options, the exit code `main` returns, the exact command a dry run would go ahead with, the
 * prompts with the downtime to expect), and the shared output of src/edge/command-io.ts on
 * it: live progress on stderr, the outcome of a run (its report with --json), a dry run's plan.
 * The playbooks run as scripts show themselves through the same functions.
 */
import type { Command } from 'commander'
import type { RunPlan } from '../runs/run-system.ts'
import { printPlanOn, showProgressOn, showRunOn, goAheadOf, type CommandIO, type ShownRun } from '../edge/command-io.ts'
import { environmentOf, globals, rememberedArgs, setResultExitCode } from './context.ts'

export { METRICS_FILE_HELP, type ShownRun } from '../edge/command-io.ts'

/** How a run is shown: progress on stderr, its outcome (and report with --json) on stdout. */
export type ShowRun = (command: Command, run: () => Promise<ShownRun>, human?: (outcome: ShownRun) => string) => Promise<void>

/** The edge of a playbook's command run through `svcops`: its options, exit code, go-ahead command and prompts. */
export function ioOf(command: Command): CommandIO {
  return {
    options: globals(command),
    environment: () => environmentOf(command),
    exitWith: setResultExitCode,
    goAheadCommand: () => goAheadOf(['svcops'], rememberedArgs()),
    prompts: async () => {
      const [{ promptsOver }, { runSystems }] = await Promise.all([import('./prompts.ts'), import('./run-systems.ts')])
      return promptsOver(await runSystems())
    },
  }
}

/** Progress on stderr: live per-host lines on a terminal, plain lines otherwise, nothing with --json. */
export async function progress(command: Command): Promise<() => void> {
  return showProgressOn(ioOf(command))
}

/** Runs a playbook run (the systems and observers wired, `--metrics-file` honoured) with progress on stderr, and prints how it ended. */
export const showRun: ShowRun = async (command, run, human) => {
  const { metricsFile } = command.opts<{ metricsFile?: string }>()
  await showRunOn(ioOf(command), run, { ...(metricsFile ? { metricsFile } : {}), ...(human ? { human } : {}) })
}

/**
 * Prints a dry run with its closing summary, and exits as the real run would (src/edge/command-io.ts,
 * `printPlanOn`).
 */
export function printPlan(command: Command, plan: RunPlan, text: () => string, options: { spread: boolean }): void {
  printPlanOn(ioOf(command), plan, text, options)
}
