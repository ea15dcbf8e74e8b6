/**
 * Host keys trusted on first use (`ssh.trustOnFirstUse`): the key a host showed the first time is
 * recorded in the state dir (`$SVCOPS_STATE_DIR`, else `.svcops`, file `known_hosts.json`, 0600),
 * and any other key afterwards is refused — OpenSSH's `StrictHostKeyChecking=accept-new`.
 */
import { mkdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { z } from 'zod'
import { writeFileAtomic } from '../core/atomic-write.ts'
import { BadInputError } from '../core/errors.ts'

const MAX_BYTES = 1 << 20
const fileSchema = z.record(z.string(), z.string().regex(/^SHA256:[A-Za-z0-9+/]{43}$/))

/** The file host keys trusted on first use are recorded in. */
export function knownHostsFile(): string {
  return resolve(process.env.SVCOPS_STATE_DIR ?? '.svcops', 'known_hosts.json')
}

function readAll(file: string): Record<string, string> {
  let text: string
  try {
    if (statSync(file).size > MAX_BYTES)
      throw new BadInputError(`${file}: is larger than ${MAX_BYTES} bytes; expected a small map of host keys.`)
    text = readFileSync(file, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {}
    throw error
  }
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch {
    throw new BadInputError(`${file}: is not valid JSON; expected a map of "host:port" to SHA256 host key fingerprints.`)
  }
  const parsed = fileSchema.safeParse(raw)
  if (!parsed.success)
    throw new BadInputError(`${file}: ${parsed.error.issues[0]?.path.join('.') ?? ''}: expected a SHA256 host key fingerprint.`)
  return parsed.data
}

/** The key recorded for `host:port`, if any. */
export function recordedHostKey(host: string, port: number, file = knownHostsFile()): string | undefined {
  return readAll(file)[`${host}:${port}`]
}

/** Records the key of `host:port` (0600, created exclusively under a random name and renamed: `writeFileAtomic`). */
export function recordHostKey(host: string, port: number, fingerprint: string, file = knownHostsFile()): void {
  const all = { ...readAll(file), [`${host}:${port}`]: fingerprint }
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 })
  writeFileAtomic(file, JSON.stringify(all, null, 2) + '\n', { mode: 0o600, sync: true })
}
