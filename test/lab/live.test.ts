/**
 * The lab's emulators of the live production system, end to end: `svcops lab up --hosts 0 --live V`
 * on a real sandboxed host (dpkg, supervisord, sshd on loopback), then the host switched between
 * releases with dpkg the way an operator would, each behaviour the seed lists checked from outside
 * (REST API, /metrics, TCP endpoints, logs, supervisor's state). One lab is shared by the tests in
 * order; a second, short one checks the 6.0 weak-PSK refusal as `--live-weak-psk` sets it up.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCommand } from '../../src/core/runner.ts'
import { SshTransport } from '../../src/drivers/ssh.ts'
import { dpkgQueryArgv, transportFor } from '../../src/drivers/transports.ts'
import { generatePsk } from '../../src/releases/pre-shared-key.ts'
import { legacySettingsDir, liveComponentPaths, liveSettingsFile } from '../../src/lab/live/paths.ts'
import { CONNECTING_COMPONENTS, LIVE_COMPONENTS } from '../../src/lab/live/releases.ts'
import { processesMentioning, svcops, type CliResult } from './labcore-helpers.ts'
import { accepts, LiveHost, liveLabEnv, liveSectionOf, PRODUCT, processArguments, waitFor } from '../support/live-lab.ts'

const base = mkdtempSync(join(tmpdir(), 'svcops-live-'))
const LEGACY_SETTINGS = `${legacySettingsDir(PRODUCT)}/svc_sc_settings.json`

/** Waits until supervisor no longer runs `component` (it logged an error and stopped). */
const stopped = (host: LiveHost, component: (typeof LIVE_COMPONENTS)[number]): Promise<string> =>
  waitFor(`${component} to stop`, async () => {
    const state = await host.state(component)
    return ['EXITED', 'FATAL', 'BACKOFF'].includes(state) ? state : undefined
  })

/**
 * Waits until `component` logged a line matching `pattern` after `mark` lines: supervisor counts a
 * program RUNNING once spawned (startsecs=0), so a restart returns before the program has read its
 * settings; its log says when it has.
 */
const logged = (host: LiveHost, component: (typeof LIVE_COMPONENTS)[number], mark: number, pattern: RegExp): Promise<string> =>
  waitFor(`${component} to log ${String(pattern)}`, () =>
    host
      .log(component)
      .slice(mark)
      .find((line) => pattern.test(line)),
  )

const connected = (host: LiveHost, components: readonly (typeof LIVE_COMPONENTS)[number][] = CONNECTING_COMPONENTS): Promise<boolean> =>
  waitFor(`${components.join(', ')} to connect`, async () => {
    const all = await Promise.all(components.map((c) => host.health(c)))
    return all.every((h) => h?.connected === true)
  })

describe('svcops lab up --hosts 0 --live 5.2.0 --live-tcp-endpoints 2, then the host moved across releases', () => {
  const env = liveLabEnv(base, 'a')
  let up: CliResult
  let host: LiveHost
  let psk = ''
  const outputs: string[] = []

  beforeAll(async () => {
    up = await svcops(['lab', 'up', '--hosts', '0', '--live', '5.2.0', '--live-tcp-endpoints', '2', '--json'], env)
    outputs.push(up.stdout, up.stderr)
    host = new LiveHost(liveSectionOf(env))
    psk = (JSON.parse(readFileSync(host.file(LEGACY_SETTINGS), 'utf8')) as { psk: string }).psk
  })
  afterAll(async () => {
    await svcops(['lab', 'down'], env)
  })

  it('starts the four components of 5.2.0 on live-1 and writes svcops:live, with the PSK only in 0600 files on the host', () => {
    expect(up.code, up.stderr).toBe(0)
    const names = (JSON.parse(up.stdout) as { services: Array<{ name: string }> }).services.map((s) => s.name)
    expect(names).toEqual(expect.arrayContaining(LIVE_COMPONENTS.map((c) => `live-1 ${c}`)))
    expect(names).not.toContain('PostgreSQL')
    expect(host.live).toMatchObject({
      version: '5.2.0',
      prefix: 'svc',
      productDir: 'svc',
      packageDriver: 'dpkg',
      serviceDriver: 'supervisor',
    })
    expect(host.live.tcpEndpoints).toHaveLength(2)
    expect(liveSettingsFile('5.2.0', PRODUCT)).toBe(LEGACY_SETTINGS)
    expect(psk.length).toBeGreaterThanOrEqual(43)
    expect(statSync(host.file(LEGACY_SETTINGS)).mode & 0o777).toBe(0o600)
    for (const c of LIVE_COMPONENTS) expect(statSync(host.file(liveComponentPaths(PRODUCT, c).envFile)).mode & 0o777).toBe(0o600)
    expect(host.readEnv('ingest').SVC_SYSTEM_CONTROLLER_PSK).toBe(psk)
    // What to try next names only what this lab runs: no manager here, so no auth check.
    expect((JSON.parse(up.stdout) as { next: string[] }).next).toEqual([
      'svcops verify live --env lab',
      'svcops plan live --env lab --to 7.0.0',
    ])
    const stackFile = readFileSync(join(env.SVCOPS_STACKS_DIR ?? '', 'Pulumi.lab.yaml'), 'utf8')
    const stateFile = readFileSync(join(env.SVCOPS_LAB_DIR ?? '', 'state.json'), 'utf8')
    for (const text of [stackFile, stateFile, up.stdout, up.stderr, processArguments()]) expect(text).not.toContain(psk)
  })

  it('reaches live-1 over the loopback sshd (pinned host key), where dpkg lists the four packages of 5.2.0', async () => {
    const t = transportFor({
      name: host.live.host?.name ?? '',
      url: 'http://127.0.0.1:1',
      root: host.root,
      ssh: host.live.host?.ssh,
      canary: false,
    })
    try {
      expect(t).toBeInstanceOf(SshTransport)
      const listed = await runCommand(t, dpkgQueryArgv({ root: host.root }, ['-W', '-f', '${Package} ${Version}\\n']))
      expect(listed.stdout.trim().split('\n').sort()).toEqual(LIVE_COMPONENTS.map((c) => `svc-${c} 5.2.0`).sort())
    } finally {
      await t.close()
    }
  })

  it('lab status shows each component running, with its version and connected', async () => {
    const status = await svcops(['lab', 'status', '--json'], env)
    outputs.push(status.stdout, status.stderr)
    const entries = (
      JSON.parse(status.stdout) as { entries: Array<{ name: string; running: boolean; version?: string; connected?: boolean }> }
    ).entries
    for (const c of LIVE_COMPONENTS)
      expect(entries.find((e) => e.name === `live-1 ${c}`)).toMatchObject({ running: true, version: '5.2.0', connected: true })
    expect((JSON.parse(status.stdout) as { ok: boolean }).ok).toBe(true)
    const text = await svcops(['lab', 'status'], env)
    expect(text.stdout).toMatch(/running {2}live-1 pipeline {2}127\.0\.0\.1:\d+ {2}5\.2\.0, connected/)
  })

  it('plan live --env lab --to 7.0.0 plans from the release the lab runs, without --from', async () => {
    const plan = await svcops(['plan', 'live', '--env', 'lab', '--to', '7.0.0', '--json'], env)
    expect(plan.code, plan.stderr).toBe(0)
    expect(JSON.parse(plan.stdout)).toMatchObject({ ok: true, from: '5.2.0', to: '7.0.0', releases: ['6.0.0', '7.0.0'] })
  })

  it('the 5.x controller answers under /api/v2 only and lists the connected components', async () => {
    expect(await host.controller('/api/v2/status')).toEqual({ status: 200, body: { version: '5.2.0', status: 'ok' } })
    expect((await host.controller('/api/v1/status')).status).toBe(404)
    expect((await host.controller('/api/v3/status')).status).toBe(404)
    const components = (await host.controller('/api/v2/components')).body as Array<{ name: string; connected: boolean }>
    expect(
      components
        .filter((c) => c.connected)
        .map((c) => c.name)
        .sort(),
    ).toEqual(['control-panel', 'ingest', 'pipeline'])
  })

  it('the 5.x pipeline listens on each of the endpoints in SVC_TCP_ENDPOINTS', async () => {
    expect(host.readEnv('pipeline').SVC_TCP_ENDPOINTS?.split(',')).toEqual(host.live.tcpEndpoints)
    for (const endpoint of host.live.tcpEndpoints) expect(await accepts(endpoint)).toBe(true)
  })

  it('5.x metrics: video_frames_in_queue (renamed at 4.0) and the ingest frame counters not yet split', async () => {
    const pipeline = await host.metrics('pipeline')
    expect(pipeline).toMatch(/^svc_video_frames_in_queue 0$/m)
    expect(pipeline).not.toMatch(/queueing_video_frames/)
    expect(pipeline).toMatch(/^svc_controller_connected 1$/m)
    const ingest = await host.metrics('ingest')
    for (const name of ['dropped', 'duplicated', 'lost']) expect(ingest).toMatch(new RegExp(`^svc_ingest_source_${name}_frames 0$`, 'm'))
    expect(ingest).not.toMatch(/_audio_frames|_video_frames/)
  })

  it("a 5.x component with a PSK other than the controller's logs an ERROR and stops; with the right one it connects", async () => {
    const vars = host.readEnv('control-panel')
    const mark = host.logMark('control-panel')
    host.writeEnv('control-panel', { ...vars, SVC_SYSTEM_CONTROLLER_PSK: generatePsk() })
    await host.restart('control-panel')
    await stopped(host, 'control-panel')
    const errors = host.errorsSince('control-panel', mark)
    expect(errors.join('\n')).toMatch(/refused the pre-shared key in SVC_SYSTEM_CONTROLLER_PSK/)
    host.writeEnv('control-panel', vars)
    await host.restart('control-panel')
    expect(await host.state('control-panel')).toBe('RUNNING')
    await connected(host, ['control-panel'])
  })

  it('release 1.0.0: /api/v1, a component connects without any PSK, metric queueing_video_frames', async () => {
    await host.switchRelease('1.0.0', () => host.writeEnv('ingest', { ...host.readEnv('ingest'), SVC_SYSTEM_CONTROLLER_PSK: '' }))
    await connected(host)
    expect(await host.controller('/api/v1/status')).toEqual({ status: 200, body: { version: '1.0.0', status: 'ok' } })
    expect((await host.controller('/api/v2/status')).status).toBe(404)
    expect(await host.metrics('pipeline')).toMatch(/^svc_queueing_video_frames 0$/m)
  })

  it('release 2.0.0: a component started without SVC_SYSTEM_CONTROLLER_PSK logs an ERROR and stops; the others connect', async () => {
    const mark = host.logMark('ingest')
    await host.switchRelease('2.0.0')
    expect(await stopped(host, 'ingest')).not.toBe('RUNNING')
    expect(host.errorsSince('ingest', mark).join('\n')).toMatch(/SVC_SYSTEM_CONTROLLER_PSK is not set/)
    await connected(host, ['pipeline', 'control-panel'])
    expect((await host.controller('/api/v1/status')).body).toEqual({ version: '2.0.0', status: 'ok' })
    host.writeEnv('ingest', { ...host.readEnv('ingest'), SVC_SYSTEM_CONTROLLER_PSK: psk })
    await host.restart('ingest')
    await connected(host, ['ingest'])
  })

  it('release 3.0.0 moves to /api/v2 (the old prefix answers 404) and still has queueing_video_frames (renamed at 4.0)', async () => {
    await host.switchRelease('3.0.0')
    await connected(host)
    expect((await host.controller('/api/v2/status')).body).toEqual({ version: '3.0.0', status: 'ok' })
    expect((await host.controller('/api/v1/status')).status).toBe(404)
    expect(await host.metrics('pipeline')).toMatch(/^svc_queueing_video_frames 0$/m)
  })

  it('release 6.0.0 does not search the former fixed directory: the controller logs an ERROR naming the directories it searched, and stops; a pipeline with only SVC_TCP_ENDPOINTS stops', async () => {
    const controllerMark = host.logMark('system-controller')
    const pipelineMark = host.logMark('pipeline')
    await host.switchRelease('6.0.0')
    await stopped(host, 'system-controller')
    const [error] = host.errorsSince('system-controller', controllerMark)
    expect(error).toMatch(
      /svc_sc_settings\.json was not found; searched: \/var\/opt\/svc\/system-controller \(working directory\), \/etc\/opt\/svc$/,
    )
    await stopped(host, 'pipeline')
    expect(host.errorsSince('pipeline', pipelineMark).join('\n')).toMatch(
      /SVC_TCP_ENDPOINTS is set but release 6\.0\.0 reads SVC_TCP_ENDPOINT \(one endpoint\)/,
    )
  })

  it('release 6.0.0 finds the settings file in /etc/opt/svc, and a pipeline with SVC_TCP_ENDPOINT listens on its one endpoint', async () => {
    host.move(LEGACY_SETTINGS, '/etc/opt/svc/svc_sc_settings.json')
    const [endpoint = ''] = host.live.tcpEndpoints
    const { SVC_TCP_ENDPOINTS: _old, ...vars } = host.readEnv('pipeline')
    host.writeEnv('pipeline', { ...vars, SVC_TCP_ENDPOINT: endpoint })
    const mark = host.logMark('system-controller')
    await host.supervisorctl(['start', 'svc-system-controller', 'svc-pipeline'])
    await logged(host, 'system-controller', mark, /listening on /)
    expect(await host.state('system-controller')).toBe('RUNNING')
    expect((await host.controller('/api/v2/status')).body).toEqual({ version: '6.0.0', status: 'ok' })
    await connected(host)
    expect(await accepts(endpoint)).toBe(true)
    expect(await accepts(host.live.tcpEndpoints[1] ?? '')).toBe(false)
  })

  it('release 6.0.0 reads the settings file from its working directory', async () => {
    host.move('/etc/opt/svc/svc_sc_settings.json', '/var/opt/svc/system-controller/svc_sc_settings.json')
    const mark = host.logMark('system-controller')
    await host.restart('system-controller')
    await logged(host, 'system-controller', mark, /listening on /)
    expect(await host.state('system-controller')).toBe('RUNNING')
    expect(host.log('system-controller').slice(mark).join('\n')).toMatch(
      /settings \/var\/opt\/svc\/system-controller\/svc_sc_settings\.json/,
    )
  })

  it('release 6.0.0 reads the settings file from the directory given by --settings-path, and splits the ingest metrics', async () => {
    host.move('/var/opt/svc/system-controller/svc_sc_settings.json', '/srv/sc-settings/svc_sc_settings.json')
    host.writeEnv('system-controller', { ...host.readEnv('system-controller'), SVC_SC_ARGS: '--settings-path /srv/sc-settings' })
    const mark = host.logMark('system-controller')
    await host.restart('system-controller')
    await logged(host, 'system-controller', mark, /listening on /)
    expect(await host.state('system-controller')).toBe('RUNNING')
    expect(host.log('system-controller').slice(mark).join('\n')).toMatch(/settings \/srv\/sc-settings\/svc_sc_settings\.json/)
    await connected(host)
    const ingest = await host.metrics('ingest')
    for (const name of ['dropped', 'duplicated', 'lost'])
      for (const kind of ['audio', 'video']) expect(ingest).toMatch(new RegExp(`^svc_ingest_source_${name}_${kind}_frames 0$`, 'm'))
    expect(ingest).not.toMatch(/^svc_ingest_source_dropped_frames/m)
  })

  it('release 6.0.0 refuses a low-entropy PSK in its settings file: ERROR (without the key) and it stops', async () => {
    const file = '/srv/sc-settings/svc_sc_settings.json'
    const settings = readFileSync(host.file(file), 'utf8')
    const weak = 'studio-password-4711'
    host.writeFile(file, JSON.stringify({ ...(JSON.parse(settings) as object), psk: weak }))
    const mark = host.logMark('system-controller')
    await host.restart('system-controller')
    await stopped(host, 'system-controller')
    const errors = host.errorsSince('system-controller', mark).join('\n')
    expect(errors).toMatch(/is too weak \(estimated \d+ bits\); the system controller does not start/)
    expect(errors).not.toContain(weak)
    host.writeFile(file, settings)
    await host.restart('system-controller')
    await connected(host)
  })

  it('release 7.0.0 answers under /api/v3 only', async () => {
    await host.switchRelease('7.0.0')
    await connected(host)
    expect((await host.controller('/api/v3/status')).body).toEqual({ version: '7.0.0', status: 'ok' })
    expect((await host.controller('/api/v2/status')).status).toBe(404)
    const components = (await host.controller('/api/v3/components')).body as Array<{ name: string; version: string }>
    expect(components.map((c) => c.version)).toEqual(['7.0.0', '7.0.0', '7.0.0'])
  })

  it('the fault release 7.0.1 starts its components, which never connect', async () => {
    await host.switchRelease('7.0.1')
    for (const c of LIVE_COMPONENTS) expect(await host.state(c)).toBe('RUNNING')
    // Each has run for longer than the components' reconnect interval (1 s).
    await new Promise((r) => setTimeout(r, 1500))
    const components = (await host.controller('/api/v3/components')).body as Array<{ version: string }>
    expect(components.map((c) => c.version)).not.toContain('7.0.1')
    for (const c of CONNECTING_COMPONENTS) {
      expect(await host.health(c)).toMatchObject({ version: '7.0.1', connected: false })
      expect(await host.metrics(c)).toMatch(/^svc_controller_connected 0$/m)
    }
  })

  it('no PSK in any component log or output, and lab down stops every component and removes the temp dirs', async () => {
    for (const c of LIVE_COMPONENTS) expect(host.log(c).join('\n')).not.toContain(psk)
    const down = await svcops(['lab', 'down'], env)
    expect(down.code, down.stderr).toBe(0)
    for (const text of [...outputs, down.stdout, down.stderr]) expect(text).not.toContain(psk)
    expect(down.stdout).toMatch(/live-1 system-controller, host live-1, sshd \(live\), live host tree/)
    expect(processesMentioning(env.TMPDIR ?? '')).toEqual([])
    expect(readdirSync(env.TMPDIR ?? '')).toEqual([])
    expect(existsSync(env.SVCOPS_LAB_DIR ?? '')).toBe(false)
    expect(existsSync(host.root)).toBe(false)
  })
})

describe('svcops lab up --hosts 0 --live 6.0.0 --live-weak-psk', () => {
  const env = liveLabEnv(base, 'b')
  afterAll(async () => {
    await svcops(['lab', 'down'], env)
    rmSync(base, { recursive: true, force: true })
  })

  it('comes up with the controller refusing its low-entropy PSK (ERROR, stopped), and the components not connected', async () => {
    const up = await svcops(['lab', 'up', '--hosts', '0', '--live', '6.0.0', '--live-weak-psk'], env)
    expect(up.code, up.stderr).toBe(0)
    const host = new LiveHost(liveSectionOf(env))
    const { psk } = JSON.parse(readFileSync(host.file('/etc/opt/svc/svc_sc_settings.json'), 'utf8')) as { psk: string }
    expect(await stopped(host, 'system-controller')).not.toBe('RUNNING')
    const errors = host.errorsSince('system-controller', 0).join('\n')
    expect(errors).toMatch(/the pre-shared key in \/etc\/opt\/svc\/svc_sc_settings\.json is too weak/)
    expect(errors + up.stdout + up.stderr).not.toContain(psk)
    for (const c of CONNECTING_COMPONENTS) expect(await host.health(c)).toMatchObject({ version: '6.0.0', connected: false })
    const status = await svcops(['lab', 'status'], env)
    expect(status.stdout).toMatch(/stopped {2}live-1 system-controller/)
  })

  it.concurrent.each([
    [['--live', '8.0.0'], /^--live: 8\.0\.0 is not a live lab release; expected one of 1\.0\.0, .*, 7\.0\.2\.$/],
    [
      ['--live', '6.0.0', '--live-tcp-endpoints', '2'],
      /^--live-tcp-endpoints: 2 is not allowed with --live 6\.0\.0: from that release the pipeline reads one endpoint \(SVC_TCP_ENDPOINT\)\.$/,
    ],
    [['--live', '5.2.0', '--live-tcp-endpoints', '-1'], /^--live-tcp-endpoints: -1 is not allowed; expected an integer from 0 to 8\.$/],
    [['--live', '1.0.0', '--live-weak-psk'], /^--live-weak-psk is not allowed with --live 1\.0\.0: that release has no pre-shared key\.$/],
    [['--live-weak-psk'], /^--live-weak-psk needs --live V: it configures the live lab host\.$/],
    [
      ['--live', '5.2.0', '--live-hosts', '9'],
      /^--live-hosts: 9 is not allowed; expected an integer from 1 to 8 \(live hosts live-1 to live-N\)\.$/,
    ],
    [['--live-hosts', '3'], /^--live-hosts needs --live V: it configures the live lab host\.$/],
  ])('refuses lab up %j before anything starts (one sentence, exit 2)', async (args, message) => {
    const other = liveLabEnv(base, `c-${args.join('')}`)
    const result = await svcops(['lab', 'up', '--hosts', '0', ...args], other)
    expect(result.code).toBe(2)
    expect(result.stderr.split('\n')[0]?.replace(/^(error|svcops): /i, '')).toMatch(message)
    expect(existsSync(other.SVCOPS_LAB_DIR ?? '')).toBe(false)
    expect(readdirSync(other.TMPDIR ?? '')).toEqual([])
  })
})
