/**
 * Where the project's own files are: everything resolves from the project root found here (the
 * folder holding package.json), not from each module's own URL, so a module can move between
 * folders without its paths changing.
 */
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

function findProjectRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir
    if (dirname(dir) === dir) throw new Error(`No package.json above ${from}: svcops is not installed as a project folder.`)
  }
}

/** The folder holding package.json, src/ and bin/. */
export const PROJECT_ROOT = findProjectRoot(dirname(fileURLToPath(import.meta.url)))

/** An absolute path inside the project, from path segments relative to its root. */
export function projectPath(...segments: string[]): string {
  return join(PROJECT_ROOT, ...segments)
}

/**
 * The argv that starts the svcops CLI as users run it, on this process's Node: the executable's
 * own flags are read from its `#!/usr/bin/env -S node ...` line, so they are written once.
 */
export function svcopsCommand(): string[] {
  const bin = projectPath('bin/svcops')
  const shebang = readFileSync(bin, 'utf8').split('\n', 1)[0] ?? ''
  const flags = shebang.split(/\s+/).filter((word) => word.startsWith('--'))
  return [process.execPath, ...flags, bin]
}
