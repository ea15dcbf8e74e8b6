/**
 * `svcops render`: the Kubernetes objects the Pulumi program would create for a stack, one YAML
 * file each, secrets replaced by a marker, every object validated against the official schema.
 * A preview for pull requests and for places without the Pulumi CLI — not what a cluster holds.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { writeFileAtomic } from '../core/atomic-write.ts'
import { join, resolve } from 'node:path'
import { stringify as toYaml } from 'yaml'
import { OperationError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { redact, redactDeep } from '../core/redact.ts'
import { previewStack, SECRET_MARKER, type DeclaredResource } from './preview.ts'
import { validateObject } from './validate.ts'

/** First line of every rendered file; also how a later render recognises files it may replace. */
export const RENDER_HEADER = '# PREVIEW rendered by svcops render'

export interface RenderOptions {
  stack: string
  stackFile: string
  outDir: string
  /** Build and validate, list the files, write nothing. */
  dryRun?: boolean
}

export interface RenderReport {
  stack: string
  outDir: string
  preview: true
  dryRun: boolean
  files: { file: string; kind: string; name: string; secretFields: string[] }[]
  /** Secure config keys given stand-in values (they cannot be decrypted without Pulumi). */
  standIns: string[]
  outputs: Record<string, unknown>
}

// Apply order a person would read: where things live, what they read, then what runs.
const KIND_ORDER = [
  'Namespace',
  'ServiceAccount',
  'Secret',
  'ConfigMap',
  'PersistentVolumeClaim',
  'Service',
  'Deployment',
  'PodDisruptionBudget',
  'NetworkPolicy',
  'CronJob',
]

function kindOf(o: DeclaredResource): string {
  return String(o.shown.kind)
}

function nameOf(o: DeclaredResource): string {
  const name = (o.shown.metadata as { name?: unknown } | undefined)?.name
  return typeof name === 'string' ? name : o.name
}

function header(stack: string, secretFields: string[]): string {
  return [
    `${RENDER_HEADER} --stack ${stack}, through Pulumi's mock runtime: not read from a cluster, not a plan.`,
    `# Secret values read "${SECRET_MARKER}"; generated keys, certificates and checksums are stand-ins.`,
    '# Validated against the official Kubernetes schema (kubernetes-models). For the real plan: pulumi preview -s ' + stack,
    ...(secretFields.length ? [`# Secret fields: ${secretFields.join(', ')}`] : []),
  ].join('\n')
}

/** Removes files an earlier render wrote, so objects that no longer exist do not linger. */
function clearEarlierRender(outDir: string): void {
  for (const file of readdirSync(outDir)) {
    if (!file.endsWith('.yaml')) continue
    const path = join(outDir, file)
    if (readFileSync(path, 'utf8').startsWith(RENDER_HEADER)) rmSync(path)
  }
}

/** Renders stack `options.stack` into `options.outDir`. Writes nothing when any object is invalid. */
export async function renderStack(options: RenderOptions): Promise<RenderReport> {
  const outDir = resolve(options.outDir)
  events.emit({ kind: 'step', step: 'run the program under the mock runtime', status: 'start', detail: options.stackFile })
  const result = await previewStack({ stackFile: options.stackFile, stack: options.stack })
  const objects = [...result.objects].sort(
    (a, b) => KIND_ORDER.indexOf(kindOf(a)) - KIND_ORDER.indexOf(kindOf(b)) || nameOf(a).localeCompare(nameOf(b)),
  )
  events.emit({ kind: 'step', step: 'run the program under the mock runtime', status: 'ok', detail: `${objects.length} objects` })

  const invalid: string[] = []
  for (const o of objects) {
    try {
      validateObject(o.unwrapped)
    } catch (error) {
      invalid.push(redact((error as Error).message))
    }
  }
  events.emit({
    kind: 'check',
    check: `${objects.length - invalid.length} of ${objects.length} objects match the Kubernetes schema`,
    ok: invalid.length === 0,
  })
  if (invalid.length > 0)
    throw new OperationError(
      `${invalid.length} rendered object(s) do not match the Kubernetes schema, nothing written: ${invalid.join(' ')}`,
    )

  const dryRun = options.dryRun ?? false
  const files = objects.map((o, i) => ({
    file: `${String(i + 1).padStart(2, '0')}-${kindOf(o).toLowerCase()}-${nameOf(o)}.yaml`,
    kind: kindOf(o),
    name: nameOf(o),
    secretFields: o.secretPaths,
    object: o,
  }))
  const outputs = redactDeep(result.outputs)
  if (!dryRun) {
    mkdirSync(outDir, { recursive: true })
    clearEarlierRender(outDir)
    // Redacted once more: a secret that reached a non-secret field must not reach a file either.
    // --out may be a shared directory: each file created exclusively and renamed, never through a planted link.
    for (const f of files)
      writeFileAtomic(join(outDir, f.file), `${header(options.stack, f.secretFields)}\n${redact(toYaml(f.object.shown))}`, { mode: 0o644 })
    writeFileAtomic(join(outDir, 'outputs.yaml'), `${header(options.stack, [])}\n# Stack outputs.\n${toYaml(outputs)}`, { mode: 0o644 })
  }
  return {
    stack: options.stack,
    outDir,
    preview: true,
    dryRun,
    files: files.map(({ object: _object, ...rest }) => rest),
    standIns: result.standIns,
    outputs,
  }
}
