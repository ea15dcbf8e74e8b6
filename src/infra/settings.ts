/**
 * The stack's configuration as the Pulumi program sees it, validated at program start with the
 * same schema and loader as the CLI (src/config), then with the deployment's named rules. A bad
 * stack fails `pulumi preview` before any resource is declared, naming the field's dot-path.
 */
import * as pulumi from '@pulumi/pulumi'
import * as runtimeConfig from '@pulumi/pulumi/runtime/config.js'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { parse as parseYaml } from 'yaml'
import { SECURE_KEYS, type DeployConfig } from '../config/deploy.ts'
import { parseEnvironment } from '../config/load.ts'
import type { Environment } from '../config/schema.ts'
import { readSecret } from '../config/secrets.ts'
import { scheduledJobProblems } from './jobRules.ts'
import { BadInputError } from '../core/errors.ts'
import { assertStrongPsk } from '../releases/pre-shared-key.ts'
import { registerSecret } from '../core/redact.ts'
import { majorOf, tcpEndpointSingleValue, tcpEndpointVariable } from '../releases/versions.ts'

const NAMESPACE = 'svcops:'

/** What the program needs, validated. Secret values are kept apart from the rest. */
export interface StackSettings {
  stack: string
  /** The stack file the values came from, for messages. */
  file: string
  env: Environment
  deploy: DeployConfig
  /** Release of the recording service image. */
  recordingVersion: string
  recordingDatabase: { host: string; port: number; name: string; user: string }
  /** Decrypted `pulumi config set --secret` values and resolved references (registered for redaction). */
  secrets: { psk?: string; databasePassword: string }
}

// The SDK knows which keys were set with --secret but does not declare the function in its types.
const isConfigSecret = (runtimeConfig as unknown as { isConfigSecret?: (key: string) => boolean }).isConfigSecret

/** Reads and validates the running stack's configuration. */
export function readStackSettings(): StackSettings {
  const all = pulumi.runtime.allConfig()
  const plain = isConfigSecret
    ? Object.keys(all).filter((key) => SECURE_KEYS.some((k) => `${NAMESPACE}${k}` === key) && !isConfigSecret(key))
    : []
  return parseStackConfig(all, pulumi.getStack(), plain)
}

function parseValue(raw: string): unknown {
  // Pulumi hands structured values to the program as JSON text and plain strings as they are.
  if (/^\s*[[{]/.test(raw)) {
    try {
      return JSON.parse(raw)
    } catch (error) {
      throw new BadInputError(`A configuration value is not valid JSON: ${(error as Error).message}.`)
    }
  }
  return raw
}

/**
 * Validates a Pulumi configuration map (`svcops:manager` -> JSON text) of stack `stack`.
 * `plainText` lists secure keys that were not set with --secret: they are refused.
 */
export function parseStackConfig(all: Record<string, string>, stack: string, plainText: string[] = []): StackSettings {
  const file = `stacks/Pulumi.${stack}.yaml`
  const plain = plainText[0]
  if (plain !== undefined) {
    throw new BadInputError(
      `${file}: ${plain.slice(NAMESPACE.length)}: a value is stored in plain text; expected it set with \`pulumi config set --secret ${plain}\`.`,
    )
  }
  const forSchema: Record<string, unknown> = {}
  const decrypted: Partial<Record<(typeof SECURE_KEYS)[number], string>> = {}
  for (const [key, raw] of Object.entries(all)) {
    // The cluster keys as svcops reads them too (the scheduled upgrade's rules look at them).
    if (key === 'kubernetes:context' || key === 'kubernetes:kubeconfig') forSchema[key] = raw
    if (!key.startsWith(NAMESPACE)) continue
    const short = key.slice(NAMESPACE.length)
    const secure = SECURE_KEYS.find((k) => k === short)
    if (secure) {
      // Pulumi decrypted it; the schema sees the shape the stack file has.
      // A value piped into `pulumi config set --secret` may end with the pipe's newline.
      decrypted[secure] = registerSecret(raw.replace(/\r?\n$/, ''))
      forSchema[key] = { secure: 'decrypted-by-pulumi' }
      continue
    }
    forSchema[key] = parseValue(raw)
  }
  const env = parseEnvironment(forSchema, stack, file)
  const deploy = env.deploy
  if (!deploy)
    throw new BadInputError(
      `${file}: deploy: missing; expected the svcops:deploy section (namespace, manager, recording, live) to deploy this stack.`,
    )
  const fail: (path: string, text: string) => never = (path, text) => {
    throw new BadInputError(`${file}: ${path}: ${text}`)
  }

  if (decrypted.psk !== undefined) assertStrongPsk(decrypted.psk, `${file}: psk`)

  const recordingVersion = deploy.recording.version ?? env.recording?.version
  if (!recordingVersion)
    fail('deploy.recording.version', 'missing; expected the release of the recording service image, here or in recording.version.')
  const database = env.recording?.database
  if (!database) fail('recording.database', 'missing; expected the recording service database (host, name, user) in svcops:recording.')

  if (deploy.recording.replicas > 1 && deploy.recording.storage.accessMode === 'ReadWriteOnce') {
    fail(
      'deploy.recording.storage.accessMode',
      `"ReadWriteOnce" is not valid with ${deploy.recording.replicas} replicas; expected ReadWriteMany, since every replica reads and writes the recordings.`,
    )
  }
  const live = deploy.live
  const liveMajor = majorOf(live.version)
  for (const part of ['systemController', 'ingest', 'pipeline', 'controlPanel'] as const) {
    const own = live[part].version
    if (own !== undefined && majorOf(own) !== liveMajor) {
      fail(
        `deploy.live.${part}.version`,
        `"${own}" is not valid; expected a release of major ${liveMajor} like deploy.live.version (${live.version}), since the components of one release share its API and PSK rules.`,
      )
    }
  }
  const pipelineVersion = live.pipeline.version ?? live.version
  if (tcpEndpointSingleValue(pipelineVersion) && live.pipeline.tcpEndpoints.length !== 1) {
    fail(
      'deploy.live.pipeline.tcpEndpoints',
      `${live.pipeline.tcpEndpoints.length} endpoints are not valid for release ${pipelineVersion}; expected exactly one, since ${tcpEndpointVariable(pipelineVersion, env.product.prefix)} takes a single endpoint that accepts several connections.`,
    )
  }
  const controlPorts = live.pipeline.tcpEndpoints.map((e) => Number(e.split(':')[1]))
  if (live.metrics && controlPorts.includes(live.metrics.port)) {
    fail(
      'deploy.live.metrics.port',
      `${live.metrics.port} is not valid; expected a port other than the pipeline's TCP endpoint (${live.pipeline.tcpEndpoints.join(', ')}), since both are ports of the same pod.`,
    )
  }
  if ('psk' in live.systemController.settings) {
    fail(
      'deploy.live.systemController.settings.psk',
      'is not allowed; the PSK comes from svcops:psk (pulumi config set --secret) or is generated.',
    )
  }

  const jobProblems = scheduledJobProblems(env, deploy)
  if (jobProblems.length > 0) {
    const which = [
      deploy.upgradeSchedule ? 'deploy.upgradeSchedule' : '',
      deploy.liveUpgradeSchedule ? 'deploy.liveUpgradeSchedule' : '',
      deploy.backupSchedule ? 'deploy.backupSchedule' : '',
    ]
      .filter(Boolean)
      .join(' and ')
    fail(which, `the scheduled job cannot run as configured: ${jobProblems.join('; ')}.`)
  }

  const ref = database.password
  let databasePassword = decrypted.databasePassword
  if (databasePassword === undefined && ref) databasePassword = readSecret(ref, `${file}: recording.database.password`)
  if (databasePassword === undefined) {
    fail(
      'databasePassword',
      'missing; expected `pulumi config set --secret svcops:databasePassword`, or a reference in recording.database.password.',
    )
  }

  return {
    stack,
    file,
    env,
    deploy,
    recordingVersion,
    recordingDatabase: { host: database.host, port: database.port, name: database.name, user: database.user },
    secrets: { ...(decrypted.psk !== undefined ? { psk: decrypted.psk } : {}), databasePassword },
  }
}

/** Pulumi's own size limit for a ConfigMap is 1 MiB; a stack file is a few KiB. */
const STACK_FILE_MAX = 512 * 1024

/**
 * The stack file exactly as Pulumi reads it for this run (`<project root>/<stackConfigDir>/
 * Pulumi.<stack>.yaml`, the root the CLI passes, else the working folder), for the scheduled jobs:
 * read from disk, never rebuilt from the configuration, so a secure value stays the ciphertext the
 * file holds and the secrets provider's keys (`encryptionsalt`, `secretsprovider`) come along.
 */
export function ownStackFile(stack: string, root: string = pulumi.runtime.getRootDirectory()): { path: string; text: string } {
  const dir = root && existsSync(join(root, 'Pulumi.yaml')) ? root : process.cwd()
  const project = join(dir, 'Pulumi.yaml')
  if (!existsSync(project))
    throw new BadInputError(`No Pulumi.yaml in ${dir}; the scheduled jobs carry the stack file the project reads for stack '${stack}'.`)
  const doc = parseYaml(readFileSync(project, 'utf8')) as { stackConfigDir?: unknown } | null
  const path = resolve(dir, typeof doc?.stackConfigDir === 'string' ? doc.stackConfigDir : '.', `Pulumi.${stack}.yaml`)
  if (!existsSync(path))
    throw new BadInputError(`${path}: missing; the scheduled jobs carry the stack file Pulumi reads for stack '${stack}'.`)
  const size = statSync(path).size
  if (size > STACK_FILE_MAX)
    throw new BadInputError(
      `${path}: ${size} bytes is too large; expected a stack file under ${STACK_FILE_MAX} bytes (it becomes a ConfigMap).`,
    )
  return { path, text: readFileSync(path, 'utf8') }
}
