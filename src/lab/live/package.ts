/**
 * Builds every lab release of every live component as a real `.deb` (`<prefix>-<component>`,
 * src/lab/deb.ts): the components' program bundled once (esbuild) and shipped in each package
 * with the package's own `build.json` (component, release, fault, product), a supervisor
 * program section for sandbox hosts and a systemd unit for real hosts (Type=simple,
 * Restart=on-failure, EnvironmentFile=, journald; a postinst that has systemd read it, as root, on a
 * real host only). The environment file and the settings file are the operator's, not the
 * package's: an upgrade never touches them. Builds are cached like the recording service's.
 */
import { createHash } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { projectPath } from '../../core/paths.ts'
import { supportsSettingsPathFlag } from '../../releases/versions.ts'
import { buildDeb, buildUnlessCached } from '../deb.ts'
import { controllerWorkingDir, legacySettingsDir, liveComponentPaths, livePackageFile, livePackageName, type LiveProduct } from './paths.ts'
import { LIVE_COMPONENTS, LIVE_LAB_RELEASES, type LiveComponent, type LiveLabRelease } from './releases.ts'
import type { LiveBuild } from './runtime.ts'

const here = projectPath('src/lab/live')

/** Bundles the components' program into one ES module (no node_modules needed where it runs). */
async function bundleProgram(outFile: string): Promise<void> {
  const { build } = await import('esbuild')
  const entry = `import { runLiveComponent } from './main.ts'\nimport { fileURLToPath } from 'node:url'\nawait runLiveComponent(fileURLToPath(new URL('./build.json', import.meta.url)), process.argv.slice(2))\n`
  await build({
    stdin: { contents: entry, resolveDir: here, sourcefile: 'live-component.ts', loader: 'ts' },
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    outfile: outFile,
    legalComments: 'none',
    minifyWhitespace: true,
    minifySyntax: true,
    logLevel: 'silent',
  })
}

/** Supervisor's start order: the controller first, then the components in dependency order. */
function priority(component: LiveComponent): number {
  return 10 * (LIVE_COMPONENTS.indexOf(component) + 1)
}

function supervisorProgram(component: LiveComponent, product: LiveProduct): string {
  const name = livePackageName(product.prefix, component)
  const paths = liveComponentPaths(product, component)
  // %(here)s is <root>/etc/supervisor/conf.d: the same section works in any sandbox root and on a real host.
  const root = '%(here)s/../../..'
  return [
    `; ${name}: ${component} of the live production system (installed by the ${name} package)`,
    `[program:${name}]`,
    `command=node ${root}${paths.program} --root ${root}`,
    // The controller searches its working directory for the settings file from 6.0.
    ...(component === 'system-controller' ? [`directory=${root}${controllerWorkingDir(product)}`] : []),
    `priority=${priority(component)}`,
    'autostart=true',
    // A component that logs an error and stops stays stopped (EXITED): svcops starts and stops the
    // components, and a refusal is for its checks to see, not for supervisord to retry.
    'autorestart=false',
    // RUNNING once spawned: a start returns at once instead of after a second (plus up to a second
    // of supervisord's loop), and svcops' check waits for what matters — the component answering or
    // connected — and sees one that gives up as EXITED.
    'startsecs=0',
    'startretries=0',
    'stopsignal=TERM',
    'stopwaitsecs=5',
    'redirect_stderr=true',
    `stdout_logfile=${root}/var/log/${product.dir}/${component}.out.log`,
    'stdout_logfile_maxbytes=1MB',
    'stdout_logfile_backups=1',
    '',
  ].join('\n')
}

/**
 * The component's systemd unit. It runs as root: the settings file and the environment files that
 * hold the PSK are root's, 0600, as svcops writes them through sudo (src/live/hosts/host-files.ts).
 */
function systemdUnit(component: LiveComponent, release: LiveLabRelease, product: LiveProduct): string {
  const name = livePackageName(product.prefix, component)
  const paths = liveComponentPaths(product, component)
  return [
    '[Unit]',
    `Description=live production system ${component} ${release.version} (svcops lab emulator)`,
    'After=network.target',
    '',
    '[Service]',
    // Up once the process runs; svcops' check judges the component answering and connected.
    'Type=simple',
    `EnvironmentFile=-${paths.envFile}`,
    `ExecStart=/usr/bin/env node ${paths.program} --root /`,
    // The controller searches its working directory for the settings file from 6.0.
    ...(component === 'system-controller' ? [`WorkingDirectory=${controllerWorkingDir(product)}`] : []),
    // A crash is restarted; svcops reads NRestarts to see that it happened.
    'Restart=on-failure',
    'RestartSec=1',
    'StandardOutput=journal',
    'StandardError=journal',
    `SyslogIdentifier=${name}`,
    '',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ].join('\n')
}

/**
 * The postinst: on a real host (root, no DPKG_ROOT) systemd reads the new unit; in a sandbox host
 * (`dpkg --root`, DPKG_ROOT set, not root) it does nothing. It never starts the component: svcops does.
 */
const POSTINST = [
  '#!/bin/sh',
  'set -e',
  'if [ -n "${DPKG_ROOT:-}" ] || [ "$(id -u)" -ne 0 ]; then exit 0; fi',
  'if [ "$1" = configure ] && [ -d /run/systemd/system ]; then systemctl daemon-reload; fi',
  '',
].join('\n')

function controlFile(component: LiveComponent, release: LiveLabRelease, product: LiveProduct): string {
  return [
    `Package: ${livePackageName(product.prefix, component)}`,
    `Version: ${release.version}`,
    'Architecture: all',
    'Maintainer: svcops lab <lab@localhost>',
    'Section: misc',
    'Priority: optional',
    // No Depends: a lab host's dpkg database knows no nodejs package; the host's node runs it.
    'Recommends: nodejs (>= 20)',
    `Description: live production system ${component} ${release.version} (svcops lab emulator)`,
    ` ${release.summary}`,
    '',
  ].join('\n')
}

async function buildPackage(
  component: LiveComponent,
  release: LiveLabRelease,
  product: LiveProduct,
  program: string,
  outFile: string,
): Promise<void> {
  const paths = liveComponentPaths(product, component)
  const tree = mkdtempSync(join(dirname(outFile), `.build-${component}-${release.version}-`))
  chmodSync(tree, 0o755)
  try {
    const put = (path: string, text: string, mode = 0o644): void => {
      mkdirSync(dirname(join(tree, path)), { recursive: true })
      writeFileSync(join(tree, path), text, { mode })
    }
    const build: LiveBuild = { component, version: release.version, fault: release.fault, product }
    put(paths.program, program)
    put(`${paths.code}/build.json`, `${JSON.stringify(build)}\n`)
    put(paths.supervisor, supervisorProgram(component, product))
    put(`/lib/systemd/system/${livePackageName(product.prefix, component)}.service`, systemdUnit(component, release, product))
    mkdirSync(join(tree, dirname(paths.log)), { recursive: true })
    if (component === 'system-controller') {
      mkdirSync(join(tree, controllerWorkingDir(product)), { recursive: true })
      if (!supportsSettingsPathFlag(release.version)) mkdirSync(join(tree, legacySettingsDir(product)), { recursive: true })
    }
    put('/DEBIAN/control', controlFile(component, release, product))
    put('/DEBIAN/postinst', POSTINST, 0o755)
    await buildDeb(tree, outFile)
  } finally {
    rmSync(tree, { recursive: true, force: true })
  }
}

function buildKey(product: LiveProduct): string {
  const hash = createHash('sha256').update(JSON.stringify({ product, LIVE_LAB_RELEASES, node: process.versions.node }))
  for (const dir of [here, projectPath('src/releases')])
    for (const file of readdirSync(dir).sort()) if (file.endsWith('.ts')) hash.update(file).update(readFileSync(join(dir, file)))
  const esbuild = projectPath('node_modules/esbuild/package.json')
  if (existsSync(esbuild)) hash.update(readFileSync(esbuild))
  return hash.digest('hex')
}

const pendingBuilds = new Map<string, Promise<string>>()

/**
 * Builds a `.deb` per component and release into `outDir` (`livePackageFile` names them) unless
 * it already holds them from the same sources; returns `outDir`.
 */
export function buildLivePackages(outDir: string, product: LiveProduct): Promise<string> {
  const id = `${resolve(outDir)}\n${product.prefix}\n${product.dir}`
  let pending = pendingBuilds.get(id)
  if (!pending) {
    pending = buildMissing(resolve(outDir), product).finally(() => pendingBuilds.delete(id))
    pendingBuilds.set(id, pending)
  }
  return pending
}

async function buildMissing(outDir: string, product: LiveProduct): Promise<string> {
  const files = LIVE_LAB_RELEASES.flatMap((r) => LIVE_COMPONENTS.map((c) => join(outDir, livePackageFile(product.prefix, c, r.version))))
  await buildUnlessCached(outDir, join(outDir, `.${product.prefix}-live.stamp`), buildKey(product), files, async () => {
    const programFile = join(outDir, `.live-component-${process.pid}.mjs`)
    try {
      await bundleProgram(programFile)
      const program = readFileSync(programFile, 'utf8')
      for (const release of LIVE_LAB_RELEASES)
        await Promise.all(
          LIVE_COMPONENTS.map((c) =>
            buildPackage(c, release, product, program, join(outDir, livePackageFile(product.prefix, c, release.version))),
          ),
        )
    } finally {
      rmSync(programFile, { force: true })
    }
  })
  return outDir
}
