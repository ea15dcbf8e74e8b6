/**
 * A stack file's `config:` map as the Pulumi CLI hands it to a program. Apart from the mock runtime
 * (./preview.ts), so that what only reads a stack file does not load the Pulumi SDK.
 */
import { readFileSync } from 'node:fs'
import { parse as parseYaml } from 'yaml'
import { BadInputError } from '../core/errors.ts'

/** The `config:` map of a stack file as Pulumi hands it to a program, plus the secure keys in it. */
export function readStackConfig(stackFile: string): { config: Record<string, string>; secure: string[] } {
  let doc: unknown
  try {
    doc = parseYaml(readFileSync(stackFile, 'utf8'))
  } catch (error) {
    throw new BadInputError(`${stackFile}: cannot be read as YAML: ${(error as Error).message.split('\n')[0]}`)
  }
  const map = (doc as { config?: unknown } | null)?.config
  if (!map || typeof map !== 'object')
    throw new BadInputError(`${stackFile}: config: missing; expected a Pulumi stack file with a 'config:' map.`)
  const config: Record<string, string> = {}
  const secure: string[] = []
  for (const [key, value] of Object.entries(map as Record<string, unknown>)) {
    if (value && typeof value === 'object' && 'secure' in value) secure.push(key)
    else config[key] = typeof value === 'string' ? value : JSON.stringify(value)
  }
  return { config, secure }
}
