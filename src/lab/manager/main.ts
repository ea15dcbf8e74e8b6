/**
 * The manager emulator as a process: `node src/lab/manager/main.ts --config FILE`.
 * `svcops lab up` starts it detached; the config file (JSON, 0600) holds the port, the API revision
 * and the users with password hashes only. Stops cleanly on SIGTERM/SIGINT.
 */
import { readFileSync } from 'node:fs'
import { z } from 'zod'
import { AUTH_REVISIONS } from '../../releases/auth.ts'
import { startManagerEmulator } from './server.ts'
import { errorMessage } from '../../core/errors.ts'

export const emulatorConfigSchema = z.strictObject({
  host: z.string().default('127.0.0.1'),
  port: z.number().int().min(0).max(65535),
  apiRevision: z.enum(AUTH_REVISIONS).default('1.6.2'),
  tokenLifetimeSeconds: z.number().int().positive().optional(),
  sessionLifetimeSeconds: z.number().int().positive().optional(),
  /** SHA-256 (hex) of the lab's admin token, which `POST /lab/fault` requires; the token itself is a 0600 secret file. */
  adminTokenSha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
  users: z.array(z.strictObject({ email: z.string(), passwordHash: z.string(), permissions: z.array(z.string()) })),
})
export type EmulatorConfig = z.infer<typeof emulatorConfigSchema>

function log(line: string): void {
  process.stdout.write(`${new Date().toISOString()} ${line}\n`)
}

async function run(argv: string[]): Promise<void> {
  const at = argv.indexOf('--config')
  const file = at >= 0 ? argv[at + 1] : undefined
  if (!file) throw new Error('usage: main.ts --config FILE')
  const config = emulatorConfigSchema.parse(JSON.parse(readFileSync(file, 'utf8')))
  const emulator = await startManagerEmulator({ ...config, log })
  log(`manager emulator listening on ${emulator.url} (API revision ${emulator.apiRevision}, ${config.users.length} users)`)
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      log(`${signal}: stopping`)
      emulator.close().then(
        () => process.exit(0),
        () => process.exit(1),
      )
    })
  }
}

run(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`manager emulator failed to start: ${errorMessage(error)}\n`)
  process.exit(1)
})
