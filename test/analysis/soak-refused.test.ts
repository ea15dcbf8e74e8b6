/**
 * `upgrade live --soak` where no component type has a canary to judge is refused in one sentence
 * (exit 2), before anything is read of the system: on Kubernetes (the shipped `prod` stack), where
 * each type moves as one Deployment, and on hosts where every type runs one instance (the shipped
 * `example-hosts` stack with its second GPU host, and its UUIDs, taken out).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { ROOT, runSvcopsInProcess } from '../support/cli.ts'

const dir = mkdtempSync(join(tmpdir(), 'svcops-soak-refused-'))
const env = { SVCOPS_RUNS_DIR: join(dir, 'runs') }

describe('upgrade live --soak where no type has a canary', () => {
  it('is refused on Kubernetes, saying why, nothing run', async () => {
    const run = await runSvcopsInProcess(['upgrade', 'live', '--env', 'prod', '--to', '7.0.0', '--soak', '10m', '--dry-run'], { env })
    expect(run.code, run.stderr).toBe(2)
    expect(run.stderr).toMatch(
      /--soak: \S*Pulumi\.prod\.yaml runs the live system on Kubernetes, where each component type moves as one Deployment \(pulumi up\), so no type has a canary to soak/,
    )
    expect(run.stdout).toBe('')
  })

  it('is refused on hosts where every type runs one instance', async () => {
    const doc = parseYaml(readFileSync(join(ROOT, 'stacks/Pulumi.example-hosts.yaml'), 'utf8')) as {
      config: { 'svcops:live': { hosts: Array<{ name: string }>; uuids?: Record<string, string> } }
    }
    const live = doc.config['svcops:live']
    live.hosts = live.hosts.filter((h) => h.name !== 'gpu-2')
    live.uuids = Object.fromEntries(Object.entries(live.uuids ?? {}).filter(([name]) => !name.startsWith('gpu-2/')))
    const file = join(dir, 'Pulumi.one-each.yaml')
    writeFileSync(file, toYaml(doc))
    const run = await runSvcopsInProcess(['--stack-file', file, 'upgrade', 'live', '--to', '7.0.0', '--soak', '10m', '--dry-run'], { env })
    expect(run.code, run.stderr).toBe(2)
    expect(run.stderr).toMatch(
      /--soak: \S*Pulumi\.one-each\.yaml runs one instance of each live component type, so no type has a canary to soak/,
    )
  })
})
