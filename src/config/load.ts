/**
 * Loads an environment: `--env NAME` reads `stacks/Pulumi.NAME.yaml`, `--stack-file PATH` an explicit
 * file. Three steps, as in the changesets config: parse YAML, validate with the schema, then named
 * rules. Every error names the dot-path of the field, the value and what is expected.
 */
import { existsSync, readFileSync, statSync } from 'node:fs'
import { basename, resolve } from 'node:path'
import { parse as parseYaml } from 'yaml'
import type { z } from 'zod'
import { BadInputError } from '../core/errors.ts'
import { hostsOf, reachOf } from './host-transport.ts'
import { isClusterLiveSection, liveClusterSchema, type LiveClusterConfig } from './live-cluster.ts'
import { environmentSchema, type Environment, type LiveSection } from './schema.ts'

const NAMESPACE = 'svcops:'
const ENV_NAME = /^[a-z0-9][a-z0-9_-]*$/

/** The stack file of environment `name` under `stacksDir`. */
export function stackFilePath(name: string, stacksDir = defaultStacksDir()): string {
  if (!ENV_NAME.test(name)) {
    throw new BadInputError(
      `--env: '${name}' is not an environment name; expected lower-case letters, digits, '-' or '_' (the stack name, as in stacks/Pulumi.<name>.yaml).`,
    )
  }
  return resolve(stacksDir, `Pulumi.${name}.yaml`)
}

/** `SVCOPS_STACKS_DIR`, else `stacks/` in the working directory. */
export function defaultStacksDir(): string {
  return process.env.SVCOPS_STACKS_DIR ?? resolve('stacks')
}

/** Formats a zod issue path as `recording.hosts[2].port`. */
export function dotPath(path: readonly PropertyKey[]): string {
  let out = ''
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`
    else out += out ? `.${String(part)}` : String(part)
  }
  return out || '(root)'
}

function describeValue(value: unknown): string {
  if (value === undefined) return 'missing'
  const text = JSON.stringify(value)
  return text.length > 60 ? `${text.slice(0, 57)}...` : text
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let node = root
  for (const part of path) {
    if (node === null || typeof node !== 'object') return undefined
    node = (node as Record<PropertyKey, unknown>)[part]
  }
  return node
}

/** One sentence per issue: `field: value is ...; expected ...`. Secret-shaped values are never echoed. */
export function formatIssues(issues: readonly z.core.$ZodIssue[], input: unknown, prefix = ''): string[] {
  return issues.map((issue) => {
    const path = dotPath(issue.path)
    const field = prefix ? `${prefix}${path === '(root)' ? '' : `.${path}`}` : path
    if (issue.code === 'unrecognized_keys') {
      const keys = issue.keys.join(', ')
      const secretish = issue.keys.some((k) => /pass|secret|token|psk|key/i.test(k))
      return `${field}: unknown field${issue.keys.length > 1 ? 's' : ''} ${keys}${secretish ? '; secrets are given by reference ({ env: VARIABLE } or { file: PATH }), never as values' : ''}.`
    }
    const value = valueAt(input, issue.path)
    const secretField = issue.path.some((p) => typeof p === 'string' && /pass|secret|token|psk/i.test(p))
    const shown = secretField ? (value === undefined ? 'missing' : 'a value') : describeValue(value)
    return `${field}: ${shown} is not valid; ${issue.message.replace(/^Invalid input: /, '')}.`
  })
}

/** Validates the `svcops:` part of a parsed stack file. */
export function parseEnvironment(stackConfig: Record<string, unknown>, name: string, file: string): Environment {
  const section: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(stackConfig)) {
    if (key.startsWith(NAMESPACE)) section[key.slice(NAMESPACE.length)] = value
  }
  // The live section of the Kubernetes platform has its own schema (no host, no package).
  const liveCluster = isClusterLiveSection(section.live) ? parseLiveCluster(section.live, file) : undefined
  if (liveCluster) delete section.live
  // Inside the cluster (the scheduled jobs) the manager is reached at its Service, which the
  // program gives the job as SVCOPS_MANAGER_URL when manager.url is an address of the operators'
  // machine (a port-forward's 127.0.0.1 is the pod itself in a pod): src/infra/scheduledJobs.ts.
  const inCluster = process.env.SVCOPS_MANAGER_URL
  if (inCluster && section.manager && typeof section.manager === 'object')
    section.manager = { ...(section.manager as Record<string, unknown>), url: inCluster }
  const result = environmentSchema.safeParse(section)
  if (!result.success) {
    const lines = formatIssues(result.error.issues, section)
    throw new BadInputError(`${file}: ${lines[0]}${lines.length > 1 ? ` (and ${lines.length - 1} more: ${lines.slice(1).join(' ')})` : ''}`)
  }
  const kube = kubernetesKeys(stackConfig, file)
  const { live: onHosts, ...sections } = result.data
  // One discriminant, as recording.platform: a section without `platform` is on hosts.
  const live: LiveSection | undefined = liveCluster ?? (onHosts ? { ...onHosts, platform: 'hosts' } : undefined)
  const env: Environment = {
    ...sections,
    name: result.data.environment ?? name,
    file,
    ...(kube ? { kubernetes: kube } : {}),
    ...(live ? { live } : {}),
  }
  checkRules(env)
  return env
}

/** `svcops:live` with `platform: kubernetes`, its errors named `live.<field>`. */
function parseLiveCluster(raw: unknown, file: string): LiveClusterConfig {
  const result = liveClusterSchema.safeParse(raw)
  if (result.success) return result.data
  const lines = formatIssues(result.error.issues, raw, 'live')
  throw new BadInputError(`${file}: ${lines[0]}${lines.length > 1 ? ` (and ${lines.length - 1} more: ${lines.slice(1).join(' ')})` : ''}`)
}

/** `kubernetes:context` and `kubernetes:kubeconfig`: the cluster the stack's provider and svcops' Kubernetes driver reach. */
function kubernetesKeys(stackConfig: Record<string, unknown>, file: string): Environment['kubernetes'] {
  const out: { context?: string; kubeconfig?: string } = {}
  for (const key of ['context', 'kubeconfig'] as const) {
    const value = stackConfig[`kubernetes:${key}`]
    if (value === undefined) continue
    if (typeof value !== 'string' || !value)
      throw new BadInputError(`${file}: kubernetes:${key}: ${describeValue(value)} is not valid; expected a non-empty string.`)
    out[key] = value
  }
  return Object.keys(out).length ? out : undefined
}

/** Debian policy 5.6.1: lower case letters, digits, "+", "-", "."; at least two; starting alphanumeric. */
const DEBIAN_PACKAGE = /^[a-z0-9][a-z0-9+.-]+$/

/** Named rules that a schema cannot express. */
function checkRules(env: Environment): void {
  const recording = env.recording
  if (recording && recording.packageDriver !== 'dnf' && !DEBIAN_PACKAGE.test(recording.package))
    throw new BadInputError(
      `${env.file}: recording.package: "${recording.package}" is not a Debian package name; expected lower-case letters, digits, "+", "-" and ".", starting with a letter or digit (Debian policy 5.6.1).`,
    )
  checkPlatform(env)
  const onHosts = { recording: env.recording, ...(env.live?.platform === 'hosts' ? { live: env.live } : {}) }
  for (const { field, host } of hostsOf(onHosts)) {
    const reach = reachOf(host, field)
    if ('refusal' in reach) throw new BadInputError(`${env.file}: ${reach.refusal}`)
  }
  if (env.live?.platform === 'kubernetes' && !env.deploy)
    throw new BadInputError(
      `${env.file}: svcops:deploy: missing; live.platform kubernetes takes the namespace, the Deployments and the version from it.`,
    )
  const hosts = env.recording?.hosts ?? []
  const seen = new Set<string>()
  hosts.forEach((host, i) => {
    if (seen.has(host.name))
      throw new BadInputError(`${env.file}: recording.hosts[${i}].name: "${host.name}" is used twice; expected unique host names.`)
    seen.add(host.name)
  })
  const canaries = hosts.filter((h) => h.canary)
  if (canaries.length > 1)
    throw new BadInputError(`${env.file}: recording.hosts: ${canaries.length} hosts are marked canary; expected at most one.`)
  checkRehearsal(env)
}

/** A rehearsal runs where it cannot touch production: its host and its database are never production's. */
function checkRehearsal(env: Environment): void {
  const rehearsal = env.recording?.rehearsal
  if (!env.recording || !rehearsal) return
  const { host } = rehearsal
  for (const twin of host ? env.recording.hosts : []) {
    const same = host && sameHostBy(host, twin)
    if (same)
      throw new BadInputError(
        `${env.file}: recording.rehearsal.host: "${host.name}" has the same ${same} as the production host ${twin.name}; expected a host of its own.`,
      )
  }
  if (rehearsal.database === env.recording.database.name)
    throw new BadInputError(
      `${env.file}: recording.rehearsal.database: "${rehearsal.database}" is the service's own database; expected a scratch database of its own.`,
    )
}

type RecordingHostEntry = NonNullable<Environment['recording']>['hosts'][number]

/**
 * What makes two host entries the same machine, or undefined: a copied entry with a new name keeps
 * production's ssh address or pinned key, and a URL differing only in case, default port or a
 * trailing slash is still production's service. The user is left out: another account on the same
 * machine is the same machine.
 */
function sameHostBy(a: RecordingHostEntry, b: RecordingHostEntry): string | undefined {
  if (a.name === b.name) return `name (${a.name})`
  const urlA = urlOrigin(a.url)
  if (urlA === urlOrigin(b.url)) return `URL (${urlA})`
  if (a.ssh && b.ssh) {
    if (a.ssh.host.toLowerCase() === b.ssh.host.toLowerCase() && a.ssh.port === b.ssh.port)
      return `ssh host and port (${a.ssh.host}:${a.ssh.port})`
    if (a.ssh.hostKey && a.ssh.hostKey === b.ssh.hostKey) return `pinned ssh host key (${a.ssh.hostKey})`
  }
  return undefined
}

/** A URL's scheme, lower-cased host and explicit port (default dropped) and path without a trailing slash. */
function urlOrigin(url: string): string {
  try {
    const u = new URL(url)
    return `${u.origin}${u.pathname.replace(/\/+$/, '')}`
  } catch {
    return url
  }
}

/** Hosts on the `hosts` platform; none, and a `deploy` section, on `kubernetes`. */
function checkPlatform(env: Environment): void {
  const recording = env.recording
  if (!recording) return
  if (recording.platform === 'hosts' && recording.hosts.length === 0)
    throw new BadInputError(`${env.file}: recording.hosts: [] is not valid; expected at least one host (recording.platform is hosts).`)
  if (recording.platform === 'kubernetes') {
    if (recording.hosts.length)
      throw new BadInputError(
        `${env.file}: recording.hosts: ${recording.hosts.length} host(s) given; expected none, since recording.platform is kubernetes (the Deployment comes from svcops:deploy).`,
      )
    if (!env.deploy)
      throw new BadInputError(
        `${env.file}: svcops:deploy: missing; recording.platform kubernetes takes the namespace and the Deployment from it.`,
      )
  }
}

/** A stack file is a few KB; parsing a large one takes memory for nothing (a 60 MB file took 2 GB). */
export const MAX_STACK_FILE_BYTES = 1 << 20

/** Reads and validates a stack file. */
export function loadEnvironmentFile(
  file: string,
  name = basename(file)
    .replace(/^Pulumi\./, '')
    .replace(/\.ya?ml$/, ''),
): Environment {
  if (!existsSync(file)) {
    throw new BadInputError(
      `The environment file '${file}' does not exist.`,
      `Create it, or pass --stack-file PATH (lab environments: run 'svcops lab up' first).`,
    )
  }
  const size = statSync(file).size
  if (size > MAX_STACK_FILE_BYTES)
    throw new BadInputError(
      `${file}: has ${size} bytes; a stack file has at most ${MAX_STACK_FILE_BYTES} (it was not parsed).`,
      'Check that --stack-file names the stack file, not a dump or a log.',
    )
  let doc: unknown
  try {
    doc = parseYaml(readFileSync(file, 'utf8'))
  } catch (error) {
    throw new BadInputError(`${file}: is not valid YAML: ${(error as Error).message.split('\n')[0]}`)
  }
  if (!doc || typeof doc !== 'object' || !('config' in doc) || typeof doc.config !== 'object' || doc.config === null) {
    throw new BadInputError(`${file}: config: missing; expected a Pulumi stack file with a 'config:' map holding svcops:* keys.`)
  }
  return parseEnvironment(doc.config as Record<string, unknown>, name, file)
}

/** Loads `--stack-file` if given, else the stack file of `--env`. */
export function loadEnvironment(options: { env?: string; stackFile?: string }): Environment {
  if (options.stackFile) return loadEnvironmentFile(resolve(options.stackFile), options.env)
  if (!options.env)
    throw new BadInputError('--env: missing; expected the name of an environment (a stack in stacks/), for example --env dev.')
  return loadEnvironmentFile(stackFilePath(options.env), options.env)
}

/** The section `key` of `env`, or a clear error saying the environment does not configure it. */
export function requireSection<K extends 'manager' | 'recording' | 'backup' | 'live'>(
  env: Environment,
  key: K,
): NonNullable<Environment[K]> {
  const section = env[key]
  if (!section)
    throw new BadInputError(`${env.file}: svcops:${key}: missing; this command needs it configured for environment '${env.name}'.`)
  return section
}
