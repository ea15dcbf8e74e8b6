/**
 * Files of the live production system on its host, read and written through the host's transport:
 * the settings file and the components' environment files. Contents (which hold the PSK) travel on
 * stdin and stdout, never in a command's arguments; every file is written whole (a new temporary
 * file, created exclusively under a random name, renamed over it) with mode 0600. Environment files are edited line by line: every line svcops
 * does not change stays byte for byte.
 */
import { OperationError } from '../../core/errors.ts'
import { registerSecret } from '../../core/redact.ts'
import { runCommand, type Transport } from '../../core/runner.ts'
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

/** The file's text, or undefined when it does not exist. */
export async function readHostFile(host: LiveHost, path: string): Promise<string | undefined> {
  const file = hostPath(host.config, path)
  const result = await runCommand(
    host.transport,
    ['sh', '-c', 'if [ -e "$1" ]; then head -c "$2" -- "$1"; else exit 3; fi', 'sh', file, String(MAX_FILE_BYTES + 1)],
    { check: false },
  )
  if (result.code === 3) return undefined
  if (result.code !== 0)
    throw new OperationError(`Reading ${file} on ${host.name} failed: ${result.stderr.trim() || `exit ${result.code}`}.`)
  if (result.stdout.length > MAX_FILE_BYTES) throw new OperationError(`${file} on ${host.name} is larger than ${MAX_FILE_BYTES} bytes.`)
  return result.stdout
}

/**
 * The host side of `writeHostFile`: stdin into a new file under a random name beside `$1`, created
 * by dd with O_CREAT|O_EXCL|O_NOFOLLOW (`conv=excl oflag=nofollow`) and mode 0600 from the umask,
 * then renamed over `$1` (`mv -T`: a directory or a link at `$1` is replaced or refused, never
 * written into). A link planted at any name in the directory — the old fixed `.svcops-new`, or a
 * guess of the random one — is never followed; on any failure the temporary file is removed.
 */
const WRITE_FILE = [
  'umask 077',
  'mkdir -p -- "$(dirname -- "$1")" || exit 1',
  'tmp=$(mktemp -u -- "$1.svcops-XXXXXXXXXXXX") || exit 1',
  'dd of="$tmp" conv=excl,fsync oflag=nofollow status=none && mv -f -T -- "$tmp" "$1" && exit 0',
  'rc=$?; rm -f -- "$tmp"; exit $rc',
].join('\n')

/** Writes `text` to the file (0600, its directory created), replacing it in one rename (WRITE_FILE). */
export async function writeHostFile(host: LiveHost, path: string, text: string): Promise<void> {
  const file = hostPath(host.config, path)
  await runCommand(host.transport, ['sh', '-c', WRITE_FILE, 'sh', file], { input: text, display: `write ${file} (0600)` })
}

/** Removes the file (nothing when it does not exist). */
export async function removeHostFile(host: LiveHost, path: string): Promise<void> {
  await runCommand(host.transport, ['rm', '-f', '--', hostPath(host.config, path)])
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
