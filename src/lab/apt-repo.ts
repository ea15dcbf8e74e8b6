/**
 * The lab's apt repository for its systemd hosts: the lab's `.deb` files in a flat repository
 * (`apt-ftparchive packages` and `release`), its `Release` signed by a key made for this lab
 * (`InRelease` and `Release.gpg`, as Debian's archives are), the public key as a keyring the hosts
 * name with `signed-by=`, served over HTTP on loopback by Python's `http.server` (a detached process,
 * stopped by `lab down` like the lab's other processes). A host trusts only that key for only that source.
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { tmpdir } from 'node:os'
import { OperationError } from '../core/errors.ts'
import { local, requireBinary, runCommand } from '../core/runner.ts'
import { processStartTicks } from '../core/process.ts'
import { readTail, spawnDetached, stopProcess } from './lab-processes.ts'
import { freePort } from './ports.ts'
import type { LabEntry } from './state.ts'

/** A built repository: its folder and the keyring (binary OpenPGP public key) hosts name with `signed-by=`. */
export interface AptRepo {
  dir: string
  keyring: string
}

/** The repository's served folder inside `dir` (the keyring and the signing key stay beside it, not served). */
function servedDir(dir: string): string {
  return join(dir, 'repo')
}

/**
 * Builds a flat repository of `debs` in `dir`: Packages, Release, InRelease and Release.gpg, signed
 * with a fresh ed25519 key whose private half lives in a throwaway GnuPG home removed at once.
 */
export async function buildAptRepo(dir: string, debs: string[]): Promise<AptRepo> {
  const ftparchive = requireBinary('apt-ftparchive', 'apt-utils')
  const gpg = requireBinary('gpg', 'gnupg')
  const repo = servedDir(dir)
  mkdirSync(repo, { recursive: true })
  for (const deb of debs) copyFileSync(deb, join(repo, basename(deb)))
  const packages = await runCommand(local, [ftparchive, 'packages', '.'], { cwd: repo })
  writeFileSync(join(repo, 'Packages'), packages.stdout)
  const release = await runCommand(local, [ftparchive, '-o', 'APT::FTPArchive::Release::Origin=svcops-lab', 'release', '.'], {
    cwd: repo,
  })
  writeFileSync(join(repo, 'Release'), release.stdout)
  // The key is made per lab and its private half thrown away once the Release is signed.
  const home = mkdtempSync(join(tmpdir(), 'svcops-apt-gpg-'))
  try {
    const g = (args: string[]) =>
      runCommand(local, [gpg, '--batch', '--homedir', home, '--pinentry-mode', 'loopback', '--passphrase', '', ...args])
    await g(['--quick-gen-key', 'svcops lab apt repository <lab@localhost>', 'ed25519', 'sign', 'never'])
    await g(['--clearsign', '--output', join(repo, 'InRelease'), join(repo, 'Release')])
    await g(['--detach-sign', '--output', join(repo, 'Release.gpg'), join(repo, 'Release')])
    const keyring = join(dir, 'svcops-lab-archive.gpg')
    await g(['--output', keyring, '--export'])
    return { dir: repo, keyring }
  } finally {
    rmSync(home, { recursive: true, force: true })
  }
}

/** The repository served on a free loopback port, recorded in the lab state by `record` before it is waited for. */
export async function serveAptRepo(
  repo: AptRepo,
  log: string,
  record: (entry: LabEntry) => void,
): Promise<{ url: string; entry: LabEntry }> {
  const python = requireBinary('python3', 'python3')
  const port = await freePort()
  const pid = spawnDetached([python, '-m', 'http.server', '--bind', '127.0.0.1', '--directory', repo.dir, String(port)], log)
  const url = `http://127.0.0.1:${port}`
  const entry: LabEntry = {
    kind: 'process',
    name: 'apt repository',
    info: { startTicks: processStartTicks(pid) ?? '' },
    pid,
    port,
    url,
    log,
    paths: [],
    stop: `SIGTERM to pid ${pid}`,
  }
  record(entry)
  const deadline = Date.now() + 30_000
  while (Date.now() < deadline) {
    if (processStartTicks(pid) === undefined) break
    try {
      if ((await fetch(`${url}/InRelease`, { signal: AbortSignal.timeout(2000) })).ok) return { url, entry }
    } catch {
      // Not listening yet.
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  await stopProcess(entry)
  throw new OperationError(`The lab's apt repository did not answer on ${url}: ${readTail(log) || 'no output'} (log: ${log}).`)
}

/** The one-line sources entry a host uses: only this repository, trusted only with its own key. */
export function aptSourcesLine(url: string, keyringOnHost: string): string {
  return `deb [signed-by=${keyringOnHost}] ${url}/ ./\n`
}
