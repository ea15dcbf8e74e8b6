/**
 * The configuration review copies what changed between the active config and the package's new
 * default into the journal, report.json (= --json) and report.md. Secrets the redaction layer does
 * not know — credentials in URLs, nested and array values under harmless-looking names — must not
 * reach any of them; changed key paths do.
 */
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { local } from '../../src/core/runner.ts'
import { recordingDescription } from '../../src/recording/recording-description.ts'
import { Journal } from '../../src/runs/journal.ts'
import { newRunId } from '../../src/runs/run-record.ts'
import { writeReport } from '../../src/reports/report.ts'
import { reviewConfig, withoutCredentials, type ConfigReview } from '../../src/recording/hosts/config-review.ts'

const SECRETS = [
  'media-api-pass-Zq81', // mediaApi.baseUrl user:password@
  'nested-cred-Vt55', // mediaApi.auth.credential
  'array-secret-Lk02', // mediaApi.headers[1].value
  'query-token-Pp33', // auth.jwksUrl ?access=...
  'db-secret-value-Hh71', // database.password (the old mask caught this one)
  'default-cred-Rr09', // in the new default
]

describe('configuration review that cannot leak', () => {
  let dir: string
  let review: ConfigReview

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svcops-review-'))
    const root = join(dir, 'host')
    mkdirSync(join(root, 'etc/opt/svc'), { recursive: true })
    const active = {
      listen: { port: 9000 },
      database: { host: 'db', name: 'recordings', user: 'recorder', password: 'db-secret-value-Hh71' },
      auth: { jwksUrl: 'https://manager.example.net/.well-known/jwks.json?access=query-token-Pp33', issuer: 'https://manager.example.net' },
      mediaApi: {
        baseUrl: 'https://media:media-api-pass-Zq81@media.example.net/api',
        auth: { credential: 'nested-cred-Vt55' },
        headers: [
          { name: 'X-Trace', value: 'on' },
          { name: 'X-Api', value: 'array-secret-Lk02' },
        ],
      },
      oldCache: 5,
    }
    const dflt = {
      listen: { port: 8090 },
      database: { host: 'db', name: 'recordings', user: 'recorder', password: 'default-cred-Rr09' },
      auth: { jwksUrl: 'https://manager.example.net/.well-known/jwks.json', issuer: 'https://manager.example.net' },
      mediaApi: { baseUrl: 'https://media.example.net/api', auth: { credential: 'changeme' }, headers: [] },
      logLevel: 'info',
    }
    writeFileSync(join(root, 'etc/opt/svc/recording.json'), JSON.stringify(active, null, 2))
    writeFileSync(join(root, 'etc/opt/svc/recording.json.dpkg-dist'), JSON.stringify(dflt, null, 2))
    review = await reviewConfig(local, { name: 'rec-1', root }, '/etc/opt/svc/recording.json', ['.dpkg-dist'])
  })
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true })
  })

  it('records changed key paths, shows allow-listed values, and masks every other value', () => {
    expect(review.newDefaults).toHaveLength(1)
    expect(review.newDefaults[0]?.diff.split('\n')).toEqual([
      '~  "auth.jwksUrl": "https://manager.example.net/.well-known/jwks.json?access=masked" -> "https://manager.example.net/.well-known/jwks.json"',
      '~  "database.password": changed [masked]',
      '~  "listen.port": 9000 -> 8090',
      '+  "logLevel": "info"',
      '~  "mediaApi.auth.credential": changed [masked]',
      '~  "mediaApi.baseUrl": "https://media.example.net/api" (changed in masked parts: credentials or query)',
      '+  "mediaApi.headers": [masked]',
      '-  "mediaApi.headers[0].name": [masked]',
      '-  "mediaApi.headers[0].value": [masked]',
      '-  "mediaApi.headers[1].name": [masked]',
      '-  "mediaApi.headers[1].value": [masked]',
      '-  "oldCache": [masked]',
    ])
    expect(review.obsoleteOptions).toContain('oldCache')
  })

  it('keeps every secret out of the journal, report.json (what --json prints) and report.md', () => {
    const runs = join(dir, 'runs')
    const id = newRunId()
    const journal = Journal.create(
      {
        id,
        kind: 'upgrade',
        system: 'recording',
        environment: 'test',
        envFile: 'test.yaml',
        targetVersion: '2.0.0',
        params: { previousVersions: { 'rec-1': '1.5.0' }, hosts: ['rec-1'], batchSize: 1, maxFail: '0' },
        autoRollback: true,
        phase: 'succeeded',
        startedAt: new Date().toISOString(),
        holder: 'test',
        pid: process.pid,
      },
      runs,
    )
    journal.append({ step: 'review-config', host: 'rec-1', status: 'ok', data: { review }, report: 'config-review' })
    writeReport(journal, recordingDescription)
    const files = readdirSync(join(runs, id))
    expect(files.sort()).toEqual(['journal.jsonl', 'report.html', 'report.json', 'report.md', 'run.json'])
    const everything = files.map((f) => readFileSync(join(runs, id, f), 'utf8')).join('\n')
    expect(everything).toContain('mediaApi.auth.credential')
    // The review reaches every report (the changed path is shown, its value is not).
    for (const report of ['report.md', 'report.html'])
      expect(readFileSync(join(runs, id, report), 'utf8')).toContain('mediaApi.auth.credential')
    for (const secret of SECRETS) expect(everything).not.toContain(secret)
  })

  it('names the place of a JSON error without quoting the file', async () => {
    const root = join(dir, 'broken')
    mkdirSync(join(root, 'etc/opt/svc'), { recursive: true })
    writeFileSync(join(root, 'etc/opt/svc/recording.json'), '{\n  "database": { "password": "broken-secret-Xy12" x }\n}')
    const broken = await reviewConfig(local, { name: 'rec-1', root }, '/etc/opt/svc/recording.json', ['.dpkg-dist'])
    expect(broken.syntaxOk).toBe(false)
    expect(broken.syntaxError).toBe('/etc/opt/svc/recording.json is not valid JSON: error at line 2, column 50')
    expect(JSON.stringify(broken)).not.toContain('broken-secret')
  })

  it('drops user:password@ from URLs and masks query values', () => {
    expect(withoutCredentials('https://u:p@h.example/x?token=abc&x=1')).toBe('https://h.example/x?token=masked&x=masked')
    expect(withoutCredentials('plain value')).toBe('plain value')
  })
})
