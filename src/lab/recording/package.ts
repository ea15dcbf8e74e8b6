/**
 * Builds every lab release of the recording service as a real `.deb` with `dpkg-deb --build`:
 * the service bundled into one file (esbuild; release, schema version and fault baked in), the
 * config as a dpkg conffile, a supervisor program section for lab hosts and a systemd unit for
 * real hosts (its own system user made by the postinst, Restart=on-failure, an EnvironmentFile, journald). Builds are cached: a stamp over the sources and options skips an unchanged rebuild.
 */
import { createHash } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { BadInputError } from '../../core/errors.ts'
import { buildDeb, buildUnlessCached } from '../deb.ts'
import { projectPath } from '../../core/paths.ts'
import { defaultServiceConfig } from './config.ts'
import { RECORDING_RELEASES, type RecordingRelease } from './releases.ts'

// The service's sources are bundled into each package, so this reads them from the project's src/.
const here = projectPath('src/lab/recording')

export interface PackageOptions {
  /** Product prefix: the package is `<prefix>-recording`. */
  prefix: string
  /** Product folder under /opt, /etc/opt, /var/opt and /var/log. */
  dir: string
  /** Only these releases (default: every release in RECORDING_RELEASES). */
  versions?: readonly string[]
}

/** Name of the recording service's package for a product prefix. */
export function recordingPackageName(prefix: string): string {
  return `${prefix}-recording`
}

/** Paths inside a host's root that the package installs (all absolute, as on a real host). */
export function recordingPackagePaths(options: PackageOptions): {
  service: string
  config: string
  supervisor: string
  systemd: string
  log: string
  storage: string
} {
  const name = recordingPackageName(options.prefix)
  return {
    service: `/opt/${options.dir}/recording/service.mjs`,
    config: `/etc/opt/${options.dir}/recording.json`,
    supervisor: `/etc/supervisor/conf.d/${name}.conf`,
    systemd: `/lib/systemd/system/${name}.service`,
    log: `/var/log/${options.dir}/recording.log`,
    storage: `/var/opt/${options.dir}/recordings`,
  }
}

/** Bundles the service of one release into a single ES module file (no node_modules needed where it runs). */
export async function bundleRecordingService(release: RecordingRelease, options: PackageOptions, outFile: string): Promise<void> {
  const { build } = await import('esbuild')
  const entry = `import { runService } from './service.ts'\nawait runService(${JSON.stringify({ release, dir: options.dir })}, process.argv.slice(2))\n`
  await build({
    stdin: { contents: entry, resolveDir: here, sourcefile: `recording-${release.version}.ts`, loader: 'ts' },
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    outfile: outFile,
    // pg is CommonJS and requires Node built-ins at run time; give the ES module a real `require`.
    banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
    external: ['pg-native'],
    legalComments: 'none',
    // Smaller is faster to start (every host start parses it); names stay readable in stack traces.
    minifyWhitespace: true,
    minifySyntax: true,
    logLevel: 'silent',
  })
}

function supervisorProgram(name: string, options: PackageOptions): string {
  const paths = recordingPackagePaths(options)
  // %(here)s is this file's directory, <root>/etc/supervisor/conf.d: the root is three levels up,
  // so the same file works in any sandbox root and on a real host (root /).
  const root = '%(here)s/../../..'
  return [
    `; ${name}: the recording service (installed by the ${name} package)`,
    `[program:${name}]`,
    `command=node ${root}${paths.service} --root ${root} --config ${root}${paths.config}`,
    'autostart=true',
    // Never restarted by supervisord itself: a release whose start fails after `startsecs` (a slow
    // start on a loaded machine) ends EXITED, and supervisord would spawn it again from EXITED on
    // its own, where stopProcess answers NOT_RUNNING and cannot prevent it. A rollback's stop then
    // did not stick: the failed release ran again beside the install of the old one. svcops starts
    // and stops the service; a crash is for the health check and the log check to report.
    'autorestart=false',
    'exitcodes=0',
    'startsecs=1',
    'startretries=2',
    'stopsignal=TERM',
    'stopwaitsecs=10',
    'redirect_stderr=true',
    `stdout_logfile=${root}/var/log/${options.dir}/recording.out.log`,
    'stdout_logfile_maxbytes=1MB',
    'stdout_logfile_backups=1',
    '',
  ].join('\n')
}

/** The system user the service runs as on a real host (made by the package's postinst). */
export function recordingServiceUser(prefix: string): string {
  return recordingPackageName(prefix)
}

function systemdUnit(name: string, release: RecordingRelease, options: PackageOptions): string {
  const paths = recordingPackagePaths(options)
  return [
    '[Unit]',
    `Description=Recording service ${release.version}`,
    'After=network-online.target postgresql.service',
    'Wants=network-online.target',
    '',
    '[Service]',
    // The service listens once it is ready; svcops' health wait judges readiness, not the unit type.
    'Type=simple',
    `User=${recordingServiceUser(options.prefix)}`,
    `Group=${recordingServiceUser(options.prefix)}`,
    // The operator's environment (none is needed by the lab's releases); a missing file is no error.
    `EnvironmentFile=-/etc/default/${name}`,
    `ExecStart=/usr/bin/env node ${paths.service} --root / --config ${paths.config}`,
    // A crash after a healthy start is restarted; svcops reads NRestarts to see that it happened.
    'Restart=on-failure',
    'RestartSec=1',
    'StandardOutput=journal',
    'StandardError=journal',
    '',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ].join('\n')
}

/**
 * The package's postinst: on a real host (root, no DPKG_ROOT) it makes the service's system user and
 * gives it the log and storage folders, then has systemd read the new unit. In a sandbox host
 * (`dpkg --root` with `--force-script-chrootless`, DPKG_ROOT set, not root) there is no system to
 * change, and it does nothing. It never starts the service: svcops starts it after reviewing the config.
 */
function postinst(options: PackageOptions): string {
  const user = recordingServiceUser(options.prefix)
  const paths = recordingPackagePaths(options)
  return [
    '#!/bin/sh',
    'set -e',
    'if [ -n "${DPKG_ROOT:-}" ] || [ "$(id -u)" -ne 0 ]; then exit 0; fi',
    'if [ "$1" = configure ]; then',
    `  getent passwd ${user} >/dev/null || useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin ${user}`,
    `  chown ${user}:${user} ${dirname(paths.log)} ${paths.storage}`,
    '  if [ -d /run/systemd/system ]; then systemctl daemon-reload; fi',
    'fi',
    '',
  ].join('\n')
}

function controlFile(name: string, release: RecordingRelease): string {
  return [
    `Package: ${name}`,
    `Version: ${release.version}`,
    'Architecture: all',
    'Maintainer: svcops lab <lab@localhost>',
    'Section: misc',
    'Priority: optional',
    // No Depends: a lab host's dpkg database (dpkg --root) knows no nodejs package; the host's node runs it.
    'Recommends: nodejs (>= 20)',
    `Description: recording service ${release.version} (svcops lab emulator)`,
    ` ${release.summary}`,
    '',
  ].join('\n')
}

/** Builds one release's .deb into `outFile`. */
async function buildPackage(release: RecordingRelease, options: PackageOptions, outFile: string): Promise<void> {
  const name = recordingPackageName(options.prefix)
  const paths = recordingPackagePaths(options)
  const tree = mkdtempSync(join(dirname(outFile), `.build-${release.version}-`))
  chmodSync(tree, 0o755)
  try {
    const put = (path: string, text: string): void => {
      mkdirSync(dirname(join(tree, path)), { recursive: true })
      writeFileSync(join(tree, path), text, { mode: 0o644 })
    }
    mkdirSync(join(tree, dirname(paths.service)), { recursive: true })
    await bundleRecordingService(release, options, join(tree, paths.service))
    put(paths.config, `${JSON.stringify(defaultServiceConfig(release, options), null, 2)}\n`)
    put(paths.supervisor, supervisorProgram(name, options))
    put(paths.systemd, systemdUnit(name, release, options))
    mkdirSync(join(tree, dirname(paths.log)), { recursive: true })
    mkdirSync(join(tree, paths.storage), { recursive: true })
    put('/DEBIAN/control', controlFile(name, release))
    put('/DEBIAN/conffiles', `${paths.config}\n`)
    put('/DEBIAN/postinst', postinst(options))
    chmodSync(join(tree, 'DEBIAN/postinst'), 0o755)
    await buildDeb(tree, outFile)
  } finally {
    rmSync(tree, { recursive: true, force: true })
  }
}

/** Hash over everything a package's content depends on. */
function buildKey(options: { prefix: string; dir: string }): string {
  const hash = createHash('sha256')
  hash.update(JSON.stringify({ options, releases: RECORDING_RELEASES, node: process.versions.node }))
  for (const file of readdirSync(here).sort()) if (file.endsWith('.ts')) hash.update(file).update(readFileSync(join(here, file)))
  for (const dependency of ['pg', 'jose', 'zod', 'esbuild']) {
    const manifest = join(here, '../../../node_modules', dependency, 'package.json')
    if (existsSync(manifest)) hash.update(readFileSync(manifest))
  }
  return hash.digest('hex')
}

// Callers in one process asking for the same build (lab up and a test, parallel hosts) share it.
const pendingBuilds = new Map<string, Promise<Record<string, string>>>()

/**
 * Builds a .deb per release into `outDir` and returns `{ version: debPath }`. Skips the build when
 * `outDir` already holds packages from the same sources and options.
 */
export function buildRecordingPackages(
  outDir: string,
  options: PackageOptions = { prefix: 'svc', dir: 'svc' },
): Promise<Record<string, string>> {
  const unknown = options.versions?.filter((version) => !RECORDING_RELEASES.some((release) => release.version === version)) ?? []
  if (unknown.length > 0)
    return Promise.reject(
      new BadInputError(
        `versions: ${unknown.join(', ')} is not a lab release; expected some of ${RECORDING_RELEASES.map((release) => release.version).join(', ')}.`,
      ),
    )
  const id = `${resolve(outDir)}\n${options.prefix}\n${options.dir}\n${options.versions?.join(' ') ?? '*'}`
  let pending = pendingBuilds.get(id)
  if (!pending) {
    pending = buildMissingPackages(outDir, options).finally(() => pendingBuilds.delete(id))
    pendingBuilds.set(id, pending)
  }
  return pending
}

async function buildMissingPackages(outDir: string, options: PackageOptions): Promise<Record<string, string>> {
  const name = recordingPackageName(options.prefix)
  const releases = RECORDING_RELEASES.filter((release) => options.versions?.includes(release.version) ?? true)
  const debs = Object.fromEntries(releases.map((release) => [release.version, join(outDir, `${name}_${release.version}_all.deb`)]))
  // One stamp per set of releases, so a partial build never passes for a full one.
  const stamp = join(
    outDir,
    `.${name}${options.versions ? `-${createHash('sha256').update(options.versions.join(' ')).digest('hex').slice(0, 8)}` : ''}.stamp`,
  )
  const key = buildKey({ prefix: options.prefix, dir: options.dir })
  await buildUnlessCached(outDir, stamp, key, Object.values(debs), async () => {
    await Promise.all(releases.map((release) => buildPackage(release, options, debs[release.version] as string)))
  })
  return debs
}
