/**
 * A tiny real .deb for the host tests ("lab-probe"): a conffile, a supervisor program section that
 * points into the host root through %(here)s, and a service that logs its version and sleeps.
 */
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { local, runCommand } from '../../src/core/runner.ts'

export const PROBE = 'lab-probe'

/** Builds lab-probe_<version>_all.deb in `outDir` and returns its path. */
export async function buildProbePackage(version: string, outDir: string): Promise<string> {
  const tree = mkdtempSync(join(tmpdir(), 'svcops-probe-'))
  const file = (path: string, text: string, mode = 0o644): void => {
    mkdirSync(join(tree, path, '..'), { recursive: true })
    writeFileSync(join(tree, path), text)
    chmodSync(join(tree, path), mode)
  }
  file(
    'DEBIAN/control',
    `Package: ${PROBE}\nVersion: ${version}\nArchitecture: all\nMaintainer: svcops lab <lab@localhost>\nDescription: probe service for lab host tests\n`,
  )
  file('DEBIAN/conffiles', `/etc/opt/probe/probe.json\n/etc/supervisor/conf.d/${PROBE}.conf\n`)
  file('etc/opt/probe/probe.json', JSON.stringify({ greeting: `hello from ${version}` }, null, 2) + '\n')
  file('opt/probe/VERSION', `${version}\n`)
  file(
    'opt/probe/run.sh',
    '#!/bin/sh\nR="$1"\nmkdir -p "$R/var/log/probe"\necho "$(date -u +%FT%TZ) INFO probe $(cat "$R/opt/probe/VERSION") started" >> "$R/var/log/probe/probe.log"\nexec sleep 100000\n',
    0o755,
  )
  file(
    `etc/supervisor/conf.d/${PROBE}.conf`,
    `[program:${PROBE}]\ncommand=/bin/sh %(here)s/../../../opt/probe/run.sh %(here)s/../../..\nautostart=false\nautorestart=false\nstartsecs=0\nstopasgroup=true\nkillasgroup=true\n`,
  )
  file(
    'DEBIAN/postinst',
    '#!/bin/sh\n# Unchrooted maintainer scripts must stay inside the host root.\necho "postinst $1 $2" >> "$DPKG_ROOT/var/log/probe-postinst.log"\n',
    0o755,
  )
  mkdirSync(outDir, { recursive: true })
  const deb = join(outDir, `${PROBE}_${version}_all.deb`)
  await runCommand(local, ['dpkg-deb', '--root-owner-group', '-Zgzip', '-z1', '--build', tree, deb])
  await runCommand(local, ['rm', '-rf', tree])
  chmodSync(deb, 0o644)
  return deb
}
