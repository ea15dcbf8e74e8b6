/**
 * Files of the live production system on its host, read and written through the host's transport:
 * the settings file and the components' environment files. Contents (which hold the PSK) travel on
 * stdin and stdout, never in a command's arguments; every file is written whole with mode 0600 (a
 * new file beside it, renamed over it). Environment files are edited line by line: every line svcops
 * does not change stays byte for byte.
 *
 * Every command is a fixed argv per path, no shell: on a host that becomes root through sudo
 * (`ssh.become: sudo`) each one that touches the system's files runs as `sudo -n -- argv`, and
 * `svcops render sudoers` prints a rule naming exactly it (live-sudo.ts). svcops' own folder on the
 * host (`/var/lib/svcops`: the run lock, the runs and their copies of the files) belongs to the SSH
 * user, so nothing there runs as root.
 */
import { dirname } from 'node:path'
import { OperationError } from '../../core/errors.ts'
import { registerSecret } from '../../core/redact.ts'
import { runCommand, type Transport } from '../../core/runner.ts'
import type { PlannedCommand } from '../../drivers/packages.ts'
import { hostPath } from '../../drivers/transports.ts'
import { parseEnvFile } from '../../releases/env.ts'

/** The host of the live system: its name, sandbox root and transport. */
export interface LiveHost {
  name: string
  config: { name: string; root?: string | undefined }
  transport: Transport
}

/** Files larger than this are not settings or environment files. */
const MAX_FILE_BYTES = 1 << 20

/** svcops' own folder on a live host: the SSH user's, as the host lock's folder is on a recording host. */
export const SVCOPS_HOST_DIR = '/var/lib/svcops'

/** The new file a write fills before renaming it over `file`: a fixed name, so a sudo rule can name it (one run per system holds the lock). */
export function newFileOf(file: string): string {
  return `${file}.svcops-new`
}

/**
 * The fixed commands that read, write and remove the file at `path` of a host (under its sandbox
 * root, if any), each marked `asRoot` unless the file is in svcops' own folder. A write: `mkdir -p` its folder; `install -m 0600
 * -T /dev/null` makes the new file empty and 0600 whatever the umask (a link planted at its name is
 * replaced, never followed); `dd conv=notrunc oflag=nofollow` fills it from stdin and refuses a link
 * put there since; `mv -f -T` renames it over the file (a directory or a link at the file's name is
 * replaced or refused, never written into); on a failure `rm -f` removes the new file.
 */
export function fileCommands(
  config: LiveHost['config'],
  path: string,
): Record<'read' | 'mkdir' | 'create' | 'fill' | 'rename' | 'clear' | 'remove', PlannedCommand> {
  const asRoot = !path.startsWith(`${SVCOPS_HOST_DIR}/`)
  const file = hostPath(config, path)
  const next = newFileOf(file)
  const cmd = (argv: string[], mutates: boolean): PlannedCommand => ({ argv, mutates, ...(asRoot ? { asRoot: true } : {}) })
  return {
    read: cmd(['head', '-c', String(MAX_FILE_BYTES + 1), '--', file], false),
    mkdir: cmd(['mkdir', '-p', '--', dirname(file)], true),
    create: cmd(['install', '-m', '0600', '-T', '/dev/null', next], true),
    fill: cmd(['dd', `of=${next}`, 'conv=notrunc,fsync', 'oflag=nofollow', 'status=none'], true),
    rename: cmd(['mv', '-f', '-T', '--', next, file], true),
    clear: cmd(['rm', '-f', '--', next], true),
    remove: cmd(['rm', '-f', '--', file], true),
  }
}

/** Runs one of `fileCommands`' commands on the host (as root through its become when marked so). */
function run(host: LiveHost, cmd: PlannedCommand, options: { input?: string; check?: boolean; display?: string } = {}) {
  return runCommand(host.transport, cmd.argv, { ...options, ...(cmd.asRoot ? { asRoot: true } : {}) })
}

/** The file's text, or undefined when it does not exist. */
export async function readHostFile(host: LiveHost, path: string): Promise<string | undefined> {
  const file = hostPath(host.config, path)
  const result = await run(host, fileCommands(host.config, path).read, { check: false })
  if (result.code !== 0) {
    // Whether it exists, asked as the SSH user (the folders are searchable), without reading a message in the host's language.
    const exists = await runCommand(host.transport, ['test', '-e', file], { check: false })
    if (exists.code !== 0) return undefined
    throw new OperationError(`Reading ${file} on ${host.name} failed: ${result.stderr.trim() || `exit ${result.code}`}.`)
  }
  if (result.stdout.length > MAX_FILE_BYTES) throw new OperationError(`${file} on ${host.name} is larger than ${MAX_FILE_BYTES} bytes.`)
  return result.stdout
}

/** Writes `text` to the file (0600, its directory created), replacing it in one rename (fileCommands). */
export async function writeHostFile(host: LiveHost, path: string, text: string): Promise<void> {
  const file = hostPath(host.config, path)
  const c = fileCommands(host.config, path)
  await run(host, c.mkdir)
  await run(host, c.create)
  try {
    await run(host, c.fill, { input: text, display: `write ${file} (0600)` })
    await run(host, c.rename)
  } catch (error) {
    await run(host, c.clear, { check: false }).catch(() => undefined)
    throw error
  }
}

/** Removes the file (nothing when it does not exist). */
export async function removeHostFile(host: LiveHost, path: string): Promise<void> {
  await run(host, fileCommands(host.config, path).remove)
}

/** The value of `key` in an environment file's text (its last assignment), if set. */
export function envValue(text: string | undefined, key: string): string | undefined {
  return parseEnvFile(text ?? '')
    .filter((l) => l.key === key)
    .at(-1)?.value
}

/** Every assignment of an environment file whose key matches `isSecret` is registered for redaction. */
export function registerEnvSecrets(text: string | undefined, isSecret: (key: string) => boolean): void {
  for (const l of parseEnvFile(text ?? '')) if (l.key && l.value && isSecret(l.key)) registerSecret(l.value)
}

/** The text with `key` set to `value`: its last assignment replaced, or a line appended. */
export function setEnvValue(text: string, key: string, value: string): string {
  const lines = parseEnvFile(text)
  const last = lines.filter((l) => l.key === key).at(-1)
  const rows = text.split('\n')
  if (last) {
    rows[last.line - 1] = `${key}=${value}`
    return rows.join('\n')
  }
  const body = text === '' || text.endsWith('\n') ? text : `${text}\n`
  return `${body}${key}=${value}\n`
}

/** The text without any assignment of `key`. */
export function removeEnvKey(text: string, key: string): string {
  const drop = new Set(parseEnvFile(text).flatMap((l) => (l.key === key ? [l.line] : [])))
  return text
    .split('\n')
    .filter((_, i) => !drop.has(i + 1))
    .join('\n')
}

/**
 * A unified diff of two versions of a file (`---`/`+++` headers, every line kept, changed lines
 * marked), with the secrets registered for redaction masked by the caller's `mask`.
 */
export function fileDiff(path: string, before: string | undefined, after: string | undefined, mask: (s: string) => string): string[] {
  const a = before === undefined ? [] : before.replace(/\n$/, '').split('\n')
  const b = after === undefined ? [] : after.replace(/\n$/, '').split('\n')
  const out = [`--- ${before === undefined ? '/dev/null' : path}`, `+++ ${after === undefined ? '/dev/null' : path}`]
  // Small files: a longest-common-subsequence table is cheap and gives the diff people expect.
  const n = a.length
  const m = b.length
  const lcs = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0))
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--) lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!)
  let i = 0
  let j = 0
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) {
      out.push(` ${mask(a[i] ?? '')}`)
      i++
      j++
    } else if (i < n && (j >= m || lcs[i + 1]![j]! >= lcs[i]![j + 1]!)) {
      out.push(`-${mask(a[i] ?? '')}`)
      i++
    } else {
      out.push(`+${mask(b[j] ?? '')}`)
      j++
    }
  }
  return out
}
