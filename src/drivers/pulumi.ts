/**
 * The Pulumi CLI as the recording service's playbooks use it on Kubernetes: its version, the stack,
 * the recording service's version set in the stack file (`pulumi config set --path`, which writes
 * the file Pulumi.yaml's `stackConfigDir` names), `pulumi preview --json` and the rule that it shows
 * no change but that version, and `pulumi up` limited to what the preview showed (`--target`).
 * Every command is an exact argv (unit-tested) run through the one runner, in the project's folder.
 * Nothing secret is ever an argument: the state backend's credentials reach the CLI through its
 * environment (PULUMI_ACCESS_TOKEN, PULUMI_CONFIG_PASSPHRASE), never through argv or a log.
 */
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { parse as parseYaml } from 'yaml'
import { BadInputError, OperationError, ProtocolError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { sanitizeLine } from '../core/sanitize.ts'
import { outsideEdits, refuseOutsideEdits, showOutsideEdit, type OutsideEdit } from './pulumi-drift.ts'
import { compareVersions } from '../releases/versions.ts'
import { local, runCommand, shellJoin, type CommandResult, type Transport } from '../core/runner.ts'

/** The oldest Pulumi CLI whose `preview --json`, `--target` and `config set --path` the driver relies on. */
export const PULUMI_MIN_VERSION = '3.100.0'

/** Where the CLI runs and which stack it acts on. */
export interface PulumiStack {
  /** The folder of Pulumi.yaml. */
  projectDir: string
  /** The stack name (`--stack`). */
  stack: string
  /** The stack file Pulumi reads for this stack (`<projectDir>/<stackConfigDir>/Pulumi.<stack>.yaml`). */
  stackFile: string
}

/** The config key that holds the recording service's version in this stack. */
export type VersionKey = 'svcops:deploy.recording.version' | 'svcops:recording.version'

/** The key of the replicas the recording upgrade holds the Deployment at (the stop: 0; the first start: 1). */
export const HELD_REPLICAS_KEY = 'svcops:deploy.recording.heldReplicas'

/**
 * Keys svcops sets in a stack file: a version, the live system's PSK rotation
 * (src/live/kubernetes/live-cluster-handle.ts), or the replicas the recording upgrade holds.
 */
export type StackKey = VersionKey | 'svcops:deploy.live.version' | 'svcops:deploy.pskRotation' | typeof HELD_REPLICAS_KEY

/** Variables the CLI needs from svcops' environment: its backend, its secrets provider, the cluster. */
const PULUMI_ENV = /^(PULUMI_[A-Z_]+|KUBECONFIG|AWS_[A-Z_]+|AZURE_[A-Z_]+|GOOGLE_[A-Z_]+|CLOUDSDK_[A-Z_]+)$/

/** The argv of every command, one function each (the tests assert them). */
export const pulumiArgv = {
  version: (): string[] => ['pulumi', 'version'],
  stacks: (): string[] => ['pulumi', 'stack', 'ls', '--json', '--non-interactive'],
  configSet: (s: PulumiStack, key: StackKey, value: string): string[] => [
    'pulumi',
    'config',
    'set',
    '--path',
    '--stack',
    s.stack,
    '--non-interactive',
    '--',
    key,
    value,
  ],
  configRm: (s: PulumiStack, key: StackKey): string[] => [
    'pulumi',
    'config',
    'rm',
    '--path',
    '--stack',
    s.stack,
    '--non-interactive',
    '--',
    key,
  ],
  outputs: (s: PulumiStack): string[] => ['pulumi', 'stack', 'output', '--stack', s.stack, '--json', '--non-interactive'],
  preview: (s: PulumiStack): string[] => ['pulumi', 'preview', '--stack', s.stack, '--json', '--refresh', '--non-interactive'],
  up: (s: PulumiStack, targets: string[]): string[] => [
    'pulumi',
    'up',
    '--stack',
    s.stack,
    '--yes',
    '--refresh',
    '--non-interactive',
    '--skip-preview',
    ...targets.flatMap((urn) => ['--target', urn]),
  ],
}

/** A command as the dry run and the journal show it: the argv, and the folder it runs in. */
export function showPulumi(s: PulumiStack, argv: string[]): string {
  return `${shellJoin(argv)}   (in ${s.projectDir})`
}

/** The Pulumi CLI on this machine for one stack. */
export class PulumiCli {
  readonly stack: PulumiStack
  private readonly transport: Transport

  constructor(stack: PulumiStack, transport: Transport = local) {
    this.stack = stack
    this.transport = transport
  }

  /**
   * Runs one `pulumi` argv in the project's folder, with the CLI's own variables passed through, and
   * those the program itself reads through the stack's `{ env: X }` references (`programVariables`).
   */
  run(argv: string[], options: { check?: boolean; timeoutMs?: number } = {}): Promise<CommandResult> {
    const env: Record<string, string> = { PULUMI_SKIP_UPDATE_CHECK: 'true' }
    const read = new Set(programVariables(this.stack.stackFile))
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && (PULUMI_ENV.test(k) || read.has(k))) env[k] = v
    return runCommand(this.transport, argv, { cwd: this.stack.projectDir, env, ...options })
  }

  /** `pulumi version`, checked against PULUMI_MIN_VERSION. */
  async version(): Promise<string> {
    const out = (await this.run(pulumiArgv.version())).stdout.trim()
    const v = /^v?(\d+\.\d+\.\d+)/.exec(out)?.[1]
    if (!v) throw new ProtocolError(`'pulumi version' printed "${out.slice(0, 60)}"; expected a version like v3.150.0.`)
    if (compareVersions(v, PULUMI_MIN_VERSION) < 0)
      throw new OperationError(
        `The Pulumi CLI is ${v}; the Kubernetes platform needs ${PULUMI_MIN_VERSION} or newer.`,
        'Install a current Pulumi CLI (https://www.pulumi.com/docs/install/).',
      )
    return v
  }

  /** The stack exists in the backend, and no other update of it is running. */
  async checkStack(): Promise<void> {
    const out = (await this.run(pulumiArgv.stacks())).stdout
    const stacks = parseStackList(out)
    const found = stacks.find((s) => s.name === this.stack.stack || s.name.endsWith(`/${this.stack.stack}`))
    if (!found)
      throw new OperationError(
        `The Pulumi stack '${this.stack.stack}' does not exist in the logged-in backend (it has ${stacks.map((s) => s.name).join(', ') || 'no stacks'}).`,
        `Log in to the stack's backend (pulumi login) or create it: pulumi stack init ${this.stack.stack}`,
      )
    if (found.updateInProgress)
      throw new OperationError(`An update of the Pulumi stack '${this.stack.stack}' is in progress; svcops does not start on top of it.`)
  }

  /** `pulumi config set --path KEY VERSION`: the stack file holds `version` afterwards (checked by reading it). */
  async setVersion(key: StackKey, version: string): Promise<void> {
    await this.run(pulumiArgv.configSet(this.stack, key, version))
    const now = readStackVersion(this.stack.stackFile, key)
    if (now !== version)
      throw new OperationError(`After 'pulumi config set', ${this.stack.stackFile} holds ${key} = ${now ?? 'nothing'}, not ${version}.`)
  }

  /**
   * `pulumi config set --path KEY VALUE` of a number (`--path` stores it as a number), or
   * `pulumi config rm --path KEY` with `undefined`: the stack file holds it afterwards (checked by reading it).
   */
  async setNumber(key: StackKey, value: number | undefined): Promise<void> {
    await this.run(value === undefined ? pulumiArgv.configRm(this.stack, key) : pulumiArgv.configSet(this.stack, key, String(value)))
    const now = readStackValue(this.stack.stackFile, key)
    if (now !== value)
      throw new OperationError(
        `After 'pulumi config ${value === undefined ? 'rm' : 'set'}', ${this.stack.stackFile} holds ${key} = ${now === undefined ? 'nothing' : JSON.stringify(now)}, not ${value ?? 'nothing'}.`,
      )
  }

  /** `pulumi stack output --json`: the outputs of the last update (secret ones stay `[secret]`: no --show-secrets). */
  async outputs(): Promise<Record<string, unknown>> {
    const out = (await this.run(pulumiArgv.outputs(this.stack))).stdout
    let doc: unknown
    try {
      doc = JSON.parse(out)
    } catch {
      throw new ProtocolError(`'pulumi stack output --json' of stack '${this.stack.stack}' printed no JSON document.`)
    }
    if (!doc || typeof doc !== 'object' || Array.isArray(doc))
      throw new ProtocolError(`'pulumi stack output --json' of stack '${this.stack.stack}' printed no JSON object.`)
    return doc as Record<string, unknown>
  }

  /** `pulumi preview --json`: what an update would do now. */
  async preview(): Promise<PreviewDigest> {
    const result = await this.run(pulumiArgv.preview(this.stack), { check: false })
    const digest = parsePreview(result.stdout)
    if (result.code !== 0) {
      // A dry-run apply that conflicts with somebody's edit: said as such (./pulumi-drift.ts).
      const edits = digest ? outsideEdits(digest) : []
      if (edits.length) refuseOutsideEdits(this.stack.stack, edits)
      const errors = (digest?.diagnostics ?? []).filter((d) => d.severity === 'error').map((d) => d.message.trim())
      throw new OperationError(
        `'pulumi preview' of stack '${this.stack.stack}' failed (exit ${result.code}): ${errors[0] ?? result.stderr.trim().split('\n').at(-1) ?? 'no message'}`,
      )
    }
    if (!digest) throw new ProtocolError(`'pulumi preview --json' of stack '${this.stack.stack}' printed no JSON document.`)
    return digest
  }

  /** `pulumi up` of exactly `targets`. */
  async up(targets: string[]): Promise<void> {
    if (targets.length === 0) return
    await this.run(pulumiArgv.up(this.stack, targets), { timeoutMs: 3_600_000 })
  }
}

/**
 * The stack of an environment: Pulumi.yaml found above the stack file, and the stack file checked
 * to be the one Pulumi reads for the stack (its `stackConfigDir`), so that `pulumi config set`
 * writes the very file svcops read. Refused with one sentence otherwise.
 */
export function pulumiStackOf(stackFile: string, stack: string): PulumiStack {
  const file = resolve(stackFile)
  let dir = dirname(file)
  for (let i = 0; i < 4 && !existsSync(join(dir, 'Pulumi.yaml')); i++) dir = dirname(dir)
  const project = join(dir, 'Pulumi.yaml')
  if (!existsSync(project))
    throw new BadInputError(
      `No Pulumi.yaml above ${file}; the Kubernetes platform runs the Pulumi CLI in the project whose stack file this is.`,
      'Run svcops from a checkout of the project (stacks/ next to Pulumi.yaml).',
    )
  const doc = parseYaml(readFileSync(project, 'utf8')) as { stackConfigDir?: unknown } | null
  const configDir = typeof doc?.stackConfigDir === 'string' ? doc.stackConfigDir : '.'
  const expected = resolve(dir, configDir, `Pulumi.${stack}.yaml`)
  if (expected !== file)
    throw new BadInputError(
      `${file} is not the stack file Pulumi reads for stack '${stack}' (${expected}); the run would set the version in one file and deploy another.`,
    )
  return { projectDir: dir, stack, stackFile: file }
}

/** The version the stack file holds under `key`, read from the file itself (not from svcops' cache of it). */
export function readStackVersion(stackFile: string, key: StackKey): string | undefined {
  const node = readStackValue(stackFile, key)
  return typeof node === 'string' ? node : undefined
}

/**
 * The variables the Pulumi program reads through the stack file's `{ env: X }` references: the
 * database password's (`svcops:recording.database.password`, read by src/infra/settings.ts when
 * the stack holds no `svcops:databasePassword`). The CLI passes its environment to the program, and
 * svcops passes the CLI only its own variables besides these, so no other secret of svcops'
 * environment reaches Pulumi. None when the file cannot be read (the CLI says why).
 */
export function programVariables(stackFile: string): string[] {
  try {
    const doc = parseYaml(readFileSync(stackFile, 'utf8')) as { config?: Record<string, unknown> } | null
    const recording = doc?.config?.['svcops:recording'] as { database?: { password?: { env?: unknown } } } | undefined
    const name = recording?.database?.password?.env
    return typeof name === 'string' && /^[A-Z_][A-Z0-9_]*$/.test(name) ? [name] : []
  } catch {
    return []
  }
}

/** The value the stack file holds under `key` (a string, a number, ...), read from the file itself. */
export function readStackValue(stackFile: string, key: StackKey): unknown {
  const doc = parseYaml(readFileSync(stackFile, 'utf8')) as { config?: Record<string, unknown> } | null
  const config = doc?.config ?? {}
  const [ns, ...path] = key.split('.')
  let node: unknown = config[ns ?? '']
  for (const p of path) node = node && typeof node === 'object' ? (node as Record<string, unknown>)[p] : undefined
  return node
}

/** Where the version lives: `deploy.recording.version` when the stack sets it, else `recording.version` (the program reads the first, then the second). */
export function versionKeyOf(deployRecordingVersion: string | undefined): VersionKey {
  return deployRecordingVersion ? 'svcops:deploy.recording.version' : 'svcops:recording.version'
}

// ---- pulumi preview --json ----

/** One entry of `steps` (Pulumi's `PreviewStep`: op, urn, oldState/newState, diffReasons, detailedDiff). */
export interface PreviewStep {
  op: string
  urn: string
  diffReasons?: string[]
  detailedDiff?: Record<string, { kind: string; inputDiff?: boolean }>
  /**
   * The state the step starts from: its `initErrors` when the refresh found the object not ready; a
   * Kubernetes object's id and outputs (the live object, its managedFields, the provider's `__fieldManager`).
   */
  oldState?: { initErrors?: string[]; id?: string; outputs?: Record<string, unknown> }
}

/** The document `pulumi preview --json` prints (Pulumi's `PreviewDigest`), the fields read here. */
export interface PreviewDigest {
  steps: PreviewStep[]
  diagnostics?: Array<{ message: string; severity: string; urn?: string }>
  changeSummary?: Record<string, number>
}

/** Parses the JSON document (the CLI may print log lines before it); undefined when there is none. */
export function parsePreview(stdout: string): PreviewDigest | undefined {
  const start = stdout.indexOf('{')
  if (start < 0) return undefined
  let doc: unknown
  try {
    doc = JSON.parse(stdout.slice(start))
  } catch {
    return undefined
  }
  if (!doc || typeof doc !== 'object') return undefined
  const d = doc as { steps?: unknown; diagnostics?: unknown; changeSummary?: unknown }
  const steps = Array.isArray(d.steps) ? d.steps : []
  for (const s of steps)
    if (!s || typeof s !== 'object' || typeof (s as PreviewStep).op !== 'string' || typeof (s as PreviewStep).urn !== 'string')
      throw new ProtocolError("'pulumi preview --json' listed a step without op and urn.")
  return {
    steps: steps as PreviewStep[],
    ...(Array.isArray(d.diagnostics) ? { diagnostics: d.diagnostics as PreviewDigest['diagnostics'] } : {}),
    ...(d.changeSummary && typeof d.changeSummary === 'object' ? { changeSummary: d.changeSummary as Record<string, number> } : {}),
  }
}

/** Operations that change nothing in the cluster. */
const NO_CHANGE = new Set(['same', 'read', 'refresh'])

/** Type and name of a URN: `urn:pulumi:prod::svcops::a$b$kubernetes:apps/v1:Deployment::svc-recording-deployment`. */
export function urnParts(urn: string): { type: string; name: string } {
  const parts = urn.split('::')
  const qualified = parts[2] ?? ''
  return { type: qualified.slice(qualified.lastIndexOf('$') + 1), name: parts.slice(3).join('::') }
}

/**
 * An object the refresh found not ready, with nothing else to change: Pulumi's empty update step of
 * a resource with initialization errors (pulumi/pulumi pkg/resource/deploy/step_generator.go: an
 * unchanged resource whose state has `initErrors` gets an update with no diff, to await it again;
 * pulumi-kubernetes' Read sets them for a Deployment its awaiter finds unready, await.go `Read`).
 * Not a change of the stack: one phrase naming it and the awaiter's errors; undefined for any other step.
 */
export function unreadyObject(step: PreviewStep): string | undefined {
  const errors = step.oldState?.initErrors ?? []
  if (step.op !== 'update' || errors.length === 0) return undefined
  if (Object.keys(step.detailedDiff ?? {}).length > 0 || (step.diffReasons?.length ?? 0) > 0) return undefined
  const { type, name } = urnParts(step.urn)
  const shown = errors
    .slice(0, 3)
    .map((e) => sanitizeLine(String(e)).slice(0, 200))
    .join('; ')
  return `${type} ${name} is not ready (${shown})`
}

/** What a version change of the recording service may touch in a preview, and where. */
export interface VersionChange {
  /** Pulumi names: the Deployment (`<prefix>-recording-deployment`), the jobs' stack copy. */
  deployment: string
  stackMap: string
}

/** Property paths of a version change, per resource. */
const VERSION_PATHS: Record<'deployment' | 'stackMap', RegExp> = {
  deployment:
    /^(spec\.template\.spec\.containers\[\d+\]\.image|metadata\.labels\["app\.kubernetes\.io\/version"\]|spec\.template\.metadata\.labels\["app\.kubernetes\.io\/version"\])$/,
  stackMap: /^data(\.|\[|$)/,
}

/**
 * The preview's changes split into what a version change of the recording service does (the
 * targets of `pulumi up`) and everything else, one phrase each (the refusal lists them): an update
 * of the Deployment's image and version labels, of the jobs' stack copy's data; with
 * `ownReplicas`, the Deployment's replicas as well: the stack's own `heldReplicas`, which the run
 * set (or removed) in the stack file.
 */
export function versionOnlyChanges(digest: PreviewDigest, names: VersionChange, options: { ownReplicas?: boolean } = {}): PreviewSplit {
  const targets: string[] = []
  const other: string[] = []
  const unready: string[] = []
  const outside = outsideEdits(digest)
  other.push(...new Set(outside.map(showOutsideEdit)))
  for (const step of digest.steps) {
    if (NO_CHANGE.has(step.op) || outside.some((e) => e.urn === step.urn)) continue
    // An object the refresh found not ready is no change: named, never a target (`pulumi up` would await it).
    const notReady = unreadyObject(step)
    if (notReady) {
      unready.push(notReady)
      continue
    }
    const { type, name } = urnParts(step.urn)
    const role =
      type === 'kubernetes:apps/v1:Deployment' && name === names.deployment
        ? 'deployment'
        : type === 'kubernetes:core/v1:ConfigMap' && name === names.stackMap
          ? 'stackMap'
          : undefined
    const paths = Object.keys(step.detailedDiff ?? {})
    const shown = `${step.op} ${type} ${name}${paths.length ? ` (${paths.join(', ')})` : step.diffReasons?.length ? ` (${step.diffReasons.join(', ')})` : ''}`
    // The replicas the stack file holds the Deployment at are the stack's own change, never another writer's.
    const allowed = (p: string) =>
      VERSION_PATHS[role ?? 'deployment'].test(p) || (!!options.ownReplicas && role === 'deployment' && p === 'spec.replicas')
    if (!role || step.op !== 'update' || paths.length === 0 || !paths.every(allowed)) other.push(shown)
    else targets.push(step.urn)
  }
  for (const d of digest.diagnostics ?? []) if (d.severity === 'error') other.push(`error: ${d.message.trim()}`)
  return { targets, other, unready, outside }
}

/**
 * A preview split for a run: its own changes (`targets`), everybody else's (`other`, one phrase
 * each, the fields changed outside svcops among them), the objects not ready, and those fields alone.
 */
export interface PreviewSplit {
  targets: string[]
  other: string[]
  unready: string[]
  outside: OutsideEdit[]
}

/** Says which objects the preview found not ready, which the run leaves alone (`what`: the run's own changes). */
export function sayUnready(stack: string, unready: string[], what: string): void {
  if (unready.length)
    events.warn(
      `pulumi preview of stack '${stack}': ${unready.join('; ')}; not ${what}: the run goes on and leaves it alone (pulumi up targets only its own changes).`,
    )
}

/**
 * Stops a run whose `pulumi preview` shows changes the run does not apply (`other`), listing every
 * one; `what` says which changes the run does apply. Emits the check either way.
 */
export function refuseForeignChanges(stack: string, other: string[], check: string, what: string): void {
  events.emit({ kind: 'check', check, ok: other.length === 0, detail: other.join('; ') })
  if (other.length)
    throw new OperationError(
      `pulumi preview of stack '${stack}' shows ${other.length} change(s) besides ${what}: ${other.join('; ')}.`,
      `Review and apply them first (pulumi up -s ${stack}), or revert them in the stack file, then run again.`,
    )
}

/** `pulumi stack ls --json`: `[{ name, current, updateInProgress, ... }]`. */
function parseStackList(stdout: string): Array<{ name: string; updateInProgress?: boolean }> {
  let doc: unknown
  try {
    doc = JSON.parse(stdout)
  } catch {
    throw new ProtocolError("'pulumi stack ls --json' printed no JSON list.")
  }
  if (!Array.isArray(doc)) throw new ProtocolError("'pulumi stack ls --json' printed no JSON list.")
  return doc.filter((s): s is { name: string; updateInProgress?: boolean } => !!s && typeof (s as { name?: unknown }).name === 'string')
}
