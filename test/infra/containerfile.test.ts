/**
 * The image definition of the scheduled jobs (Containerfile). No container engine runs here, so
 * this checks what can go wrong without one: the Pulumi CLI and provider plugins at the versions
 * of the SDKs the program is built with, the uid the CronJobs run as, sources that exist, and a
 * production install (`npm ci --omit=dev`) that has every package svcops imports at run time.
 * That the image builds and runs is `npm run test:cluster`'s job where a cluster and a builder exist.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { podSecurity } from '../../src/infra/kube.ts'
import { ROOT } from '../support/cli.ts'

const containerfile = readFileSync(join(ROOT, 'Containerfile'), 'utf8')
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version: string }> }
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }
const arg = (name: string): string | undefined => new RegExp(`^ARG ${name}=(\\S+)$`, 'm').exec(containerfile)?.[1]

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') || dir === 'bin')
    .map((f) => join(ROOT, dir, f))
    .filter((f) => statSync(f).isFile())
}

describe('Containerfile', () => {
  it('installs the Pulumi CLI and every provider plugin at the version of the SDK in package-lock.json', () => {
    expect(arg('PULUMI_VERSION')).toBe(lock.packages['node_modules/@pulumi/pulumi']?.version)
    const providers = Object.keys(pkg.dependencies).filter((d) => d.startsWith('@pulumi/') && d !== '@pulumi/pulumi')
    expect(providers.length).toBeGreaterThan(0)
    for (const provider of providers) {
      const name = provider.slice('@pulumi/'.length)
      expect(arg(`PULUMI_${name.toUpperCase()}_VERSION`), provider).toBe(lock.packages[`node_modules/${provider}`]?.version)
      expect(containerfile).toContain(`"${name}:\${PULUMI_${name.toUpperCase()}_VERSION}"`)
    }
  })

  it('runs Node 24 as the uid the CronJobs run as, svcops as its entry point', () => {
    expect(containerfile).toMatch(/^FROM \S+\/node:24-/m)
    const uid = podSecurity().runAsUser
    expect(typeof uid).toBe('number')
    expect(containerfile).toMatch(new RegExp(`^USER ${uid as number}:${uid as number}$`, 'm'))
    expect(containerfile).toMatch(/^ENTRYPOINT \["svcops"\]$/m)
    expect(containerfile).toMatch(/postgresql-client-\$\{PG_MAJOR\}/)
    expect(containerfile).toMatch(/apt-get install -y --no-install-recommends .*\bgnupg\b.*\bopenssh-client\b/)
  })

  it('copies sources that exist, and its production install has every package svcops imports at run time', () => {
    const copied = [...containerfile.matchAll(/^COPY (.+) \S+$/gm)].flatMap((m) => (m[1] ?? '').split(' '))
    for (const path of copied) expect(() => statSync(join(ROOT, path)), path).not.toThrow()
    const runtime = [...sources('src'), ...sources('playbooks'), ...sources('bin')]
    const imported = new Set<string>()
    for (const file of runtime) {
      for (const m of readFileSync(file, 'utf8').matchAll(
        /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+'([^'.][^']*)'|import\('([^'.][^']*)'\)/g,
      )) {
        const spec = m[1] ?? m[2] ?? ''
        if (spec.startsWith('node:')) continue
        imported.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : (spec.split('/')[0] ?? spec))
      }
    }
    expect(imported.size).toBeGreaterThan(5)
    const missing = [...imported].filter((name) => !(name in pkg.dependencies))
    expect(missing, 'imported at run time but not in dependencies (npm ci --omit=dev leaves them out)').toEqual([])
  })
})
