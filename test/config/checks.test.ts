/**
 * `svcops:live.checks` and `svcops:live.uuids` as a stack gives them (src/config/checks.ts): a
 * check has exactly one provider, only known placeholders, a metric a name with its value or the
 * release's names; names are unique; every UUID names an instance of the section; on Kubernetes no
 * command check. Each refusal is one sentence naming the field.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parse as parseYaml } from 'yaml'
import { describe, expect, it } from 'vitest'
import { parseEnvironment } from '../../src/config/load.ts'
import { BadInputError } from '../../src/core/errors.ts'

const ports = { 'system-controller': 9100, ingest: 9101, pipeline: 9102, 'control-panel': 9103 }
const live = (fields: Record<string, unknown>): Record<string, unknown> => ({
  'svcops:live': {
    version: '6.2.0',
    controllerUrl: 'http://127.0.0.1:8080',
    host: { name: 'live-1', transport: 'local' },
    metricsPorts: ports,
    ...fields,
  },
})
const load = (fields: Record<string, unknown>) => parseEnvironment(live(fields), 'test', 'Pulumi.test.yaml')
const UUID = '6f1c2a9e-3b4d-4e5f-8a6b-7c8d9e0f1a2b'

describe('svcops:live.checks and svcops:live.uuids', () => {
  it('accepts a check of each provider with placeholders, and a UUID per instance', () => {
    const env = load({
      uuids: { ingest: UUID },
      checks: [
        { name: 'listed', components: ['ingest'], web: { path: '{api}/components', contains: { name: '{unit}', connected: true } } },
        { name: 'connected', metric: { name: '{product}_controller_connected', equals: 1 } },
        { name: 'names', metric: { releaseNames: true } },
        { name: 'env file', command: { argv: ['test', '-s', '{root}/etc/default/{product}-{component}'] } },
      ],
    })
    const section = env.live as unknown as { checks: Array<{ web?: { target: string; status: number } }>; uuids: Record<string, string> }
    expect(section.checks[0]?.web).toMatchObject({ target: 'controller', status: 200 })
    expect(section.uuids).toEqual({ ingest: UUID })
  })

  const refused: [string, Record<string, unknown>, RegExp][] = [
    [
      'two providers',
      { checks: [{ name: 'x', web: { path: '/a' }, metric: { releaseNames: true } }] },
      /live\.checks\[0\].*expected exactly one provider: web, metric or command/,
    ],
    ['no provider', { checks: [{ name: 'x' }] }, /live\.checks\[0\].*expected exactly one provider/],
    [
      'an unknown placeholder',
      { checks: [{ name: 'x', web: { path: '{api}/ingests/{id}' } }] },
      /live\.checks\[0\]\.web\.path.*expected only the placeholders \{api\}/,
    ],
    [
      'a metric name without its value',
      { checks: [{ name: 'x', metric: { name: 'svc_up' } }] },
      /live\.checks\[0\]\.metric.*expected name with equals, or releaseNames: true/,
    ],
    [
      'a name given twice',
      {
        checks: [
          { name: 'x', metric: { releaseNames: true } },
          { name: 'x', metric: { releaseNames: true } },
        ],
      },
      /live\.checks\[1\]\.name.*'x' is given twice/,
    ],
    ['a UUID of no instance', { uuids: { 'live-2/ingest': UUID } }, /live\.uuids\.live-2\/ingest.*'live-2\/ingest' is none/],
    ['a UUID that is not one', { uuids: { ingest: 'abc' } }, /live\.uuids\.ingest.*expected a UUID/],
    [
      'an environment file that is not an absolute path',
      { envFiles: { pipeline: 'pipeline.env' } },
      /live\.envFiles\.pipeline.*expected an absolute file path/,
    ],
    ['an environment file of no component type', { envFiles: { recorder: '/etc/opt/svc/recorder.env' } }, /live\.envFiles/],
  ]
  for (const [what, fields, message] of refused)
    it(`refuses ${what} in one sentence naming the field`, () => {
      const error = (() => {
        try {
          load(fields)
        } catch (e) {
          return e
        }
        return undefined
      })()
      expect(error).toBeInstanceOf(BadInputError)
      expect((error as Error).message).toMatch(message)
    })
})

describe('svcops:live.checks and svcops:live.uuids on Kubernetes (live.platform kubernetes)', () => {
  // The shipped prod stack (svcops:deploy with the live components), its live section replaced.
  const prod = (
    parseYaml(readFileSync(join(import.meta.dirname, '../../stacks/Pulumi.prod.yaml'), 'utf8')) as { config: Record<string, unknown> }
  ).config
  const cluster = (fields: Record<string, unknown>) =>
    parseEnvironment({ ...prod, 'svcops:live': { platform: 'kubernetes', ...fields } }, 'test', 'Pulumi.test.yaml')
  const message = (fields: Record<string, unknown>): string => {
    try {
      cluster(fields)
    } catch (e) {
      expect(e).toBeInstanceOf(BadInputError)
      return (e as Error).message
    }
    return ''
  }

  it('takes web and metric checks and a UUID per Deployment', () => {
    const env = cluster({
      uuids: { pipeline: UUID },
      checks: [
        { name: 'answers', components: ['system-controller'], web: { path: '{api}/status' } },
        { name: 'names', metric: { releaseNames: true } },
      ],
    })
    expect(env.live).toMatchObject({ uuids: { pipeline: UUID }, checks: [{ name: 'answers' }, { name: 'names' }] })
  })

  it('refuses a command check in one sentence: there is no host to run it on', () => {
    expect(message({ checks: [{ name: 'env file', command: { argv: ['test', '-s', '/etc/default/svc-ingest'] } }] })).toMatch(
      /live\.checks\[0\]\.command.*'env file' is a command check, which runs on a host; live\.platform kubernetes has none: declare a web or metric check instead/,
    )
  })

  it('refuses a UUID of no Deployment, naming the names it takes', () => {
    expect(message({ uuids: { 'live-2/ingest': UUID } })).toMatch(/live\.uuids.*expected the names ingest, pipeline and control-panel/)
  })
})

describe('svcops:recording.checks on Kubernetes (recording.platform kubernetes)', () => {
  // The shipped prod stack (the recording service's Deployment), its recording checks replaced.
  const prod = (
    parseYaml(readFileSync(join(import.meta.dirname, '../../stacks/Pulumi.prod.yaml'), 'utf8')) as {
      config: Record<string, Record<string, unknown>>
    }
  ).config
  const cluster = (checks: unknown[]) =>
    parseEnvironment({ ...prod, 'svcops:recording': { ...prod['svcops:recording'], checks } }, 'test', 'Pulumi.test.yaml')

  it('takes web and metric checks', () => {
    const env = cluster([
      { name: 'answers', web: { path: '/status' } },
      { name: 'up', metric: { name: '{product}_up', equals: 1 } },
    ])
    expect(env.recording?.checks.map((c) => c.name)).toEqual(['answers', 'up'])
  })

  it('refuses a command check when the stack loads, in one sentence: there is no host to run it on', () => {
    const error = (() => {
      try {
        cluster([
          { name: 'answers', web: { path: '/status' } },
          { name: 'its configuration file', command: { argv: ['test', '-s', '/etc/opt/svc/recording.json'] } },
        ])
      } catch (e) {
        return e
      }
      return undefined
    })()
    expect(error).toBeInstanceOf(BadInputError)
    expect((error as Error).message).toMatch(
      /recording\.checks\[1\]\.command.*'its configuration file' is a command check, which runs on a host; recording\.platform kubernetes has none: declare a web or metric check instead/,
    )
  })
})
