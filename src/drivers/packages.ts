/**
 * Package drivers: how a pinned version of the recording service is found, staged on a host before
 * anything stops (so downtime never includes a download), installed with the current configuration
 * kept, and how the installed version is read. `dpkg` installs `.deb` files copied into the host's
 * package cache (lab hosts, air-gapped sites); `apt` and `dnf` pin `name=version` / `name-version`
 * from the host's repositories. Commands are argv arrays built here, so tests pin them exactly.
 */
import { createHash } from 'node:crypto'
import { createReadStream, existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import type { RecordingHostConfig } from '../config/schema.ts'
import { BadInputError, OperationError } from '../core/errors.ts'
import { dpkgArgv, dpkgQueryArgv, hostPath } from './transports.ts'
import { runCommand, shellJoin, type Transport } from '../core/runner.ts'

/** The host's package cache, where staged packages wait for the install step. */
export const PACKAGE_CACHE = '/var/cache/svcops/packages'

type Host = Pick<RecordingHostConfig, 'root' | 'name'> & { ssh?: { become?: 'sudo' | undefined } | undefined }

/** A planned or executed command on a host; `mutates` commands are skipped by --dry-run. */
export interface PlannedCommand {
  argv: string[]
  env?: Record<string, string>
  /** Written to the command's stdin; `shown` says what it is in plans and logs. */
  input?: { data: string; shown: string }
  mutates: boolean
  /** Needs root on a real host: run through the host's become (`ssh.become: sudo`), listed by `svcops render sudoers`. */
  asRoot?: boolean
}

/** A planned command as a person would type it (environment first), for dry runs and logs. */
export function showCommand(c: PlannedCommand): string {
  const env = c.env
    ? `${Object.entries(c.env)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')} `
    : ''
  return `${env}${shellJoin(c.argv)}${c.input ? ` <<< ${c.input.shown}` : ''}`
}

export interface PackageDriver {
  readonly name: 'dpkg' | 'apt' | 'dnf'
  /** Command printing the installed version (empty output or non-zero exit: not installed). */
  queryVersionCommand(host: Host, pkg: string): PlannedCommand
  /** Turns the query's stdout into a version. */
  parseVersion(stdout: string): string | undefined
  /** Commands that make `version` available on the host without installing it. */
  stageCommands(host: Host, pkg: string, version: string, file?: string): PlannedCommand[]
  /** Commands that install exactly `version` (up or down), keeping the host's modified conffiles. */
  installCommands(host: Host, pkg: string, version: string, file?: string): PlannedCommand[]
  /**
   * Read-only commands that each exit 0 when installing `version` can go ahead: the package at hand
   * (in the host's cache, or its repositories) and the right to change the package database. `missing`
   * says what a non-zero exit means, for the sentence a refusal prints.
   */
  readyCommands(host: Host, pkg: string, version: string, file?: string): (PlannedCommand & { missing: string })[]
  /** Suffixes of the new default configuration left beside a kept, modified config file. */
  readonly newConfigSuffixes: readonly string[]
}

const debianConf = ['.dpkg-dist', '.dpkg-new']

/** `.deb` files copied to the host's package cache and installed with dpkg. */
export const dpkgDriver: PackageDriver = {
  name: 'dpkg',
  queryVersionCommand: (host, pkg) => ({ argv: dpkgQueryArgv(host, ['-W', '-f=${db:Status-Status} ${Version}', pkg]), mutates: false }),
  parseVersion: parseDpkgStatus,
  stageCommands: (host, _pkg, _version, file) => [
    { argv: ['mkdir', '-p', hostPath(host, PACKAGE_CACHE)], mutates: true },
    { argv: ['upload', file ?? '(package file)', cachedPath(host, file ?? '')], mutates: true },
  ],
  installCommands: (host, _pkg, _version, file) => [
    { argv: dpkgArgv(host, ['--force-confdef', '--force-confold', '-i', cachedPath(host, file ?? '')]), mutates: true },
  ],
  readyCommands: (host, pkg, version, file) => [
    { argv: ['test', '-f', cachedPath(host, file ?? '')], mutates: false, missing: `${pkg} ${version} is not in the package cache` },
    ...mayWrite(host, '/var/lib/dpkg'),
  ],
  newConfigSuffixes: debianConf,
}

const aptEnv = { DEBIAN_FRONTEND: 'noninteractive' }
const aptKeepConfig = ['-o', 'Dpkg::Options::=--force-confdef', '-o', 'Dpkg::Options::=--force-confold']

/** Pinned `name=version` from the host's apt repositories. */
export const aptDriver: PackageDriver = {
  name: 'apt',
  queryVersionCommand: (host, pkg) => dpkgDriver.queryVersionCommand(host, pkg),
  parseVersion: parseDpkgStatus,
  stageCommands: (_host, pkg, version) => [
    { argv: ['apt-get', 'update'], env: aptEnv, mutates: true, asRoot: true },
    {
      argv: ['apt-get', 'install', '--download-only', '-y', '--allow-downgrades', '--', `${pkg}=${version}`],
      env: aptEnv,
      mutates: true,
      asRoot: true,
    },
  ],
  installCommands: (_host, pkg, version) => [
    {
      argv: ['apt-get', 'install', '-y', '--no-install-recommends', '--allow-downgrades', ...aptKeepConfig, '--', `${pkg}=${version}`],
      env: aptEnv,
      mutates: true,
      asRoot: true,
    },
  ],
  readyCommands: (host, pkg, version) => [
    {
      argv: ['apt-get', 'install', '--simulate', '--allow-downgrades', '--', `${pkg}=${version}`],
      env: aptEnv,
      mutates: false,
      missing: `${pkg} ${version} is not in the host's apt repositories`,
    },
    // Through sudo the right is a rule, which `sudo -n -l` checks for each command (becomeChecks).
    ...(host.ssh?.become === 'sudo' ? [] : mayWrite(host, '/var/lib/dpkg')),
  ],
  newConfigSuffixes: debianConf,
}

/** Pinned `name-version` from the host's dnf repositories (`.rpmnew` beside a kept config). */
export const dnfDriver: PackageDriver = {
  name: 'dnf',
  queryVersionCommand: (_host, pkg) => ({ argv: ['rpm', '-q', '--qf', '%{VERSION}', '--', pkg], mutates: false }),
  parseVersion: (stdout) => (/^\d[\w.+~-]*$/.test(stdout.trim()) ? stdout.trim() : undefined),
  stageCommands: (_host, pkg, version) => [{ argv: ['dnf', 'install', '-y', '--downloadonly', '--', `${pkg}-${version}`], mutates: true }],
  // `dnf install` refuses to go down; `dnf downgrade` refuses to go up; `--allowerasing` is never used (it could remove other packages).
  installCommands: (_host, pkg, version) => [
    { argv: ['sh', '-c', 'dnf install -y -- "$1" || dnf downgrade -y -- "$1"', 'sh', `${pkg}-${version}`], mutates: true },
  ],
  readyCommands: (host, pkg, version) => [
    {
      argv: ['dnf', 'list', '--showduplicates', '--quiet', '--', `${pkg}-${version}`],
      mutates: false,
      missing: `${pkg} ${version} is not in the host's dnf repositories`,
    },
    ...mayWrite(host, '/var/lib/rpm'),
  ],
  newConfigSuffixes: ['.rpmnew'],
}

/** The driver named in the environment file. */
export function packageDriver(name: 'dpkg' | 'apt' | 'dnf'): PackageDriver {
  return { dpkg: dpkgDriver, apt: aptDriver, dnf: dnfDriver }[name]
}

function parseDpkgStatus(stdout: string): string | undefined {
  const [status, version] = stdout.trim().split(/\s+/)
  return status === 'installed' && version ? version : undefined
}

/** The right to change the package database: the directory writable by the user svcops acts as. */
function mayWrite(host: Host, dir: string): (PlannedCommand & { missing: string })[] {
  const path = hostPath(host, dir)
  return [{ argv: ['test', '-w', path], mutates: false, missing: `the package database ${path} is not writable by this user` }]
}

function cachedPath(host: Host, file: string): string {
  return join(hostPath(host, PACKAGE_CACHE), file.split('/').pop() ?? file)
}

/**
 * The bytes staging the local package `file` still writes to the host's package cache: its size,
 * or 0 when the cache holds a file of that name and size (staging compares checksums and copies
 * again over it, which needs no more room). Only the dpkg driver stages files known here.
 */
export async function stagingBytes(transport: Transport, host: Host, file: string): Promise<number> {
  const size = statSync(file).size
  const there = await runCommand(transport, ['stat', '-c', '%s', '--', cachedPath(host, file)], { check: false })
  return there.code === 0 && Number(there.stdout.trim()) === size ? 0 : size
}

/** The version installed on the host, or undefined when the package is not installed. */
export async function readInstalledVersion(
  driver: PackageDriver,
  transport: Transport,
  host: Host,
  pkg: string,
): Promise<string | undefined> {
  const cmd = driver.queryVersionCommand(host, pkg)
  const result = await runCommand(transport, cmd.argv, { check: false, ...(cmd.env ? { env: cmd.env } : {}) })
  return result.code === 0 ? driver.parseVersion(result.stdout) : undefined
}

/**
 * The `.deb` of `pkg` at `version` in `dir` (the dpkg driver's package source). Its name follows
 * Debian's `<name>_<version>_<arch>.deb`; a missing file is bad input naming what was looked for.
 */
export function findDebFile(dir: string | undefined, pkg: string, version: string): string {
  if (!dir) throw new BadInputError(`recording.packageDir: missing; the dpkg driver needs the directory holding ${pkg}_${version}_*.deb.`)
  if (!existsSync(dir)) throw new BadInputError(`recording.packageDir: the directory '${dir}' does not exist.`)
  const found = readdirSync(dir).find((f) => f.startsWith(`${pkg}_${version}_`) && f.endsWith('.deb'))
  if (!found)
    throw new BadInputError(
      `Version ${version} of ${pkg} is not in ${dir}; expected one of the versions there: ${knownVersionsText(dir, pkg)}.`,
    )
  return join(dir, found)
}

/** The versions of `pkg` whose `.deb` is in `dir`, oldest first (by version, not by name: 10.0.0 after 9.1.0). */
export function debVersionsIn(dir: string, pkg: string): string[] {
  const versions = readdirSync(dir)
    .filter((f) => f.startsWith(`${pkg}_`) && f.endsWith('.deb'))
    .map((f) => f.slice(pkg.length + 1).split('_')[0] ?? '')
    .filter(Boolean)
  return [...new Set(versions)].sort(compareDebVersions)
}

/** The versions of `pkg` in `dir` for a sentence: "1.4.0, 1.5.0, 2.0.0", or "none". */
export function knownVersionsText(dir: string, pkg: string): string {
  const versions = debVersionsIn(dir, pkg)
  return versions.length ? versions.join(', ') : 'none'
}

/** Orders versions by their dotted numbers, then by the rest ("2.0.0" < "2.0.0-1" < "10.0.0"). */
function compareDebVersions(a: string, b: string): number {
  const numbers = (v: string) => (/^[\d.]+/.exec(v)?.[0] ?? '').split('.').filter(Boolean).map(Number)
  const x = numbers(a)
  const y = numbers(b)
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0)
    if (d) return d
  }
  return a.localeCompare(b)
}

/** SHA-256 of a local file, hex. */
export async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256')
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer)
  return hash.digest('hex')
}

/**
 * Makes `version` available on the host without installing it. Idempotent: a `.deb` already in the
 * cache with the same checksum is not copied again. Returns what it changed.
 */
export async function stagePackage(
  driver: PackageDriver,
  transport: Transport,
  host: Host,
  pkg: string,
  version: string,
  file?: string,
): Promise<string[]> {
  if (driver.name !== 'dpkg') {
    for (const cmd of driver.stageCommands(host, pkg, version))
      await runCommand(transport, cmd.argv, { ...(cmd.env ? { env: cmd.env } : {}), ...(cmd.asRoot ? { asRoot: true } : {}) })
    return [`downloaded ${pkg} ${version}`]
  }
  if (!file) throw new OperationError(`No package file was given to stage ${pkg} ${version} on ${host.name}.`)
  const target = cachedPath(host, file)
  const want = await sha256File(file)
  const have = await runCommand(transport, ['sha256sum', target], { check: false })
  if (have.code === 0 && have.stdout.split(/\s+/)[0] === want) return []
  await runCommand(transport, ['mkdir', '-p', hostPath(host, PACKAGE_CACHE)])
  await transport.upload(file, target)
  const check = await runCommand(transport, ['sha256sum', target])
  if (check.stdout.split(/\s+/)[0] !== want)
    throw new OperationError(`The package copied to ${host.name}:${target} does not match ${file} (SHA-256 differs).`)
  return [`copied ${file.split('/').pop() ?? file} to ${target}`]
}

/** Installs exactly `version` (upgrade or downgrade), keeping modified conffiles. */
export async function installPackage(
  driver: PackageDriver,
  transport: Transport,
  host: Host,
  pkg: string,
  version: string,
  file?: string,
): Promise<void> {
  for (const cmd of driver.installCommands(host, pkg, version, file))
    await runCommand(transport, cmd.argv, {
      timeoutMs: 600_000,
      ...(cmd.env ? { env: cmd.env } : {}),
      ...(cmd.asRoot ? { asRoot: true } : {}),
    })
}
