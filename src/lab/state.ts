/**
 * The lab's state file: every thing `svcops lab up` started (pids, ports, temp dirs, how to stop it),
 * written after each start so that `lab down` — in another process, or after a crash — can stop
 * exactly what was started. Never holds a secret: passwords live in 0600 files under `secrets/`.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { z } from 'zod'
import { defaultStacksDir } from '../config/load.ts'
import { BadInputError, errorMessage } from '../core/errors.ts'
import { registerSecret } from '../core/redact.ts'

/** Where the lab keeps its files. */
export interface LabPaths {
  /** `$SVCOPS_LAB_DIR`, else `.svcops/lab` in the working directory. */
  dir: string
  stateFile: string
  /** 0700 directory of 0600 secret files (passwords of lab users and servers). */
  secretsDir: string
  logsDir: string
  /** The environment file `--env lab` reads. */
  envFile: string
}

/** The lab's paths; `dir` and `stacksDir` override the environment variables. */
export function labPaths(options: { dir?: string; stacksDir?: string } = {}): LabPaths {
  const dir = resolve(options.dir ?? process.env.SVCOPS_LAB_DIR ?? '.svcops/lab')
  return {
    dir,
    stateFile: join(dir, 'state.json'),
    secretsDir: join(dir, 'secrets'),
    logsDir: join(dir, 'logs'),
    envFile: join(options.stacksDir ?? defaultStacksDir(), 'Pulumi.lab.yaml'),
  }
}

export const labEntrySchema = z.object({
  /** Selects how `lab down` stops it (see `stoppers` in lab.ts). */
  kind: z.string(),
  name: z.string(),
  /** Everything the stopper needs, serialisable, never a secret. */
  info: z.record(z.string(), z.unknown()),
  pid: z.number().int().optional(),
  port: z.number().int().optional(),
  url: z.string().optional(),
  log: z.string().optional(),
  /** Temp dirs and files it owns; removed at lab down. */
  paths: z.array(z.string()).default([]),
  /** How it is stopped, in words, for people reading the file. */
  stop: z.string(),
})
export type LabEntry = z.infer<typeof labEntrySchema>

export const labStateSchema = z.object({
  version: z.literal(1),
  startedAt: z.string(),
  /** Options `lab up` ran with (revision, hosts, ...). */
  options: z.record(z.string(), z.unknown()).default({}),
  /** True once every step of `lab up` finished. */
  complete: z.boolean(),
  envFile: z.string().optional(),
  entries: z.array(labEntrySchema),
})
export type LabState = z.infer<typeof labStateSchema>

/** Reads the state file, or undefined when the lab is not up. */
export function readLabState(paths: LabPaths): LabState | undefined {
  if (!existsSync(paths.stateFile)) return undefined
  let doc: unknown
  try {
    doc = JSON.parse(readFileSync(paths.stateFile, 'utf8'))
  } catch (error) {
    throw new BadInputError(
      `${paths.stateFile}: is not valid JSON (${errorMessage(error)}).`,
      `Stop what it lists by hand, then delete it.`,
    )
  }
  const parsed = labStateSchema.safeParse(doc)
  if (!parsed.success)
    throw new BadInputError(
      `${paths.stateFile}: does not have the shape of a lab state file (${parsed.error.issues[0]?.path.join('.') ?? ''}).`,
    )
  return parsed.data
}

/** Writes the state atomically (a crash leaves the old or the new file, never half of one). */
export function writeLabState(paths: LabPaths, state: LabState): void {
  mkdirSync(paths.dir, { recursive: true })
  const tmp = `${paths.stateFile}.tmp`
  writeFileSync(tmp, JSON.stringify(state, null, 2) + '\n', { mode: 0o600 })
  renameSync(tmp, paths.stateFile)
}

/** Writes a secret to a 0600 file under the lab's secrets dir (registering it first); returns the path. */
export function writeLabSecret(paths: LabPaths, name: string, value: string): string {
  registerSecret(value)
  mkdirSync(paths.secretsDir, { recursive: true, mode: 0o700 })
  const file = join(paths.secretsDir, name)
  rmSync(file, { force: true })
  writeFileSync(file, value + '\n', { mode: 0o600 })
  return file
}

/**
 * What a start function of `lab up` is given (LabRun in lab.ts): the state it records into, the step
 * runner and the secret writer. An interface here, so the start functions in other modules need no import of lab.ts.
 */
export interface LabSteps {
  readonly paths: LabPaths
  readonly state: LabState
  /** Runs one named start function as an event step. */
  step<T>(name: string, fn: () => Promise<T> | T): Promise<T>
  /** Adds a started thing to the state file, at once. */
  record(entry: LabEntry): void
  /** Writes a secret to a 0600 file under the lab dir; returns its path. */
  secret(name: string, value: string): string
}
