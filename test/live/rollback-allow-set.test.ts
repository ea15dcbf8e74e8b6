/**
 * What a live rollback may put back or remove, as a specification: the files come from the stack
 * and the release knowledge (`configFilesOf`), never from the run's journal, and the backup step's
 * entry is followed only when its shape (live-step-data.ts) and every file it names are those the
 * stack defines. Each bad entry is refused with one sentence naming it. The end-to-end attack on a
 * lab host is test/live/forged-journal.test.ts.
 */
import { describe, expect, it } from 'vitest'
import { liveHostsSchema } from '../../src/config/schema.ts'
import { BadInputError } from '../../src/core/errors.ts'
import { assertRestorable, configFilesOf } from '../../src/live/hosts/live-host-config.ts'
import { backupFiles } from '../../src/live/live-steps.ts'
import { stepData } from '../../src/runs/step.ts'

const PORTS = { 'system-controller': 9100, ingest: 9101, pipeline: 9102, 'control-panel': 9103 }
const oneHost = liveHostsSchema.parse({
  version: '5.2.0',
  host: { name: 'live-1' },
  controllerUrl: 'http://127.0.0.1:8080',
  metricsPorts: PORTS,
})
const spread = liveHostsSchema.parse({
  version: '5.2.0',
  controllerUrl: 'http://127.0.0.1:8080',
  hosts: [
    { name: 'live-1', components: { 'system-controller': 9100 } },
    { name: 'live-2', components: { ingest: 9101, pipeline: 9102, 'control-panel': 9103 } },
  ],
})
const RUN = '20261202T010000Z-3fa9c1'
const SHA = 'a'.repeat(64)

/** The backup step's entry with `files`, read as a rollback reads it: its shape, then the stack's files. */
function follow(live: typeof oneHost, files: unknown[]): unknown {
  const data = stepData(backupFiles, { step: 'backup', data: { files } }, RUN)
  return assertRestorable(live, RUN, data)
}

function refusal(live: typeof oneHost, files: unknown[]): string {
  try {
    follow(live, files)
  } catch (error) {
    expect(error).toBeInstanceOf(BadInputError)
    return (error as Error).message
  }
  throw new Error('the entry was followed')
}

describe('the files a live rollback may touch, from the stack alone', () => {
  it('on one host: every place a release reads the settings file, and each component’s environment file', () => {
    expect(configFilesOf(oneHost)).toEqual([
      { host: 'live-1', path: '/etc/opt/svc/svc_sc_settings.json' },
      { host: 'live-1', path: '/var/opt/svc/system-controller/svc_sc_settings.json' },
      { host: 'live-1', path: '/opt/svc/system-controller/etc/svc_sc_settings.json' },
      { host: 'live-1', path: '/etc/default/svc-system-controller' },
      { host: 'live-1', path: '/etc/default/svc-ingest' },
      { host: 'live-1', path: '/etc/default/svc-pipeline' },
      { host: 'live-1', path: '/etc/default/svc-control-panel' },
    ])
  })

  it('across hosts: the settings file on the controller’s host, each environment file on the host of its instance', () => {
    expect(configFilesOf(spread).filter((f) => f.path.startsWith('/etc/default/'))).toEqual([
      { host: 'live-1', path: '/etc/default/svc-system-controller' },
      { host: 'live-2', path: '/etc/default/svc-ingest' },
      { host: 'live-2', path: '/etc/default/svc-pipeline' },
      { host: 'live-2', path: '/etc/default/svc-control-panel' },
    ])
    expect(
      new Set(
        configFilesOf(spread)
          .filter((f) => f.path.endsWith('.json'))
          .map((f) => f.host),
      ),
    ).toEqual(new Set(['live-1']))
  })

  it('a configured settings file and legacy directory are part of it', () => {
    const custom = liveHostsSchema.parse({
      version: '5.2.0',
      host: { name: 'live-1' },
      controllerUrl: 'http://127.0.0.1:8080',
      metricsPorts: PORTS,
      settingsFile: '/srv/svc/settings.json',
      legacySettingsDir: '/srv/legacy',
    })
    const paths = configFilesOf(custom).map((f) => f.path)
    expect(paths).toContain('/srv/svc/settings.json')
    expect(paths).toContain('/srv/legacy/svc_sc_settings.json')
    expect(paths).not.toContain('/opt/svc/system-controller/etc/svc_sc_settings.json')
  })
})

describe('the backup step’s entry, as a rollback follows it', () => {
  it('follows what the backup step writes: files of the stack, copies in the run folder, checksums', () => {
    const files = [
      {
        path: '/opt/svc/system-controller/etc/svc_sc_settings.json',
        existed: true,
        backup: 'backup/opt__svc__system-controller__etc__svc_sc_settings.json',
        sha256: SHA,
      },
      { path: '/etc/opt/svc/svc_sc_settings.json', existed: false },
      { path: '/etc/default/svc-ingest', existed: true, backup: 'backup/etc__default__svc-ingest', sha256: SHA },
    ]
    expect(follow(oneHost, files)).toEqual(files)
    expect(follow(spread, [{ host: 'live-2', path: '/etc/default/svc-ingest', existed: false }])).toHaveLength(1)
  })

  // Each bad entry, and the sentence that refuses it: the run, the step, the entry and what is wrong.
  const bad: Array<[string, typeof oneHost, unknown, string]> = [
    [
      'a path that climbs out of a file of the stack',
      oneHost,
      { path: '/etc/default/../../tmp/authorized_keys', existed: true, backup: 'backup/x', sha256: SHA },
      `Run ${RUN}: the journal's entry of step backup is refused: files.0 (/etc/default/../../tmp/authorized_keys): the path '/etc/default/../../tmp/authorized_keys' is not a settings or environment file the stack defines on live-1; svcops does not follow it.`,
    ],
    [
      'a path the stack does not define',
      oneHost,
      { path: '/root/.ssh/authorized_keys', existed: false },
      `Run ${RUN}: the journal's entry of step backup is refused: files.0 (/root/.ssh/authorized_keys): the path '/root/.ssh/authorized_keys' is not a settings or environment file the stack defines on live-1; svcops does not follow it.`,
    ],
    [
      'a host the stack does not name',
      spread,
      { host: 'elsewhere', path: '/etc/default/svc-ingest', existed: false },
      `Run ${RUN}: the journal's entry of step backup is refused: files.0 (elsewhere:/etc/default/svc-ingest): the host 'elsewhere' is not one svcops:live names; svcops does not follow it.`,
    ],
    [
      'a file of the stack on another of its hosts',
      spread,
      { host: 'live-1', path: '/etc/default/svc-ingest', existed: false },
      `Run ${RUN}: the journal's entry of step backup is refused: files.0 (live-1:/etc/default/svc-ingest): the path '/etc/default/svc-ingest' is not a settings or environment file the stack defines on live-1; svcops does not follow it.`,
    ],
    [
      'a copy outside the run’s backup folder',
      oneHost,
      { path: '/etc/default/svc-ingest', existed: true, backup: 'backup/../../../../home/operator/.pgpass', sha256: SHA },
      `Run ${RUN}: the journal's entry of step backup is refused: data.files.0.backup: expected backup/NAME, a plain file name in the run's backup folder (no '/', no '..'); svcops did not write it so, and does not follow it.`,
    ],
    [
      'the backup folder itself climbed out of',
      oneHost,
      { path: '/etc/default/svc-ingest', existed: true, backup: 'backup/..', sha256: SHA },
      `Run ${RUN}: the journal's entry of step backup is refused: data.files.0.backup: expected backup/NAME, a plain file name in the run's backup folder (no '/', no '..'); svcops did not write it so, and does not follow it.`,
    ],
    [
      'an absolute copy',
      oneHost,
      { path: '/etc/default/svc-ingest', existed: true, backup: '/etc/shadow', sha256: SHA },
      `Run ${RUN}: the journal's entry of step backup is refused: data.files.0.backup: expected backup/NAME, a plain file name in the run's backup folder (no '/', no '..'); svcops did not write it so, and does not follow it.`,
    ],
    [
      'a copy without its checksum',
      oneHost,
      { path: '/etc/default/svc-ingest', existed: true, backup: 'backup/etc__default__svc-ingest' },
      `Run ${RUN}: the journal's entry of step backup is refused: data.files.0.sha256: expected the SHA-256 of its copy for a file that existed; svcops did not write it so, and does not follow it.`,
    ],
    [
      'a checksum that is not one',
      oneHost,
      { path: '/etc/default/svc-ingest', existed: true, backup: 'backup/etc__default__svc-ingest', sha256: 'yes' },
      `Run ${RUN}: the journal's entry of step backup is refused: data.files.0.sha256: expected 64 lower-case hex digits; svcops did not write it so, and does not follow it.`,
    ],
    [
      'a wrongly typed field',
      oneHost,
      { path: '/etc/default/svc-ingest', existed: 'yes' },
      `Run ${RUN}: the journal's entry of step backup is refused: data.files.0.existed: Invalid input: expected boolean, received string; svcops did not write it so, and does not follow it.`,
    ],
  ]
  it.each(bad)('refuses %s, naming the entry', (_what, live, entry, sentence) => {
    expect(refusal(live, [entry])).toBe(sentence)
  })

  it('on Kubernetes: follows the stack file’s values it kept, refuses a value that is not one line', () => {
    const kept = { stackFile: { version: '6.2.0', pskRotation: `svcops-${RUN}` } }
    expect(stepData(backupFiles, { step: 'backup', data: kept }, RUN)).toEqual(kept)
    expect(() =>
      stepData(backupFiles, { step: 'backup', data: { stackFile: { version: '6.2.0', pskRotation: 'x\n--yes' } } }, RUN),
    ).toThrow(
      `Run ${RUN}: the journal's entry of step backup is refused: data.stackFile.pskRotation: expected one line of text without control characters; svcops did not write it so, and does not follow it.`,
    )
  })

  it('refuses the whole entry when one file of it is bad: nothing of it is followed', () => {
    const good = { path: '/etc/default/svc-ingest', existed: true, backup: 'backup/etc__default__svc-ingest', sha256: SHA }
    expect(refusal(oneHost, [good, good, { path: '/tmp/victim', existed: false }])).toMatch(/files\.2 \(\/tmp\/victim\)/)
  })
})
