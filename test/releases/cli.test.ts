/**
 * The release commands run as a user runs them: `node bin/svcops ...`, exit codes and --json. Each
 * exit code (0, 1, 2, 5) and stdin are read from a real process; the other answers from the same
 * command in the test's worker (runSvcopsInProcess), which has the release modules loaded.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { runSvcops, runSvcopsInProcess, type CliRun } from '../support/cli.ts'

const dir = mkdtempSync(join(tmpdir(), 'svcops-releases-cli-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

type Run = CliRun
const svcops = runSvcops
const inProcess = runSvcopsInProcess

const json = (run: Run): Record<string, unknown> => JSON.parse(run.stdout) as Record<string, unknown>

describe('release commands end to end', () => {
  it.concurrent('plan live: --json plan, exit 0; downgrade exit 2 with one sentence', async () => {
    const [ok, down] = await Promise.all([
      svcops(['plan', 'live', '--from', '3.2.0', '--to', '7.0.0', '--json']),
      svcops(['plan', 'live', '--from', '7.0.0', '--to', '6.0.0']),
    ])
    expect(ok.code).toBe(0)
    expect(json(ok)).toMatchObject({ ok: true, releases: ['4.0.0', '5.0.0', '6.0.0', '7.0.0'] })
    expect(down.code).toBe(2)
    expect(down.stderr).toMatch(/^svcops: --from 7\.0\.0 is newer than --to 6\.0\.0/)
  })

  it.concurrent('takes the product prefix and folder from the environment file', async () => {
    const stack = join(dir, 'Pulumi.acme.yaml')
    writeFileSync(stack, 'config:\n  svcops:product:\n    prefix: acme\n    dir: acme-live\n')
    const run = await inProcess(['plan', 'live', '--stack-file', stack, '--from', '5.0.0', '--to', '6.0.0'])
    expect(run.code).toBe(0)
    expect(run.stdout).toContain('`ACME_TCP_ENDPOINTS` is renamed `ACME_TCP_ENDPOINT`')
    expect(run.stdout).toContain('`/etc/opt/acme-live`')
    expect(run.stdout).not.toMatch(/SVC_|svc_/)
  })

  it.concurrent(
    'scan sdk: exit 5 (findings that need a person) with file:line:column on findings, 0 when clean, 2 on a bad version',
    async () => {
      const src = join(dir, 'scan')
      const { mkdirSync } = await import('node:fs')
      mkdirSync(src)
      writeFileSync(join(src, 'engine.cpp'), '// mPTS\nauto t = frame.mPTS;\n')
      const [found, clean, bad] = await Promise.all([
        svcops(['scan', 'sdk', src, '--from', '1.0.0', '--to', '2.0.0']),
        inProcess(['scan', 'sdk', src, '--from', '2.0.0', '--to', '7.0.0', '--json']),
        inProcess(['scan', 'sdk', src, '--from', 'x', '--to', '2.0.0']),
      ])
      expect(found.code).toBe(5)
      expect(found.stdout).toContain('engine.cpp:2:16: 2.0.0 mPTS -> mCaptureTimestamp or mRenderingTimestamp (2.0.0/mpts)')
      expect(clean.code).toBe(0)
      expect(json(clean)).toMatchObject({ ok: true, findings: [], files: 1 })
      expect(bad.code).toBe(2)
    },
  )

  it.concurrent('migrate requests: writes --out, names rules, exit 5 when a call is untranslatable', async () => {
    const calls = join(dir, 'calls.yaml')
    writeFileSync(
      calls,
      '- name: create stream\n  method: POST\n  path: /api/v2/streams\n  body: { source_id: cam-1 }\n- method: POST\n  path: /api/v2/pipelines/p1/multiviews\n  body: { ip: 10.0.0.1, port: 9000 }\n',
    )
    const out = join(dir, 'calls-4.yaml')
    const run = await svcops(['migrate', 'requests', '--from', '3.0.0', '--to', '4.0.0', calls, '--out', out, '--json'])
    expect(run.code).toBe(5)
    expect(json(run)).toMatchObject({ ok: false, translated: 1, untranslatable: 1 })
    const written = readFileSync(out, 'utf8')
    expect(written).toContain('audio_format: AAC-LC')
    expect(written).toContain('rule: 4.0.0/local-remote-address')
  })

  it.concurrent('migrate metrics: diff by default, --write in place, exit 0', async () => {
    const rules = join(dir, 'rules.yaml')
    const text = 'groups:\n  - name: q\n    rules:\n      - alert: Q\n        expr: svc_pipeline_queueing_video_frames > 5 # deep queue\n'
    writeFileSync(rules, text)
    const diff = await inProcess(['migrate', 'metrics', '--from', '3.0.0', '--to', '4.0.0', rules])
    expect(diff.code).toBe(0)
    expect(diff.stdout).toContain('+        expr: svc_pipeline_video_frames_in_queue > 5 # deep queue')
    expect(readFileSync(rules, 'utf8')).toBe(text)
    const write = await inProcess(['migrate', 'metrics', '--from', '3.0.0', '--to', '4.0.0', rules, '--write', '--json'])
    expect(write.code).toBe(0)
    expect(json(write)).toMatchObject({ ok: true, written: true })
    expect(readFileSync(rules, 'utf8')).toBe(text.replace('queueing_video_frames', 'video_frames_in_queue'))
  })

  it.concurrent('migrate env: refuses several endpoints with exit 5 and writes nothing; never prints the PSK', async () => {
    const env = join(dir, 'engine.env')
    const psk = 'Zq8vN3xR7kT2mW9pL4sH6jB1fD5gC0yXa7Qe'
    const text = `SVC_TCP_ENDPOINTS=a:7000,b:7001\nSVC_SYSTEM_CONTROLLER_PSK=${psk}\n`
    writeFileSync(env, text)
    const run = await inProcess(['migrate', 'env', '--from', '5.0.0', '--to', '6.0.0', env, '--write', '--json'])
    expect(run.code).toBe(5)
    expect(json(run)).toMatchObject({ ok: false, written: false })
    expect(run.stdout).toContain('lists 2 endpoints (a:7000, b:7001)')
    expect(run.stdout + run.stderr).not.toContain(psk)
    expect(readFileSync(env, 'utf8')).toBe(text)
  })

  it.concurrent('psk generate --out makes a 0600 file and prints no key; psk check reads stdin or an env var, never argv', async () => {
    const file = join(dir, 'psk')
    const gen = await svcops(['psk', 'generate', '--out', file])
    expect(gen.code).toBe(0)
    const key = readFileSync(file, 'utf8').trim()
    expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(gen.stdout).not.toContain(key)
    const [good, weak, fromEnv, again] = await Promise.all([
      svcops(['psk', 'check', '--json'], { input: `${key}\n` }),
      svcops(['psk', 'check'], { input: 'password-password-password\n' }),
      inProcess(['psk', 'check', '--env-var', 'TEST_PSK', '--json'], { env: { TEST_PSK: key } }),
      inProcess(['psk', 'generate', '--out', file]),
    ])
    expect(good.code).toBe(0)
    expect(json(good)).toMatchObject({ ok: true, threshold: 128 })
    expect(good.stdout).not.toContain(key)
    expect(weak.code).toBe(2)
    expect(weak.stdout).toMatch(/dictionary word/)
    expect(weak.stdout).not.toContain('password-password-password')
    expect(fromEnv.code).toBe(0)
    expect(again.code).toBe(2)
    expect(again.stderr).toMatch(/already exists/)
  })
})
