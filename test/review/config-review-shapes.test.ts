/**
 * The configuration review masks by shape as well as by list. Generated secrets are planted in the
 * shapes that slipped through a name list — a URL with credentials behind a leading or trailing
 * space, a `#access_token=` fragment, a scheme-less `//user:PASS@nas/share`, a token in a URL path
 * (by its shape, or after a `token`/`keys` segment), and key names under maps that are not on the
 * allow-list (`apiKeys.<key>`, a token-shaped key anywhere) — on paths whose values the review
 * shows. Real files on this machine go through the real review, the journal, the reports and
 * `svcops runs show --json`: no secret is in any of them, while every changed path still is.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { local } from '../../src/core/runner.ts'
import { Journal } from '../../src/runs/journal.ts'
import { newRunRecord } from '../../src/runs/run-record.ts'
import { recordingDescription } from '../../src/recording/recording-description.ts'
import { emptyRecordingParams } from '../../src/recording/recording-params.ts'
import { writeReport } from '../../src/reports/report.ts'
import { reviewConfig, shownString, withoutCredentials } from '../../src/recording/hosts/config-review.ts'
import { runSvcops } from '../support/cli.ts'
import { random } from '../support/random.ts'

const LETTERS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'
const DIGITS = '0123456789'

/** A secret of 16 to 40 characters with at least four letters and four digits, shuffled. */
function token(next: () => number, extra = ''): string {
  const pick = (from: string) => from[Math.floor(next() * from.length)] as string
  const chars = [...Array.from({ length: 4 }, () => pick(LETTERS)), ...Array.from({ length: 4 }, () => pick(DIGITS))]
  for (let n = 8 + Math.floor(next() * 28); n > 0; n--) chars.push(pick(LETTERS + DIGITS + extra))
  for (let i = chars.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1))
    ;[chars[i], chars[j]] = [chars[j] as string, chars[i] as string]
  }
  return chars.join('')
}

/** Any short word: only its place (after a `token` segment, in a fragment) makes it a secret. */
function word(next: () => number): string {
  return Array.from({ length: 8 + Math.floor(next() * 8) }, () => LETTERS[Math.floor(next() * 26)]).join('')
}

interface Case {
  active: Record<string, unknown>
  secrets: string[]
}

/** One active config with a secret in every shape, on allow-listed paths and under secret-named maps. */
function generateCase(next: () => number): Case {
  const s = {
    spaced: token(next, '!*()._~-'),
    trailing: token(next, '!*()._~-'),
    fragment: word(next),
    schemeLess: token(next, '!*._~-'),
    inPath: token(next, '_-'),
    afterWord: word(next),
    apiKey: token(next, '_'),
    keyName: token(next, '_'),
  }
  const pad = [' ', '  ', '\t', ' \n'][Math.floor(next() * 4)] as string
  const active = {
    listen: { port: 9000 },
    auth: {
      jwksUrl: `${pad}https://svcops:${s.spaced}@manager.example.net/.well-known/jwks.json`,
      issuer: `https://reader:${s.trailing}@manager.example.net${pad}`,
    },
    mediaApi: {
      baseUrl: `https://media.example.net/callback#access_token=${s.fragment}&state=1`,
      apiKeys: { [s.apiKey]: 'prod' },
      extra: { [s.keyName]: true },
    },
    storage: {
      path: `https://hooks.example.net/services/T01/B02/${s.inPath}`,
      locations: [
        { name: 'nas', path: `//recorder:${s.schemeLess}@nas.example.net/share` },
        { name: 'api', path: `https://api.example.net/v1/token/${s.afterWord}/recordings` },
      ],
    },
  }
  return { active, secrets: Object.values(s) }
}

const DEFAULT = {
  listen: { port: 8090 },
  auth: { jwksUrl: 'https://manager.example.net/.well-known/jwks.json', issuer: 'https://manager.example.net' },
  mediaApi: { baseUrl: 'https://media.example.net/api', apiKeys: {}, extra: {} },
  storage: { path: '/srv/recordings', locations: [{ name: 'local', path: '/srv/recordings' }] },
  logLevel: 'info',
}

const CASES = 40

describe('configuration review masks by shape', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcops-review-shapes-'))
  const runs = join(dir, 'runs')
  const cases: Case[] = []
  let journal: Journal

  beforeAll(async () => {
    const next = random(27)
    const hosts = Array.from({ length: CASES }, (_, i) => `rec-${i + 1}`)
    journal = Journal.create(
      newRunRecord({
        kind: 'upgrade',
        system: 'recording',
        environment: 'test',
        envFile: '/nonexistent/Pulumi.test.yaml',
        params: { ...emptyRecordingParams(), hosts },
      }),
      runs,
    )
    for (const host of hosts) {
      const c = generateCase(next)
      cases.push(c)
      const root = join(dir, host)
      mkdirSync(join(root, 'etc/opt/svc'), { recursive: true })
      writeFileSync(join(root, 'etc/opt/svc/recording.json'), JSON.stringify(c.active, null, 2))
      writeFileSync(join(root, 'etc/opt/svc/recording.json.dpkg-dist'), JSON.stringify(DEFAULT, null, 2))
      const review = await reviewConfig(local, { name: host, root }, '/etc/opt/svc/recording.json', ['.dpkg-dist'])
      journal.append({ step: 'review-config', host, status: 'ok', data: { review }, report: 'config-review' })
    }
    journal.update({ phase: 'succeeded', finishedAt: new Date().toISOString() })
    writeReport(journal, recordingDescription)
  })

  it('no generated secret is in the journal, report.md, report.html, report.json or runs show --json', async () => {
    const shown = await runSvcops(['runs', 'show', journal.run.id, '--json'], { env: { SVCOPS_RUNS_DIR: runs, SVCOPS_ENV: '' } })
    expect(shown.code, shown.stderr).toBe(0)
    const outputs: Record<string, string> = { 'runs show --json': shown.stdout }
    for (const f of readdirSync(journal.dir)) outputs[f] = readFileSync(join(journal.dir, f), 'utf8')
    expect(Object.keys(outputs).sort()).toEqual([
      'journal.jsonl',
      'report.html',
      'report.json',
      'report.md',
      'run.json',
      'runs show --json',
    ])
    const leaks: string[] = []
    for (const [i, c] of cases.entries())
      for (const secret of c.secrets)
        for (const [where, text] of Object.entries(outputs))
          if (text.includes(secret) || text.includes(encodeURIComponent(secret))) leaks.push(`rec-${i + 1}: ${secret} in ${where}`)
    expect(leaks).toEqual([])
    // The review still says what changed, path by path.
    const md = outputs['report.md'] ?? ''
    for (const line of [
      '"auth.jwksUrl": changed [masked]',
      '"auth.issuer": changed [masked]',
      '"storage.path": "https://hooks.example.net/services/T01/B02/masked" -> "/srv/recordings"',
      '"mediaApi.baseUrl": "https://media.example.net/callback#masked" -> "https://media.example.net/api"',
      '"storage.locations[0].path": "//nas.example.net/share" -> "/srv/recordings"',
      '"storage.locations[1].path": "https://api.example.net/v1/token/masked/recordings"',
      '"mediaApi.apiKeys.[masked]"',
      '"mediaApi.extra.[masked]"',
    ])
      expect(md).toContain(line)
  })

  it('keeps what is safe to show', () => {
    expect(shownString('https://manager.example.net/.well-known/jwks.json')).toBe('https://manager.example.net/.well-known/jwks.json')
    expect(shownString('/srv/recordings/2026-archive')).toBe('/srv/recordings/2026-archive')
    expect(shownString('recordings:read')).toBe('recordings:read')
    expect(withoutCredentials('//u:p@nas/share#x')).toBe('//nas/share#masked')
    expect(withoutCredentials('https://h.example/api/keys/abc/list')).toBe('https://h.example/api/keys/masked/list')
    expect(shownString(' https://u:p@h.example/')).toBe('[masked]')
  })
})
