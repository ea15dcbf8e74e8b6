/**
 * How a playbook's command talks to the person or the scheduler that started it, the same from both
 * entries: `svcops <command>` (src/commands builds a `CommandIO` from commander's options) and the
 * playbook file run as a script (src/edge/script.ts builds one from the same commander parse). The result on
 * stdout — readable text, or one JSON document with `--json` — redacted and safe on a terminal;
 * progress on stderr; a dry run's plan with its closing summary; a confirmation unless `--yes`.
 *
 * Cheap to import (the CLI loads it at start-up): the heavier parts are imported where used.
 */
import type { Environment } from '../config/schema.ts'
import { BadInputError, errorMessage, exitCodeFor, isExpected } from '../core/errors.ts'
import { consoleSink, events } from '../core/events.ts'
import { redact, redactDeep } from '../core/redact.ts'
import { sanitizeText, stringifyForTerminal } from '../core/sanitize.ts'
import type { PlanBlocker } from '../runs/engine.ts'
import type { RunPlan } from '../runs/run-system.ts'
import type { ShownRun } from './closing-line.ts'

export const METRICS_FILE_HELP =
  "also write the environment's run metrics (Prometheus text) to this file, e.g. /var/lib/node_exporter/textfile/svcops.prom"

/** The options every command takes, as parsed (GLOBAL_OPTIONS in src/core/option-table.ts). */
export interface OutputOptions {
  env?: string
  stackFile?: string
  json?: boolean
  verbose?: boolean
}

/** What a confirmation says before a run changes an environment (the CLI adds the downtime to expect). */
export interface PromptTexts {
  upgradePrompt(title: string, environment: string, system: string, targets: string[], to: string): string
  rollbackPrompt(title: string, environment: string, system: string, runId?: string): string
}

/** The edge a command runs from: its options, where its output goes, how it sets its exit code. */
export interface CommandIO {
  readonly options: OutputOptions
  /** The environment named by --env / --stack-file (SVCOPS_ENV). */
  environment(): Promise<Environment>
  /** Exits with `code` although the result was printed normally (a failed check, findings). */
  exitWith(code: number): void
  /** The command line that would go ahead after a dry run (`svcops upgrade recording ...`, without --dry-run). */
  goAheadCommand(): string
  /** The texts of its confirmations, loaded when someone is asked. */
  prompts(): Promise<PromptTexts>
}

/**
 * Prints a result: JSON on stdout with --json, else the human text. Both redacted, and both safe on
 * a terminal: control characters in the text escaped (`sanitizeText`), and in the JSON the ones
 * JSON.stringify leaves raw written as `\u` escapes (the same value for a parser).
 */
export function writeResult(json: boolean | undefined, data: unknown, human: string | (() => string)): void {
  if (json) {
    process.stdout.write(stringifyForTerminal(redactDeep(data), 2) + '\n')
  } else {
    const text = typeof human === 'function' ? human() : human
    if (text) process.stdout.write(sanitizeText(redact(text.endsWith('\n') ? text : text + '\n')))
  }
}

/** Prints the result of the command `io` runs. */
export function printOn(io: CommandIO, data: unknown, human: string | (() => string)): void {
  writeResult(io.options.json, data, human)
}

/**
 * Asks a person to confirm a change at the terminal (zx's `question`, on stderr: stdout is for
 * results), unless `--yes`. Without a terminal `--yes` is required: a scheduler cannot answer.
 * `what` is the first half of "... and nobody is at a terminal to confirm it".
 */
export async function confirmChange(
  prompt: string | (() => string),
  yes: boolean | undefined,
  what = 'this command changes the environment',
): Promise<void> {
  if (yes) return
  if (!process.stdin.isTTY) {
    throw new BadInputError(
      `--yes: missing; ${what} and nobody is at a terminal to confirm it.`,
      'Add --yes (schedulers and scripts), or --dry-run to see the plan.',
    )
  }
  const { question } = await import('zx')
  // A prompt that reads earlier runs (the downtime to expect) is built only when someone is asked.
  const text = typeof prompt === 'function' ? prompt() : prompt
  const answer = await question(`${text} [y/N] `, { output: process.stderr })
  if (!/^y(es)?$/i.test(answer.trim())) throw new BadInputError('Not confirmed; nothing was changed.')
}

/**
 * Shows progress events on stderr as plain lines (never in --json mode unless --verbose: machines
 * read stdout, and people reading a JSON run's log still want stderr quiet). Returns the unsubscribe.
 */
export function showEventsOn(io: CommandIO): () => void {
  const { json, verbose } = io.options
  if (json && !verbose) return () => undefined
  return events.subscribe(consoleSink({ verbose: verbose ?? false }))
}

/** Progress of a run on stderr: live per-host lines on a terminal, plain lines otherwise, nothing with --json. */
export async function showProgressOn(io: CommandIO): Promise<() => void> {
  const { json, verbose } = io.options
  if (json && !verbose) return () => undefined
  const { progressSink } = await import('../reports/progress.ts')
  return events.subscribe(progressSink(process.stderr, { verbose: verbose ?? false }))
}

export type { ShownRun } from './closing-line.ts'

/** Runs a playbook run (the systems and observers wired, `--metrics-file` honoured) with progress on stderr, and prints how it ended. */
export async function showRunOn(
  io: CommandIO,
  run: () => Promise<ShownRun>,
  options: { metricsFile?: string; human?: (outcome: ShownRun) => string } = {},
): Promise<void> {
  const { useRunSystems } = await import('./run-systems.ts')
  await useRunSystems(options.metricsFile ? { metricsFile: options.metricsFile } : {})
  const { closingLine, endingWithClosingLine } = await import('./closing-line.ts')
  const stop = await showProgressOn(io)
  try {
    const outcome = await run()
    const closing = options.human ?? closingLine
    printOn(io, { ok: true, runId: outcome.runId, phase: outcome.phase, report: outcome.report }, () => closing(outcome))
  } catch (error) {
    throw endingWithClosingLine(error)
  } finally {
    stop()
  }
}

/**
 * Prints a dry run: the plan's fields at the top of the JSON (`spread`) or under `plan`, the
 * system's text, and a closing summary (what would change, what blocks it, the exact command that
 * would go ahead). It exits as the real run would: the exit code of the first step that would
 * refuse (5 an open gate, 2 bad input, 1 what cannot be read), with `ok: false` and the blocking ids.
 */
export function printPlanOn(io: CommandIO, plan: RunPlan, text: () => string, options: { spread: boolean }): void {
  const summary = summarizePlan(plan, io.goAheadCommand())
  const ok = summary.blockers.length === 0
  const head = { ok, dryRun: true, summary }
  printOn(io, options.spread ? { ...head, ...plan } : { ...head, plan }, () => `${text()}\n\n${renderPlanSummary(summary)}`)
  const first = summary.blockers[0]
  if (first) io.exitWith(first.exitCode)
}

/** The closing lines of a dry run, as `--json` carries them too. */
export interface PlanSummary {
  /** The targets the run would change, and how. */
  changes: string
  /** What would stop the real run, in step order. */
  blockers: (PlanBlocker & { step: string; host?: string })[]
  /** The ids of what blocks it (gates to acknowledge), all of them. */
  blocking: string[]
  /** The exact command that would go ahead (with the `--ack` the gates need once handled). */
  command: string
}

function summarizePlan(plan: RunPlan, command: string): PlanSummary {
  const targets = [...new Set(plan.steps.flatMap((s) => (s.host ? [s.host] : [])))]
  const blockers = plan.steps.flatMap((s) => (s.blocked ? [{ step: s.step, ...(s.host ? { host: s.host } : {}), ...s.blocked }] : []))
  const blocking = [...new Set(blockers.flatMap((b) => b.ids ?? []))]
  const what = plan.what === 'upgrade' ? `to ${plan.target}` : `${plan.what} of run ${plan.runId ?? '?'}`
  const changes = targets.length
    ? `${targets.join(', ')} ${what} (${plan.steps.length} steps)`
    : `${what} (${plan.steps.length} steps, nothing on any single target)`
  return { changes, blockers, blocking, command: blocking.length ? `${command} --ack ${blocking.join(',')}` : command }
}

function renderPlanSummary(s: PlanSummary): string {
  const lines = ['Summary of this dry run (nothing was changed):', `  would change: ${s.changes}`]
  if (!s.blockers.length) lines.push('  blocks it: nothing found', `  to go ahead: ${s.command}`)
  for (const b of s.blockers) lines.push(`  blocks it (exit ${b.exitCode}) at ${b.host ? `${b.host} ` : ''}${b.step}: ${b.reason}`)
  if (s.blockers.length) lines.push(`  once that is handled, go ahead with: ${s.command}`)
  return lines.join('\n')
}

/** Options only a dry run takes (`upgrade live --from`: the run reads the release itself), with their value. */
const DRY_RUN_ONLY = ['--from']

/**
 * `prefix` and the arguments of a dry run without `--dry-run`, `--json` and the options only a dry
 * run takes, each quoted for a shell where it needs it.
 */
export function goAheadOf(prefix: string[], args: readonly string[]): string {
  const kept: string[] = []
  for (let i = 0; i < args.length; i++) {
    const a = args[i] ?? ''
    if (DRY_RUN_ONLY.includes(a)) i++
    else if (a !== '--dry-run' && a !== '--json' && !DRY_RUN_ONLY.some((o) => a.startsWith(`${o}=`))) kept.push(a)
  }
  return [...prefix, ...kept.map(shellQuote)].join(' ')
}

function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`
}

/**
 * Shows why a command failed and returns its exit code (mapped by the typed errors, src/core/errors.ts):
 * one sentence and its hint on stderr, and with --json also a JSON answer on stdout with the
 * error's facts. Redacted, and its control characters escaped: an error may quote what was read.
 */
export function writeFailure(error: unknown, json: boolean | undefined): number {
  const code = exitCodeFor(error)
  const message = sanitizeText(redact(errorMessage(error)))
  const hint = isExpected(error) && error.hint ? sanitizeText(redact(error.hint)) : undefined
  if (json) {
    const facts = isExpected(error) ? redactDeep(error.facts) : {}
    process.stdout.write(
      stringifyForTerminal(
        {
          ok: false,
          error: { type: error instanceof Error ? error.name : 'Error', message, ...(hint ? { hint } : {}) },
          exitCode: code,
          ...facts,
        },
        2,
      ) + '\n',
    )
  }
  process.stderr.write(`svcops: ${message}\n${hint ? `${hint}\n` : ''}`)
  if (!isExpected(error) && process.env.SVCOPS_DEBUG && error instanceof Error && error.stack) {
    process.stderr.write(sanitizeText(redact(error.stack)) + '\n')
  }
  return code
}
