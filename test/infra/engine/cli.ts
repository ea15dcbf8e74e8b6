/**
 * The in-test Pulumi CLI: what the `pulumi` argv recorder (test/support/pulumi-argv-recorder.ts,
 * `engine` option) runs for `pulumi preview`, `pulumi up`, `pulumi destroy` and `pulumi stack output`, instead of a
 * canned answer. It runs the program of the project in the folder it is started in against the
 * in-test engine (./engine.ts) with the Kubernetes provider model (`cluster`: the API server the
 * kubeconfig of its environment names, KUBECONFIG, as pulumi-kubernetes reads it), keeps the
 * stack's checkpoint in a file between calls, and prints what the CLI prints where svcops reads it:
 *
 * - `preview [--refresh] --json`: the `PreviewDigest` document (`steps` with `op`, `urn` and
 *   `detailedDiff` paths; `diagnostics` with the provider's errors), exit 255 on an error;
 * - `up [--refresh] [--target URN]...`: the update and its checkpoint (after a failed step, what was
 *   applied before it, as the engine keeps it), `error: ...` lines and exit 255 on a failure;
 * - `destroy [--exclude-protected]`: the checkpoint's resources deleted (./destroy.ts), the checkpoint kept;
 * - `stack output --json`: the outputs of the last update.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parse as parseYaml } from 'yaml'
import { destroyStack } from './destroy.ts'
import { errors, runEngine, type EngineRun } from './engine.ts'
import type { ResourceState } from './providers.ts'
import { isSecret, plain, type Value } from './wire.ts'

export interface EngineCliOptions {
  /** Where the stack's checkpoint is kept between calls. */
  stateFile: string
  /** Decrypted values of the stack's secure keys (as the CLI hands them to the program). */
  config?: Record<string, string>
  secretKeys?: string[]
}

function loadState(file: string): Map<string, ResourceState> {
  if (!existsSync(file)) return new Map()
  return new Map(JSON.parse(readFileSync(file, 'utf8')) as [string, ResourceState][])
}

function flagValues(argv: string[], flag: string): string[] {
  return argv.flatMap((a, i) => (a === flag && argv[i + 1] !== undefined ? [argv[i + 1] as string] : []))
}

/** The stack file Pulumi reads for `stack` in the project at `cwd` (Pulumi.yaml's stackConfigDir). */
function stackFileOf(cwd: string, stack: string): string {
  const project = parseYaml(readFileSync(join(cwd, 'Pulumi.yaml'), 'utf8')) as { stackConfigDir?: string }
  return join(cwd, project.stackConfigDir ?? '.', `Pulumi.${stack}.yaml`)
}

/** The variables of the CLI's environment that reach the program and the provider. */
function providerEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(env)) if (v !== undefined && /^(KUBECONFIG|PULUMI_K8S_[A-Z_]+|SVCOPS_[A-Z_]+)$/.test(k)) out[k] = v
  return out
}

/** A value as Pulumi's JSON shows it: every secret "[secret]" (pulumi/pulumi pkg/backend/display/json.go `massagePropertyValue`). */
function masked(value: Value): Value {
  if (isSecret(value)) return '[secret]'
  if (Array.isArray(value)) return value.map(masked)
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, masked(v)]))
  return value
}

/** The digest `pulumi preview --json` prints. */
function digestOf(run: EngineRun): Record<string, Value> {
  // A step's oldState, as Pulumi's PreviewStep carries it (display/json.go `ShowPreviewDigest`: the
  // state the step starts from, secrets masked): the id and outputs of a Kubernetes object (the live
  // object the refresh read, with pulumi-kubernetes' `__fieldManager`, provider.go `checkpointObject`),
  // and the initErrors of an unready one.
  const steps = run.steps.map((s) => {
    const oldState = {
      ...(s.oldState
        ? {
            id: s.oldState.id,
            outputs: masked({ ...s.oldState.outputs, ...(s.oldState.fieldManager ? { __fieldManager: s.oldState.fieldManager } : {}) }),
          }
        : {}),
      ...(s.initErrors ? { initErrors: s.initErrors } : {}),
    }
    return {
      op: s.op,
      urn: s.urn,
      ...(s.detailedDiff ? { detailedDiff: s.detailedDiff } : {}),
      ...(Object.keys(oldState).length ? { oldState: { urn: s.urn, type: s.type, ...oldState } } : {}),
    }
  })
  const summary: Record<string, number> = {}
  for (const s of run.steps) summary[s.op] = (summary[s.op] ?? 0) + 1
  return {
    steps,
    diagnostics: run.logs.filter((l) => l.severity === 'error').map((l) => ({ urn: l.urn, message: l.message, severity: 'error' })),
    changeSummary: summary,
  }
}

/** Runs one `pulumi` command in the project at `cwd`; undefined when the engine does not play it. */
export async function runPulumi(
  argv: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  options: EngineCliOptions,
): Promise<{ stdout: string; code: number } | undefined> {
  const [command, sub] = argv
  const stack = flagValues(argv, '--stack')[0] ?? flagValues(argv, '-s')[0] ?? ''
  const state = loadState(options.stateFile)
  if (command === 'stack' && sub === 'output') {
    const outputs = [...state.entries()].find(([urn]) => urn.includes('::pulumi:pulumi:Stack::'))?.[1].outputs ?? {}
    return { stdout: `${JSON.stringify(plain(outputs), null, 2)}\n`, code: 0 }
  }
  if (command === 'destroy') {
    const done = await destroyStack(state, providerEnv(env), { excludeProtected: argv.includes('--exclude-protected') })
    writeFileSync(options.stateFile, JSON.stringify([...state.entries()]))
    const lines = [
      `Destroying (${stack}):`,
      ...done.steps.map((s) => `    delete ${s.urn}`),
      ...(done.error ? [`error: ${done.error.message}`, 'error: destroy failed'] : ['Destroy succeeded']),
    ]
    return { stdout: `${lines.join('\n')}\n`, code: done.error ? 255 : 0 }
  }
  if (command !== 'preview' && command !== 'up') return undefined
  const preview = command === 'preview'
  const targets = flagValues(argv, '--target')
  const run = await runEngine({
    stack,
    preview,
    stackFile: stackFileOf(cwd, stack),
    state,
    cluster: true,
    refresh: argv.includes('--refresh'),
    ...(targets.length ? { targets } : {}),
    ...(options.config ? { config: options.config } : {}),
    ...(options.secretKeys ? { secretKeys: options.secretKeys } : {}),
    env: providerEnv(env),
  })
  const failed = run.exitCode !== 0
  if (preview) return { stdout: `${JSON.stringify(digestOf(run), null, 2)}\n`, code: failed ? 255 : 0 }
  writeFileSync(options.stateFile, JSON.stringify([...run.state.entries()]))
  const lines = [
    `Updating (${stack}):`,
    ...run.steps.filter((s) => s.op !== 'same').map((s) => `    ${s.op} ${s.urn}`),
    ...errors(run).map((e) => `error: ${e}`),
    failed ? `error: update failed` : `Update succeeded`,
  ]
  return { stdout: `${lines.join('\n')}\n`, code: failed ? 255 : 0 }
}
