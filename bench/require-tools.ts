/**
 * What a benchmark needs from the machine, checked before it starts anything: every program it (or
 * the lab it starts) runs, with the Debian package that installs it. A missing one ends the
 * benchmark at once with one sentence naming the programs and the install command, exit 2 — not
 * with a TypeError half-way through, after a lab was started.
 */
import { accessSync, constants, existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { findBinary } from '../src/core/runner.ts'

/** A program and the Debian package that installs it. */
export interface Tool {
  /** Name looked up on PATH (and the sbin folders), or an absolute path. */
  binary: string
  aptPackage: string
  /** Further folders to look in (PostgreSQL's server programs are not on PATH). */
  dirs?: string[]
}

/** Folders of the installed PostgreSQL server versions (Debian keeps initdb and pg_ctl there). */
function postgresServerDirs(): string[] {
  const base = '/usr/lib/postgresql'
  return existsSync(base) ? readdirSync(base).map((v) => join(base, v, 'bin')) : []
}

/** The programs the benchmarks use, by what they are for. */
export const TOOLS = {
  ansible: [{ binary: 'ansible-playbook', aptPackage: 'ansible' }],
  gpg: [
    { binary: 'gpg', aptPackage: 'gnupg' },
    { binary: 'gpgconf', aptPackage: 'gnupg' },
  ],
  time: [{ binary: '/usr/bin/time', aptPackage: 'time' }],
  ripgrep: [{ binary: 'rg', aptPackage: 'ripgrep' }],
  postgresClient: [
    { binary: 'pg_dump', aptPackage: 'postgresql-client' },
    { binary: 'pg_restore', aptPackage: 'postgresql-client' },
    { binary: 'psql', aptPackage: 'postgresql-client' },
  ],
  postgresServer: [
    { binary: 'initdb', aptPackage: 'postgresql', dirs: postgresServerDirs() },
    { binary: 'pg_ctl', aptPackage: 'postgresql', dirs: postgresServerDirs() },
  ],
  sshServer: [
    { binary: 'sshd', aptPackage: 'openssh-server' },
    { binary: 'ssh-keygen', aptPackage: 'openssh-client' },
  ],
  sshClient: [{ binary: 'ssh', aptPackage: 'openssh-client' }],
  /** A lab host: sandboxed dpkg, its supervisord (driven over its socket with curl). */
  labHost: [
    { binary: 'dpkg', aptPackage: 'dpkg' },
    { binary: 'dpkg-deb', aptPackage: 'dpkg' },
    { binary: 'supervisord', aptPackage: 'supervisor' },
    { binary: 'supervisorctl', aptPackage: 'supervisor' },
    { binary: 'curl', aptPackage: 'curl' },
  ],
} satisfies Record<string, Tool[]>

/** The tools of `tools` that cannot be found. */
export function findMissingTools(tools: Tool[]): Tool[] {
  const unique = [...new Map(tools.map((t) => [t.binary, t])).values()]
  return unique.filter((tool) => !isInstalled(tool))
}

function isInstalled(tool: Tool): boolean {
  if (!tool.binary.startsWith('/')) return findBinary(tool.binary, tool.dirs) !== undefined
  try {
    accessSync(tool.binary, constants.X_OK)
    return true
  } catch {
    // Not there or not executable: missing either way.
    return false
  }
}

/** The one sentence for missing tools: which, and the command that installs them. */
export function missingToolsMessage(bench: string, missing: Tool[]): string {
  const names = missing.map((t) => t.binary)
  const list = names.length === 1 ? names[0] : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`
  const packages = [...new Set(missing.map((t) => t.aptPackage))]
  return `${bench} needs ${list}, which ${names.length === 1 ? 'is' : 'are'} not installed: sudo apt-get install -y ${packages.join(' ')}`
}

/** Exits (code 2) with one sentence when any of `tools` is missing; call it before anything starts. */
export function requireTools(bench: string, ...groups: Tool[][]): void {
  const missing = findMissingTools(groups.flat())
  if (missing.length === 0) return
  process.stderr.write(`${missingToolsMessage(bench, missing)}\n`)
  process.exit(2)
}
