/**
 * The recording service's configuration file (`/etc/opt/<dir>/recording.json`): its schema, the
 * default file each release ships, and resolving its paths under `--root`. Options a release
 * added carry defaults, so a config file written for an older release stays valid; keys a
 * release does not know are logged and ignored, so a rollback over a newer file still starts.
 */
import { isAbsolute, join, resolve } from 'node:path'
import * as z from 'zod/mini'
import { RECORDING_RELEASES, type RecordingRelease } from './releases.ts'
import { describeJsonSyntaxError } from '../../core/json-syntax.ts'
import { useEnglishMessages } from './zod-messages.ts'

// zod's tree-shakable form: every host start parses the bundled service, and zod's full API was
// three quarters of its bytes (docs/testing.md). The messages are zod's own English ones.
useEnglishMessages()

const port = z.number().check(z.int(), z.gte(1), z.lte(65535))
const text = () => z.string().check(z.minLength(1))
const count = (min: number) => z.number().check(z.int(), z.gte(min))
const httpUrl = () => z.url({ protocol: /^https?$/, error: 'expected an http:// or https:// URL' })

const configSchema = z.object({
  listen: z.prefault(z.object({ host: z._default(text(), '127.0.0.1'), port: z._default(port, 8090) }), {}),
  database: z.object({
    host: text(),
    port: z._default(port, 5432),
    name: text(),
    user: text(),
    password: z.optional(z.string()),
    /** File holding the password (read under --root), preferred over `password`. */
    passwordFile: z.optional(text()),
  }),
  auth: z.object({
    jwksUrl: httpUrl(),
    issuer: text(),
    readScope: z._default(text(), 'urn:svc:recorder:content:read'),
    writeScope: z._default(text(), 'urn:svc:recorder:content:write'),
    /** The `aud` a token must carry; by default `urn:<app>:<module>` of readScope (urn:svc:recorder). */
    audience: z.optional(text()),
  }),
  storage: z.object({
    path: text(),
    locations: z
      .array(
        z.object({
          name: z.string().check(z.regex(/^[A-Za-z0-9._-]+$/, 'expected a name of letters, digits, ".", "_" or "-"')),
          path: text(),
        }),
      )
      .check(z.minLength(1, 'expected at least one storage location')),
    /** Location new recordings go to; the first one when absent. */
    defaultLocation: z.optional(text()),
  }),
  mediaApi: z.object({
    baseUrl: httpUrl(),
    timeoutMs: z._default(count(1), 5000),
  }),
  contentInfoCacheSize: z._default(count(0), 1000),
  /** POST requests per second; 0 disables the limit. */
  writeRateLimit: z._default(z.number().check(z.gte(0)), 0),
})

/** Options only some releases know, keyed by the option name in RecordingRelease.configOptionsAdded. */
const addedOptions = {
  contentInfoCacheTtlSeconds: z._default(count(0), 300),
  logLevel: z._default(z.enum(['debug', 'info', 'warn', 'error']), 'info'),
} as const

export type RecordingServiceConfig = z.infer<typeof configSchema> & {
  contentInfoCacheTtlSeconds?: number
  logLevel?: 'debug' | 'info' | 'warn' | 'error'
}

/** Every option name a release knows (top level). */
function knownKeys(release: RecordingRelease): string[] {
  return [...Object.keys(configSchema.shape), ...optionsUpTo(release)]
}

/** Added options known to `release`: those added by it and by every release listed before it. */
function optionsUpTo(release: RecordingRelease): (keyof typeof addedOptions)[] {
  const index = RECORDING_RELEASES.findIndex((candidate) => candidate.version === release.version)
  const releases = index < 0 ? [release] : RECORDING_RELEASES.slice(0, index + 1)
  return releases
    .flatMap((candidate) => candidate.configOptionsAdded)
    .filter((option): option is keyof typeof addedOptions => option in addedOptions)
}

export interface ParsedConfig {
  config: RecordingServiceConfig
  /** Keys present in the file that this release does not know (ignored, logged as warnings). */
  unknownKeys: string[]
}

/** Error in the configuration file: one sentence naming the field and the expectation. */
export class ConfigFileError extends Error {}

/** Parses the text of a config file for `release`. Throws ConfigFileError on bad syntax or a bad field. */
export function parseServiceConfig(text: string, file: string, release: RecordingRelease): ParsedConfig {
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch {
    // Our own sentence and position: V8's message changes wording between Node versions.
    throw new ConfigFileError(`configuration file ${file} is not valid JSON: ${describeJsonSyntaxError(text)}`)
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new ConfigFileError(`configuration file ${file} must hold a JSON object`)
  const known = knownKeys(release)
  const unknownKeys = Object.keys(raw).filter((key) => !known.includes(key))
  const schema = z.extend(configSchema, Object.fromEntries(optionsUpTo(release).map((key) => [key, addedOptions[key]])))
  const result = schema.safeParse(raw)
  if (!result.success) {
    const issue = result.error.issues[0]
    const where = issue?.path.length ? issue.path.map(String).join('.') : '(file)'
    throw new ConfigFileError(`configuration file ${file}: ${where}: ${issue?.message ?? 'invalid'}`)
  }
  // The extension's keys depend on the release, so zod cannot type them; the shape is RecordingServiceConfig.
  const config = result.data as unknown as RecordingServiceConfig
  const names = config.storage.locations.map((location) => location.name)
  if (config.storage.defaultLocation !== undefined && !names.includes(config.storage.defaultLocation)) {
    throw new ConfigFileError(
      `configuration file ${file}: storage.defaultLocation: "${config.storage.defaultLocation}" is not one of the storage location names (${names.join(', ')})`,
    )
  }
  return { config, unknownKeys }
}

/** Resolves an absolute path of the config under the host's root; relative paths are relative to `base`. */
export function resolveUnderRoot(root: string, path: string, base = '/'): string {
  const absolute = isAbsolute(path) ? path : join(base, path)
  return resolve(join(root, absolute))
}

/** The default config file a release ships as its conffile. The lab rewrites database and auth at host setup. */
export function defaultServiceConfig(release: RecordingRelease, product: { dir: string }): Record<string, unknown> {
  const config: Record<string, unknown> = {
    listen: { host: '127.0.0.1', port: 8090 },
    database: {
      host: '127.0.0.1',
      port: 5432,
      name: 'recording',
      user: 'recording',
      passwordFile: `/etc/opt/${product.dir}/recording.dbpass`,
    },
    auth: {
      jwksUrl: 'http://127.0.0.1:8080/.well-known/jwks.json',
      issuer: 'http://127.0.0.1:8080',
      readScope: 'urn:svc:recorder:content:read',
      writeScope: 'urn:svc:recorder:content:write',
    },
    storage: { path: `/var/opt/${product.dir}/recordings`, locations: [{ name: 'main', path: 'main' }], defaultLocation: 'main' },
    mediaApi: { baseUrl: 'http://127.0.0.1:8091/media', timeoutMs: 5000 },
    contentInfoCacheSize: 1000,
    writeRateLimit: 0,
  }
  for (const option of optionsUpTo(release)) config[option] = addedOptions[option].parse(undefined)
  return config
}
