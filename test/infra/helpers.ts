/** Shared by the infra specifications: build a stack under the mock runtime, find objects in it. */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import type { IDeployment } from 'kubernetes-models/apps/v1'
import type { IContainer, IEnvVar, IPodTemplateSpec } from 'kubernetes-models/v1'
import type { z } from 'zod'
import type { deploySchema } from '../../src/config/deploy.ts'
import { previewStack, type DeclaredResource, type PreviewOptions, type PreviewResult } from '../../src/infra/preview.ts'

/** Written by `svcops lab up` at run time (ignored by git); not one of the platform's stacks. */
export const LAB_STACK = 'Pulumi.lab.yaml'

/** A stack file's config map, loosely typed for edits in tests. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type LooseConfig = Record<string, any>

export const STACKS_DIR = resolve(import.meta.dirname, '../../stacks')

/** The `svcops:deploy` section of a config map, typed as written in a stack file. */
export function deployOf(config: LooseConfig): z.input<typeof deploySchema> {
  return config['svcops:deploy'] as z.input<typeof deploySchema>
}

/** Stacks in stacks/ that deploy something (have svcops:deploy). */
export function deployStacks(): string[] {
  return readdirSync(STACKS_DIR)
    .filter((f) => /^Pulumi\.[^.]+\.yaml$/.test(f) && f !== LAB_STACK)
    .filter((f) => 'svcops:deploy' in ((parseYaml(readFileSync(join(STACKS_DIR, f), 'utf8')) as { config: object }).config ?? {}))
    .map((f) => f.replace(/^Pulumi\.|\.yaml$/g, ''))
}

/** The parsed `config:` map of a stack file, to change and write elsewhere. */
export function stackConfig(stack: string): Record<string, unknown> {
  return (parseYaml(readFileSync(join(STACKS_DIR, `Pulumi.${stack}.yaml`), 'utf8')) as { config: Record<string, unknown> }).config
}

/** Writes a stack file built from `config` into a fresh temp directory and returns its path. */
export function writeStack(stack: string, config: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), 'svcops-infra-'))
  const file = join(dir, `Pulumi.${stack}.yaml`)
  writeFileSync(file, toYaml({ config }))
  return file
}

/** Builds `stack` from stacks/, after `change` edits a copy of its config (for variants). */
export async function buildStack(
  stack: string,
  change?: (config: LooseConfig) => void,
  options: Omit<PreviewOptions, 'stackFile' | 'stack'> = {},
): Promise<PreviewResult> {
  if (!change) return previewStack({ stackFile: join(STACKS_DIR, `Pulumi.${stack}.yaml`), stack, ...options })
  const config = structuredClone(stackConfig(stack))
  change(config)
  return previewStack({ stackFile: writeStack(stack, config), stack, ...options })
}

export function kindOf(o: DeclaredResource): string {
  return String(o.unwrapped.kind)
}

export function nameOf(o: DeclaredResource): string {
  return String((o.unwrapped.metadata as { name: string }).name)
}

export function objectsOfKind(r: PreviewResult, kind: string): DeclaredResource[] {
  return r.objects.filter((o) => kindOf(o) === kind)
}

export function objectNamed(r: PreviewResult, kind: string, name: string): DeclaredResource {
  const found = r.objects.find((o) => kindOf(o) === kind && nameOf(o) === name)
  if (!found) throw new Error(`no ${kind} ${name} in stack ${r.stack}: ${r.objects.map((o) => `${kindOf(o)}/${nameOf(o)}`).join(' ')}`)
  return found
}

/** The pod template of a Deployment (unwrapped). */
export function podOf(o: DeclaredResource): IPodTemplateSpec {
  const template = (o.unwrapped as unknown as IDeployment).spec?.template
  if (!template) throw new Error(`${nameOf(o)} has no pod template`)
  return template
}

/** The one container of a Deployment. */
export function containerOf(o: DeclaredResource): IContainer {
  const container = podOf(o).spec?.containers[0]
  if (!container) throw new Error(`${nameOf(o)} has no container`)
  return container
}

/** The container's environment by variable name. */
export function envOf(o: DeclaredResource): Record<string, IEnvVar> {
  return Object.fromEntries((containerOf(o).env ?? []).map((e) => [e.name, e]))
}

/** Deployments whose container reads `secretName` through a secretKeyRef. */
export function deploymentsUsingSecret(r: PreviewResult, secretName: string): DeclaredResource[] {
  return objectsOfKind(r, 'Deployment').filter((d) =>
    (containerOf(d).env ?? []).some((e) => e.valueFrom?.secretKeyRef?.name === secretName),
  )
}

/** String data of a Secret or ConfigMap (unwrapped). */
export function dataOf(o: DeclaredResource): Record<string, string> {
  const data = o.unwrapped as { stringData?: Record<string, string>; data?: Record<string, string> }
  return data.stringData ?? data.data ?? {}
}

/** Stack outputs, typed as the program declares them. */
export function outputsOf(
  r: PreviewResult,
): { psk: { secretName: string; secretKey: string }; versions: { live: string }; tls: boolean } & Record<string, unknown> {
  return r.outputs as ReturnType<typeof outputsOf>
}

/** The PSK value as stored in its Secret. */
export function pskOf(r: PreviewResult): string {
  const { secretName, secretKey } = outputsOf(r).psk
  const value = dataOf(objectNamed(r, 'Secret', secretName))[secretKey]
  if (!value) throw new Error('the PSK Secret holds no PSK')
  return value
}
