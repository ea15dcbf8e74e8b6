/** The live lab's helpers the playbook relies on: paths, variable names, metric names, environment files, the section schema. */
import { describe, expect, it } from 'vitest'
import { liveHostsSchema } from '../../src/config/schema.ts'
import { controllerVariables } from '../../src/infra/systemController.ts'
import {
  controllerSettingsDirs,
  controllerUrlVariable,
  formatEnvFile,
  liveComponentPaths,
  liveMetricNames,
  livePackageFile,
  liveSettingsFile,
  parseEnvFile,
  pskHeader,
} from '../../src/lab/live/index.ts'

const product = { prefix: 'svc', dir: 'svc' }

describe('live host paths', () => {
  it('put each component under /opt/<dir>, its environment file in /etc/default and its log in /var/log/<dir>', () => {
    expect(liveComponentPaths({ prefix: 'acme', dir: 'acme-live' }, 'control-panel')).toEqual({
      code: '/opt/acme-live/control-panel',
      program: '/opt/acme-live/control-panel/main.mjs',
      envFile: '/etc/default/acme-control-panel',
      supervisor: '/etc/supervisor/conf.d/acme-control-panel.conf',
      log: '/var/log/acme-live/control-panel.log',
    })
    expect(livePackageFile('svc', 'system-controller', '6.0.0')).toBe('svc-system-controller_6.0.0_all.deb')
  })

  it('put the settings file in the former fixed directory before 6.0 and in /etc/opt/<dir> from 6.0', () => {
    expect(liveSettingsFile('5.2.0', product)).toBe('/opt/svc/system-controller/etc/svc_sc_settings.json')
    expect(liveSettingsFile('6.0.0', { prefix: 'acme', dir: 'acme' })).toBe('/etc/opt/acme/acme_sc_settings.json')
    expect(controllerSettingsDirs('5.2.0', product, '/srv/x')).toEqual(['/opt/svc/system-controller/etc'])
    expect(controllerSettingsDirs('7.0.0', product)).toEqual(['/var/opt/svc/system-controller', '/etc/opt/svc'])
    expect(controllerSettingsDirs('6.0.0', product, '/srv/x')).toEqual(['/srv/x', '/var/opt/svc/system-controller', '/etc/opt/svc'])
  })

  it('name the controller URL variable as the Pulumi program names it for images, and the PSK header after the prefix', () => {
    expect(controllerUrlVariable('acme')).toBe(controllerVariables('acme').url)
    expect(pskHeader('svc')).toBe('X-Svc-Psk')
  })
})

describe('live metric names', () => {
  it('follow the catalog: queueing_video_frames until 4.0, the ingest frame counters split from 6.0', () => {
    expect(liveMetricNames('3.0.0', 'pipeline', 'svc')).toEqual(['svc_queueing_video_frames'])
    expect(liveMetricNames('4.0.0', 'pipeline', 'svc')).toEqual(['svc_video_frames_in_queue'])
    expect(liveMetricNames('5.2.0', 'ingest', 'svc')).toEqual([
      'svc_ingest_source_dropped_frames',
      'svc_ingest_source_duplicated_frames',
      'svc_ingest_source_lost_frames',
    ])
    expect(liveMetricNames('6.0.0', 'ingest', 'acme')).toHaveLength(6)
    expect(liveMetricNames('6.0.0', 'ingest', 'acme')).toContain('acme_ingest_source_lost_video_frames')
    expect(liveMetricNames('7.0.0', 'control-panel', 'svc')).toEqual([])
  })
})

describe('live environment files', () => {
  it('read KEY=VALUE lines, comments, export and quotes as systemd does, and write what they read', () => {
    expect(parseEnvFile('# c\nexport A=1\nB="two words"\nC=\'x=y\'\n\nnot a line\nA=3\n')).toEqual({ A: '3', B: 'two words', C: 'x=y' })
    const vars = { SVC_SYSTEM_CONTROLLER_PSK: 'a$b`c"d', QUOTED: '"q"', SVC_SC_ARGS: '--settings-path /etc/opt/svc', EMPTY: '' }
    expect(parseEnvFile(formatEnvFile(vars, 'written by a test'))).toEqual(vars)
  })
})

describe('svcops:live schema', () => {
  const section = {
    version: '5.2.0',
    host: { name: 'live-1', root: '/tmp/r' },
    controllerUrl: 'http://127.0.0.1:4000',
    metricsPorts: { 'system-controller': 4001, ingest: 4002, pipeline: 4003, 'control-panel': 4004 },
  }
  it('fills the defaults the playbook reads', () => {
    expect(liveHostsSchema.parse(section)).toMatchObject({
      prefix: 'svc',
      productDir: 'svc',
      tcpEndpoints: [],
      sdkSourceDirs: [],
      metricFiles: [],
    })
  })
  it('refuses a PSK in the section and a metrics port of an unknown component', () => {
    expect(liveHostsSchema.safeParse({ ...section, psk: 'x' }).success).toBe(false)
    expect(liveHostsSchema.safeParse({ ...section, metricsPorts: { ...section.metricsPorts, mixer: 1 } }).success).toBe(false)
  })
})
