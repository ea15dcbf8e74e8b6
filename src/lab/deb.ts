/**
 * What every lab package builder shares: a `.deb` made from a file tree with `dpkg-deb --build`
 * (reproducible, written whole), and a build cache whose stamp holds a hash of everything the
 * packages depend on, so an unchanged set is not built again. Labs starting at once in other
 * processes (parallel test files) share one cache: one builds under a lock, the others wait and use it.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { OperationError } from '../core/errors.ts'
import { isAlive } from '../core/process.ts'
import { local, requireBinary, runCommand } from '../core/runner.ts'

/** Builds `tree` into `outFile` (root-owned files, gzip, a fixed timestamp); parallel builders of the same file each write it whole. */
export async function buildDeb(tree: string, outFile: string): Promise<void> {
  const temporary = `${outFile}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`
  await runCommand(local, ['dpkg-deb', '--root-owner-group', '-Zgzip', '--build', tree, temporary], {
    env: { SOURCE_DATE_EPOCH: '1700000000' },
  })
  renameSync(temporary, outFile)
}

/**
 * Runs `build` unless `stamp` holds `key` and every file of `files` exists; then writes the stamp.
 * One stamp per set of packages, so a partial build never passes for a full one. The check and the
 * build hold `<stamp>.lock` (a directory with the holder's pid), so builders in other processes
 * wait for one build instead of building the same set at once; a lock whose holder died is taken over.
 */
export async function buildUnlessCached(
  outDir: string,
  stamp: string,
  key: string,
  files: string[],
  build: () => Promise<void>,
): Promise<void> {
  requireBinary('dpkg-deb', 'dpkg')
  mkdirSync(outDir, { recursive: true })
  const fresh = (): boolean => existsSync(stamp) && readFileSync(stamp, 'utf8') === key && files.every((file) => existsSync(file))
  if (fresh()) return
  const release = await lockBuild(`${stamp}.lock`)
  try {
    if (fresh()) return
    await build()
    const temporary = `${stamp}.${process.pid}-${randomBytes(4).toString('hex')}`
    writeFileSync(temporary, key)
    renameSync(temporary, stamp)
  } finally {
    release()
  }
}

/** Builds of one stamp in this process, one after the other (the lock directory is per process). */
const held = new Map<string, Promise<void>>()

/** Takes the build lock `dir` (waiting for another process or caller holding it); returns its release. */
async function lockBuild(dir: string, timeoutMs = 600_000): Promise<() => void> {
  while (held.has(dir)) await held.get(dir)
  let done = (): void => undefined
  held.set(dir, new Promise<void>((resolve) => (done = resolve)))
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      mkdirSync(dir)
      writeFileSync(join(dir, 'pid'), `${process.pid}\n`)
      break
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
        held.delete(dir)
        done()
        throw error
      }
    }
    const holder = Number((existsSync(join(dir, 'pid')) ? readFileSync(join(dir, 'pid'), 'utf8') : '').trim())
    // A holder that died (SIGKILL, a crashed worker) left its lock: take it over. No pid yet: it is
    // being taken, unless that was long ago (killed between the two calls).
    if (holder > 0 ? !isAlive(holder) : ageMs(dir) > 30_000) rmSync(dir, { recursive: true, force: true })
    if (Date.now() > deadline) {
      held.delete(dir)
      done()
      throw new OperationError(`The package build lock ${dir} is still held by process ${holder || '?'}; remove it if no lab is starting.`)
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  return () => {
    rmSync(dir, { recursive: true, force: true })
    held.delete(dir)
    done()
  }
}

function ageMs(path: string): number {
  try {
    return Date.now() - statSync(path).mtimeMs
  } catch {
    return 0
  }
}
