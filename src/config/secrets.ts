/**
 * Reads secrets given by reference. A value is registered with the redaction layer the moment it is
 * read, so it cannot reach any output afterwards. Files must be private (0600 or stricter).
 */
import { readFileSync, statSync } from 'node:fs'
import { BadInputError } from '../core/errors.ts'
import { registerSecret } from '../core/redact.ts'
import type { SecretRef } from './schema.ts'

/** Refuses a file that its group or others can read or write. */
export function assertPrivateFile(path: string, field: string): void {
  let mode: number
  try {
    mode = statSync(path).mode
  } catch {
    throw new BadInputError(`${field}: the file '${path}' does not exist or cannot be read.`)
  }
  if ((mode & 0o077) !== 0) {
    const octal = (mode & 0o777).toString(8).padStart(4, '0')
    throw new BadInputError(
      `${field}: the file '${path}' has mode ${octal}, readable by group or others; expected 0600.`,
      `Run: chmod 600 '${path}'`,
    )
  }
}

/** Resolves a secret reference to its value. `field` is the dot-path used in error messages. */
export function readSecret(ref: SecretRef, field: string): string {
  if ('env' in ref) {
    const value = process.env[ref.env]
    if (value === undefined || value === '') {
      throw new BadInputError(`${field}: the environment variable ${ref.env} is not set; expected it to hold the secret.`)
    }
    return registerSecret(value)
  }
  assertPrivateFile(ref.file, field)
  const value = readFileSync(ref.file, 'utf8').replace(/\r?\n$/, '')
  if (value === '') throw new BadInputError(`${field}: the file '${ref.file}' is empty; expected it to hold the secret.`)
  return registerSecret(value)
}
