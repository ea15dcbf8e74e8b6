import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startPostgres, type PostgresCluster } from '../../src/lab/lab-postgres.ts'
import { buildRecordingPackages, RECORDING_RELEASES } from '../../src/lab/recording/index.ts'
import { local, runCommand } from '../../src/core/runner.ts'
import { collect } from '../../src/core/events.ts'
import {
  createSandbox,
  createServiceDatabase,
  installDeb,
  recordingDebs,
  startTestIssuer,
  stopAllServices,
  type TestIssuer,
  writeServiceConfig,
} from './recording-fixture.ts'

let debs: Record<string, string>
const sandboxes: string[] = []

beforeAll(async () => {
  debs = await recordingDebs()
}, 60_000)

afterAll(async () => {
  await stopAllServices()
  for (const root of sandboxes) rmSync(root, { recursive: true, force: true })
})

async function run(argv: string[]): Promise<string> {
  return (await runCommand(local, argv)).stdout
}

function sandbox(): string {
  const root = createSandbox()
  sandboxes.push(root)
  return root
}

const conffile = (root: string): string => join(root, 'etc/opt/svc/recording.json')

describe('recording service packages', () => {
  it('builds one .deb per release, named and versioned for dpkg', async () => {
    expect(Object.keys(debs)).toEqual(RECORDING_RELEASES.map((release) => release.version))
    for (const [version, deb] of Object.entries(debs)) {
      expect(await run(['dpkg-deb', '-f', deb, 'Package', 'Version', 'Architecture'])).toBe(
        `Package: svc-recording\nVersion: ${version}\nArchitecture: all\n`,
      )
    }
  })

  it('holds the bundled service, the config as a conffile, a supervisor program and a systemd unit, owned by root', async () => {
    const listing = await run(['dpkg-deb', '-c', debs['2.0.0'] as string])
    for (const path of [
      './opt/svc/recording/service.mjs',
      './etc/opt/svc/recording.json',
      './etc/supervisor/conf.d/svc-recording.conf',
      './lib/systemd/system/svc-recording.service',
    ]) {
      expect(listing).toMatch(new RegExp(`^-rw-r--r-- root/root .* ${path.replaceAll('.', '\\.')}$`, 'm'))
    }
    expect(listing).not.toMatch(/node_modules/)
    expect(await run(['dpkg-deb', '-I', debs['2.0.0'] as string, 'conffiles'])).toBe('/etc/opt/svc/recording.json\n')
  })

  it('orders fault releases after the release they break and before the next one', async () => {
    for (const version of ['2.1.0+migfail', '2.1.0+crash', '2.1.0+unhealthy', '2.1.0+slowstart', '2.1.0+lossy']) {
      await run(['dpkg', '--compare-versions', '2.1.0', 'lt', version])
      await run(['dpkg', '--compare-versions', version, 'lt', '2.1.1'])
    }
    await run(['dpkg', '--compare-versions', '1.4.0', 'lt', '1.5.0'])
    await run(['dpkg', '--compare-versions', '1.5.0', 'lt', '2.0.0'])
  })

  it('installs, upgrades and downgrades in a dpkg --root sandbox', async () => {
    const root = sandbox()
    expect(await installDeb(root, debs['1.4.0'] as string)).toMatch(/Setting up svc-recording \(1\.4\.0\)/)
    expect(await run(['dpkg-query', `--root=${root}`, '-W', '-f', '${Version} ${Status}', 'svc-recording'])).toBe(
      '1.4.0 install ok installed',
    )
    await installDeb(root, debs['2.0.0'] as string)
    expect(await run(['dpkg-query', `--root=${root}`, '-W', '-f', '${Version}', 'svc-recording'])).toBe('2.0.0')
    await installDeb(root, debs['1.5.0'] as string)
    expect(await run(['dpkg-query', `--root=${root}`, '-W', '-f', '${Version}', 'svc-recording'])).toBe('1.5.0')
    const version = await runCommand(local, ['node', join(root, 'opt/svc/recording/service.mjs'), '--version'])
    expect(version.stdout).toBe('1.5.0\n')
  })

  it('replaces an unedited config on upgrade, and keeps an edited one with the new default beside it as .dpkg-dist', async () => {
    const untouched = sandbox()
    await installDeb(untouched, debs['1.4.0'] as string)
    await installDeb(untouched, debs['1.5.0'] as string)
    expect(JSON.parse(readFileSync(conffile(untouched), 'utf8'))).toHaveProperty('contentInfoCacheTtlSeconds', 300)
    expect(existsSync(`${conffile(untouched)}.dpkg-dist`)).toBe(false)

    const edited = sandbox()
    await installDeb(edited, debs['1.4.0'] as string)
    const config = JSON.parse(readFileSync(conffile(edited), 'utf8')) as { contentInfoCacheSize: number }
    config.contentInfoCacheSize = 42
    writeFileSync(conffile(edited), JSON.stringify(config, null, 2))
    await installDeb(edited, debs['1.5.0'] as string)
    expect(JSON.parse(readFileSync(conffile(edited), 'utf8'))).toEqual(config)
    const dist = JSON.parse(readFileSync(`${conffile(edited)}.dpkg-dist`, 'utf8')) as Record<string, unknown>
    expect(dist).toMatchObject({ contentInfoCacheSize: 1000, contentInfoCacheTtlSeconds: 300 })
  })

  it('reuses the packages it built when nothing changed', async () => {
    const before = statSync(debs['1.4.0'] as string).mtimeMs
    const log = collect()
    expect(await recordingDebs()).toEqual(debs)
    log.stop()
    expect(log.events.filter((e) => e.kind === 'command' && e.command.includes('dpkg-deb'))).toEqual([])
    expect(statSync(debs['1.4.0'] as string).mtimeMs).toBe(before)
  })

  it('names the package and folders after the product prefix and dir', async () => {
    const out = join(sandbox(), 'debs')
    mkdirSync(out)
    const built = await buildRecordingPackages(out, { prefix: 'acme', dir: 'acme-media', versions: ['1.4.0'] })
    expect(Object.keys(built)).toEqual(['1.4.0'])
    const deb = built['1.4.0'] as string
    expect(deb).toMatch(/\/acme-recording_1\.4\.0_all\.deb$/)
    const listing = await run(['dpkg-deb', '-c', deb])
    expect(listing).toMatch(/ \.\/opt\/acme-media\/recording\/service\.mjs$/m)
    expect(listing).toMatch(/ \.\/etc\/supervisor\/conf\.d\/acme-recording\.conf$/m)
    expect(await run(['dpkg-deb', '-I', deb, 'conffiles'])).toBe('/etc/opt/acme-media/recording.json\n')
    await expect(buildRecordingPackages(out, { prefix: 'acme', dir: 'acme-media', versions: ['9.9.9'] })).rejects.toThrow(
      /^versions: 9\.9\.9 is not a lab release; expected some of 1\.4\.0, /,
    )
  }, 30_000)
})

describe('the supervisor program section of the package', () => {
  let pg: PostgresCluster
  let issuer: TestIssuer
  beforeAll(async () => {
    ;[pg, issuer] = await Promise.all([startPostgres({ fsync: false }), startTestIssuer()])
  }, 60_000)
  afterAll(async () => {
    await stopAllServices()
    await issuer?.close()
    await pg?.stop()
  })

  it('starts the installed service from the sandbox root under a real supervisord', async () => {
    const root = sandbox()
    await installDeb(root, debs['1.5.0'] as string)
    const { freePort } = await import('../../src/lab/ports.ts')
    const port = await freePort()
    writeServiceConfig(root, { version: '1.5.0', pg, database: await createServiceDatabase(pg), issuer, port })
    const conf = join(root, 'supervisord.conf')
    writeFileSync(
      conf,
      [
        '[supervisord]',
        `pidfile=${root}/supervisord.pid`,
        `logfile=${root}/supervisord.log`,
        '[unix_http_server]',
        `file=${root}/supervisor.sock`,
        '[rpcinterface:supervisor]',
        'supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface',
        '[supervisorctl]',
        `serverurl=unix://${root}/supervisor.sock`,
        '[include]',
        `files = ${root}/etc/supervisor/conf.d/*.conf`,
        '',
      ].join('\n'),
    )
    await run(['supervisord', '-c', conf])
    try {
      let status = 0
      for (let i = 0; i < 100 && status !== 200; i++) {
        status = await fetch(`http://127.0.0.1:${port}/`).then(
          (answer) => answer.status,
          () => 0,
        )
        if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 100))
      }
      expect(status).toBe(200)
      // startsecs=1: supervisor calls the program RUNNING once it stayed up for a second.
      let state = ''
      for (let i = 0; i < 50 && !/RUNNING/.test(state); i++) {
        state = (await runCommand(local, ['supervisorctl', '-c', conf, 'status', 'svc-recording'], { check: false })).stdout
        if (!/RUNNING/.test(state)) await new Promise((resolve) => setTimeout(resolve, 100))
      }
      expect(state).toMatch(/^svc-recording\s+RUNNING/)
      expect(readFileSync(join(root, 'var/log/svc/recording.log'), 'utf8')).toMatch(
        new RegExp(`INFO recording service 1\\.5\\.0 starting \\(schema 1, root ${root},`),
      )
    } finally {
      await runCommand(local, ['supervisorctl', '-c', conf, 'shutdown'], { check: false })
    }
  }, 30_000)
})
