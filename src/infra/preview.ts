/**
 * Runs the Pulumi program under the SDK's mock runtime — no engine, no cluster — and collects
 * the objects it declares. `svcops render` and the tests use it. The mocks play the providers'
 * part only where the program reads a provider-computed value: random passwords, keys and
 * certificates get stand-ins derived from the resource's name and inputs, so the same stack
 * renders the same objects and a changed `keepers` gives a new value, as the real provider does.
 */
import { createHmac } from 'node:crypto'
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as pulumi from '@pulumi/pulumi'
import * as runtimeState from '@pulumi/pulumi/runtime/state.js'
import { SECURE_KEYS } from '../config/deploy.ts'
import { BadInputError } from '../core/errors.ts'
import { assessPsk } from '../releases/pre-shared-key.ts'
import { registerSecret } from '../core/redact.ts'
import { readStackConfig } from './stackConfig.ts'

/** How Pulumi marks a secret value on the wire (what newResource receives). */
const SECRET_SIG_KEY = '4dabf18193072939515e22adb298388d'
const SECRET_SIG = '1b47061264138c4ac30d75fd1eb44270'

/** What replaces a secret value in rendered output. */
export const SECRET_MARKER = '<secret: set by Pulumi, not shown>'

/** One resource the program declared. */
export interface DeclaredResource {
  type: string
  name: string
  /** Inputs with secret values replaced by SECRET_MARKER. */
  shown: Record<string, unknown>
  /** Inputs with secret values in place (for checks that need them; never print these). */
  unwrapped: Record<string, unknown>
  /** Dot-paths of the values that were secret. */
  secretPaths: string[]
}

export interface PreviewResult {
  stack: string
  resources: DeclaredResource[]
  /** Kubernetes objects only (`kubernetes:*` resources), in declaration order; patches are apart. */
  objects: DeclaredResource[]
  /** Server-side apply patches of objects declared above (partial objects: no schema applies). */
  patches: DeclaredResource[]
  /** Stack outputs as the engine would record them. */
  outputs: Record<string, unknown>
  /** Secure config keys that were given stand-in values because no value was supplied. */
  standIns: string[]
}

export interface PreviewOptions {
  /** Stack file to read (`config:` map). */
  stackFile: string
  /** Stack name; defaults to the file's `Pulumi.<name>.yaml`. */
  stack?: string
  /** Extra or replaced config values (`svcops:psk` -> value), as `pulumi config set` would give them. */
  config?: Record<string, string>
  /** Keys of `config` that are secret (as `--secret`). */
  secretKeys?: string[]
  /** Makes stand-ins differ from run to run; fixed by default so a render is reproducible. */
  salt?: string
}

function isSecretWrapper(value: unknown): value is { value: unknown } {
  return typeof value === 'object' && value !== null && (value as Record<string, unknown>)[SECRET_SIG_KEY] === SECRET_SIG
}

function split(value: unknown, path: string, secretPaths: string[], inSecret: boolean): { shown: unknown; unwrapped: unknown } {
  if (isSecretWrapper(value)) {
    const inner = split(value.value, path, secretPaths, true)
    secretPaths.push(path || '(root)')
    return { shown: inner.shown, unwrapped: inner.unwrapped }
  }
  if (Array.isArray(value)) {
    const parts = value.map((v, i) => split(v, `${path}[${i}]`, secretPaths, inSecret))
    return { shown: parts.map((p) => p.shown), unwrapped: parts.map((p) => p.unwrapped) }
  }
  if (value && typeof value === 'object') {
    const shown: Record<string, unknown> = {}
    const unwrapped: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) {
      const part = split(v, path ? `${path}.${k}` : k, secretPaths, inSecret)
      shown[k] = part.shown
      unwrapped[k] = part.unwrapped
    }
    return { shown, unwrapped }
  }
  return { shown: inSecret && value !== undefined && value !== null ? SECRET_MARKER : value, unwrapped: value }
}

/** Splits raw newResource inputs into what may be shown and the values themselves. */
export function splitSecrets(inputs: Record<string, unknown>): {
  shown: Record<string, unknown>
  unwrapped: Record<string, unknown>
  secretPaths: string[]
} {
  const secretPaths: string[] = []
  const { shown, unwrapped } = split(inputs, '', secretPaths, false)
  return { shown: shown as Record<string, unknown>, unwrapped: unwrapped as Record<string, unknown>, secretPaths }
}

function derive(salt: string, label: string, bytes: number): Buffer {
  const out: Buffer[] = []
  for (let i = 0; Buffer.concat(out).length < bytes; i++) out.push(createHmac('sha256', salt).update(`${label}#${i}`).digest())
  return Buffer.concat(out).subarray(0, bytes)
}

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'

function pem(kind: string, body: Buffer): string {
  const lines = body.toString('base64').match(/.{1,64}/g) ?? []
  return `-----BEGIN ${kind}-----\n${lines.join('\n')}\n-----END ${kind}-----\n`
}

/** Provider-computed outputs the program reads, for the resource types it uses. */
function computedState(type: string, name: string, inputs: Record<string, unknown>, salt: string): Record<string, unknown> {
  const { unwrapped } = splitSecrets(inputs)
  const label = `${type}|${name}|${JSON.stringify(unwrapped)}`
  switch (type) {
    case 'random:index/randomPassword:RandomPassword': {
      const length = Number(unwrapped.length ?? 16)
      const bytes = derive(salt, label, length * 2)
      // Uniform over the alphanumeric alphabet (the program sets special: false).
      let result = ''
      for (let i = 0; result.length < length; i++) result += ALNUM[(bytes.readUInt16BE((i * 2) % (bytes.length - 1)) + i) % ALNUM.length]
      return { result: registerSecret(result), bcryptHash: '' }
    }
    case 'tls:index/privateKey:PrivateKey':
      return {
        privateKeyPem: registerSecret(pem('PRIVATE KEY', derive(salt, label, 138))),
        publicKeyPem: pem('PUBLIC KEY', derive(salt, `${label}|pub`, 91)),
      }
    case 'pulumi:pulumi:StackReference':
      // A render knows no earlier update of the stack (and reads no cluster: the downgrade guard is idle).
      return { outputs: {}, secretOutputNames: [] }
    case 'tls:index/certRequest:CertRequest':
      return { certRequestPem: pem('CERTIFICATE REQUEST', derive(salt, label, 300)) }
    case 'tls:index/selfSignedCert:SelfSignedCert':
    case 'tls:index/locallySignedCert:LocallySignedCert':
      return { certPem: pem('CERTIFICATE', derive(salt, label, 480)) }
    default:
      return {}
  }
}

/** A strong stand-in for a secure value, reproducible from `label`; drawn again until it passes the PSK check. */
function standIn(salt: string, label: string): string {
  for (let i = 0; ; i++) {
    const candidate = derive(salt, `stand-in|${label}|${i}`, 32).toString('base64url')
    if (assessPsk(candidate).ok) return candidate
  }
}

/**
 * Runs the program for a stack file under the mock runtime. Secure values in the file cannot be
 * decrypted here: `options.config` supplies them, else strong stand-ins are used and listed.
 */
export async function previewStack(options: PreviewOptions): Promise<PreviewResult> {
  const stack = options.stack ?? /Pulumi\.([^/\\]+)\.ya?ml$/.exec(options.stackFile)?.[1] ?? 'preview'
  const salt = options.salt ?? 'svcops-render'
  const { config, secure } = readStackConfig(options.stackFile)
  Object.assign(config, options.config ?? {})
  const secretKeys = new Set([...secure, ...(options.secretKeys ?? [])])
  const standIns: string[] = []
  // A stand-in for every secure value that was not supplied, and for the database password,
  // which a real run resolves from the operator's machine.
  for (const key of [...secure, 'svcops:databasePassword']) {
    if (config[key] === undefined && SECURE_KEYS.some((k) => `svcops:${k}` === key)) {
      config[key] = registerSecret(standIn(salt, `${stack}|${key}`))
      secretKeys.add(key)
      standIns.push(key)
    }
  }

  const resources: DeclaredResource[] = []
  await pulumi.runtime.setMocks(
    {
      newResource: (args) => {
        const inputs = args.inputs as Record<string, unknown>
        resources.push({ type: args.type, name: args.name, ...splitSecrets(inputs) })
        return { id: `${args.name}-id`, state: { ...inputs, ...computedState(args.type, args.name, inputs, salt) } }
      },
      call: (args): Record<string, unknown> => ({ ...(args.inputs as Record<string, unknown>) }),
    },
    'svcops',
    stack,
    false,
    // A file backend's organization, as `pulumi up` on one names it.
    'organization',
  )
  pulumi.runtime.setAllConfig(config, [...secretKeys])
  // The program reads its own stack file from the project root the CLI passes (settings.ts
  // ownStackFile): here, a throwaway project holding a copy of the file given.
  const root = mkdtempSync(join(tmpdir(), 'svcops-render-'))
  writeFileSync(join(root, 'Pulumi.yaml'), 'name: svcops\nruntime: nodejs\nstackConfigDir: stacks\n')
  mkdirSync(join(root, 'stacks'))
  copyFileSync(options.stackFile, join(root, 'stacks', `Pulumi.${stack}.yaml`))
  ;(
    runtimeState as unknown as { getStore(): { settings: { options: { rootDirectory?: string } } } }
  ).getStore().settings.options.rootDirectory = root
  // Imported after setMocks, as the SDK expects.
  const { default: program } = await import('./index.ts')
  // The program's error is caught inside the stack's init: thrown from there, the SDK would also
  // reject a promise nobody awaits, and the process would die of an unhandled rejection.
  let failure: unknown
  let outputs: Record<string, unknown>
  try {
    outputs =
      (await pulumi.runtime.runInPulumiStack(() => {
        try {
          return Promise.resolve(program())
        } catch (error) {
          failure = error
          return Promise.resolve({})
        }
      })) ?? {}
  } finally {
    await pulumi.runtime.disconnect()
    rmSync(root, { recursive: true, force: true })
  }
  if (failure instanceof pulumi.RunError) throw new BadInputError(failure.message)
  if (failure !== undefined) throw failure instanceof Error ? failure : new Error(JSON.stringify(failure))
  const kube = resources.filter((r) => r.type.startsWith('kubernetes:'))
  const isPatch = (r: DeclaredResource) => r.type.endsWith('Patch')
  return { stack, resources, objects: kube.filter((r) => !isPatch(r)), patches: kube.filter(isPatch), outputs, standIns }
}
