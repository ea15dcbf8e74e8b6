/**
 * `svcops upgrade live` across the early majors, on a real live lab host: the gates stop an
 * upgrade before anything changes; 1.x -> 2.0 generates the first PSK and gives it to every
 * component (one started without it stops, as the seed says); 2.0 -> 3.0 moves the prefix to
 * /api/v2; 3.0 -> 7.0 in one run moves the settings file, renames the TCP endpoint variable and
 * keeps a PSK that is strong enough. No PSK appears in any output, journal or report.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { assessPsk } from '../../src/releases/pre-shared-key.ts'
import { gateIds, LIVE_COMPONENTS, startLiveLab, waitUntil, type LiveLab } from '../support/live-lab.ts'

const PSK = 'SVC_SYSTEM_CONTROLLER_PSK'
const CONNECTING = ['ingest', 'pipeline', 'control-panel'] as const

let lab: LiveLab

beforeAll(async () => {
  lab = await startLiveLab({ version: '1.0.0', cli: 'in-process' })
}, 240_000)

afterAll(async () => {
  await lab?.stop()
})

describe('upgrade live from 1.0.0, one major and several at a time', () => {
  it('refuses with an open gate before anything changes, naming each gate and how to clear it (exit 5)', async () => {
    const sdk = join(tmpdir(), `live-sdk-${process.pid}`)
    mkdirSync(sdk, { recursive: true })
    writeFileSync(join(sdk, 'render.cpp'), '#include "AlignedData.h"\nvoid f(AlignedData::DataFrame& frame) { (void)frame.mPTS; }\n')
    lab.setLive({ sdkSourceDirs: [sdk] })
    const before = lab.snapshot()
    const run = await lab.svcops(['upgrade', 'live', '--to', '2.0.0', '--yes'])
    expect(run.code).toBe(5)
    // Checked by `scan sdk`: the finding is named with its place.
    expect(run.stderr).toMatch(/2\.0\.0\/aligned-frame \(\d+ uses? in live\.sdkSourceDirs: .*render\.cpp:2/)
    // What no checker covers needs an acknowledgement, and says so.
    expect(run.stderr).toMatch(/Once every one is handled: --ack \S*2\.0\.0\/rendering-timestamp-increment/)
    expect(run.stderr.match(/--ack /g)).toHaveLength(1)
    expect(run.stderr).toContain('nothing was changed')
    expect(lab.snapshot()).toEqual(before)
    expect(Object.values(lab.versions())).toEqual(['1.0.0', '1.0.0', '1.0.0', '1.0.0'])
    expect(lab.read('/var/cache/svcops/packages/svc-ingest_2.0.0_all.deb')).toBeUndefined()
    for (const c of LIVE_COMPONENTS) expect(lab.state(c)).toBe('RUNNING')

    // The code fixed: the scanner's gates pass; the two the scanner cannot see are acknowledged.
    writeFileSync(join(sdk, 'render.cpp'), '#include "AlignedFrame.h"\nvoid f(AlignedFrame& frame) { (void)frame.mCaptureTimestamp; }\n')
    lab.setLive({ sdkSourceDirs: [sdk] })
  })

  it('1.x -> 2.0: a PSK is generated into the settings file and every component; a component started without it stops', async () => {
    expect(lab.settings()?.json.psk).toBeUndefined()
    for (const c of CONNECTING) expect(lab.env(c)).not.toContain(PSK)
    const run = await lab.svcops([
      'upgrade',
      'live',
      '--to',
      '2.0.0',
      '--yes',
      '--ack',
      '2.0.0/rendering-timestamp-increment',
      '--ack',
      '2.0.0/device-memory-read-only',
    ])
    expect(run.code).toBe(0)
    expect(Object.values(lab.versions())).toEqual(['2.0.0', '2.0.0', '2.0.0', '2.0.0'])
    const psk = lab.settings()?.json.psk ?? ''
    expect(assessPsk(psk).ok).toBe(true)
    for (const c of CONNECTING) expect(lab.env(c)).toContain(`${PSK}=${psk}\n`)
    expect((await lab.svcops(['verify', 'live'])).code).toBe(0)

    // The seed: a component started without the PSK logs an error and stops.
    const ingest = lab.env('ingest')
    lab.setEnv('ingest', ingest.replace(/^SVC_SYSTEM_CONTROLLER_PSK=.*\n/m, ''))
    lab.supervisorctl(['restart', 'svc-ingest'])
    await waitUntil('ingest to stop', () => ['EXITED', 'FATAL', 'BACKOFF'].includes(lab.state('ingest')))
    expect(lab.log('ingest').some((l) => /^\S+ ERROR /.test(l))).toBe(true)
    const verify = await lab.svcops(['verify', 'live'])
    expect(verify.code).toBe(1)
    expect(verify.stderr).toMatch(/ingest: running/)
    lab.setEnv('ingest', ingest)
    lab.supervisorctl(['start', 'svc-ingest'])
    await waitUntil('ingest to run again', () => lab.state('ingest') === 'RUNNING')
  })

  it('2.0 -> 3.0: the controller answers on /api/v2 and no longer on /api/v1', async () => {
    const run = await lab.svcops(['upgrade', 'live', '--to', '3.0.0', '--yes', '--ack', gateIds(lab.live(), '2.0.0', '3.0.0').join(',')])
    expect(run.code).toBe(0)
    expect((await lab.controller('/api/v2/status')).body).toEqual({ version: '3.0.0', status: 'ok' })
    expect((await lab.controller('/api/v1/status')).status).toBe(404)
  })

  it('3.0 -> 7.0 in one run: settings moved to /etc/opt/svc, SVC_TCP_ENDPOINT, /api/v3, the renamed metrics; a strong PSK kept', async () => {
    const psk = lab.settings()?.json.psk
    const legacy = '/opt/svc/system-controller/etc/svc_sc_settings.json'
    expect(lab.settings()?.path).toBe(legacy)
    const endpoints = /^SVC_TCP_ENDPOINTS=(.*)$/m.exec(lab.env('pipeline'))?.[1]
    expect(endpoints).toBeTruthy()
    const run = await lab.svcops(['upgrade', 'live', '--to', '7.0.0', '--yes', '--ack', gateIds(lab.live(), '3.0.0', '7.0.0').join(',')])
    expect(run.code).toBe(0)
    expect(Object.values(lab.versions())).toEqual(['7.0.0', '7.0.0', '7.0.0', '7.0.0'])
    expect(lab.settings()).toEqual({ path: '/etc/opt/svc/svc_sc_settings.json', json: expect.objectContaining({ psk }) as unknown })
    expect(lab.read(legacy)).toBeUndefined()
    expect(lab.env('pipeline')).toContain(`SVC_TCP_ENDPOINT=${endpoints}\n`)
    expect(lab.env('pipeline')).not.toContain('SVC_TCP_ENDPOINTS')
    expect((await lab.controller('/api/v3/status')).body).toEqual({ version: '7.0.0', status: 'ok' })
    expect((await lab.controller('/api/v2/status')).status).toBe(404)
    const components = (await lab.controller('/api/v3/components')).body as Array<{ name: string; connected: boolean; version: string }>
    for (const c of CONNECTING) expect(components.find((x) => x.name === c)).toMatchObject({ connected: true, version: '7.0.0' })
    const verify = await lab.svcops(['verify', 'live', '--json'])
    expect(verify.code, verify.stdout).toBe(0)
    expect(verify.stdout).toContain('svc_video_frames_in_queue')
    expect(verify.stdout).toContain('svc_ingest_source_dropped_audio_frames')
  })

  it('shows no PSK in any output, journal or report', () => {
    const psks = lab.psks()
    expect(psks.length).toBeGreaterThan(0)
    for (const text of lab.everythingPrinted()) for (const psk of psks) expect(text.includes(psk)).toBe(false)
  })
})
