/**
 * What every lab package builder shares: a `.deb` made from a file tree with `dpkg-deb --build`
 * (reproducible, written whole), and a build cache whose stamp holds a hash of everything the
 * packages depend on, so an unchanged set is not built again.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
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
 * One stamp per set of packages, so a partial build never passes for a full one.
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
  const fresh = existsSync(stamp) && readFileSync(stamp, 'utf8') === key && files.every((file) => existsSync(file))
  if (fresh) return
  await build()
  const temporary = `${stamp}.${process.pid}-${randomBytes(4).toString('hex')}`
  writeFileSync(temporary, key)
  renameSync(temporary, stamp)
}
