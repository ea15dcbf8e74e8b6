/**
 * The images the real-cluster suite builds and loads into the cluster (test/cluster, `npm run
 * test:cluster`).
 *
 * The lab's recording service as container images, one per release (`<registry>/svc/recording:<v>`),
 * for the real-cluster suite. The image holds the release's bundle (the same one the lab's .deb
 * packages install) and an entrypoint that turns the variables the Pulumi program gives the pod
 * (`SVC_DB_*`, `SVC_RECORDINGS_DIR`) into the service's configuration file; the manager's JWKS URL
 * is a build argument, since the program gives the recording service no manager address.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { projectPath } from '../../src/core/paths.ts'
import { runCommand, local } from '../../src/core/runner.ts'
import { LAB_SCOPES } from '../../src/lab/manager/lab-users.ts'
import { hashPassword } from '../../src/lab/manager/passwords.ts'
import { DEFAULT_LIVE_PRODUCT } from '../../src/lab/live/paths.ts'
import { findLiveLabRelease, type LiveComponent } from '../../src/lab/live/releases.ts'
import type { LiveBuild } from '../../src/lab/live/runtime.ts'
import { bundleRecordingService, defaultServiceConfig, findRecordingRelease } from '../../src/lab/recording/index.ts'

const ENTRYPOINT = `
import { writeFileSync, mkdirSync } from 'node:fs'
const config = JSON.parse(process.env.SVCOPS_E2E_BASE_CONFIG)
const env = process.env
config.listen = { host: '0.0.0.0', port: 8080 }
config.database = { host: env.SVC_DB_HOST, port: Number(env.SVC_DB_PORT), name: env.SVC_DB_NAME, user: env.SVC_DB_USER, password: env.SVC_DB_PASSWORD }
config.storage = { ...config.storage, path: env.SVC_RECORDINGS_DIR }
mkdirSync('/tmp/etc', { recursive: true })
writeFileSync('/tmp/etc/recording.json', JSON.stringify(config), { mode: 0o600 })
process.argv.push('--root', '/tmp/root', '--config', '/tmp/etc/recording.json')
await import('/opt/recording/service.mjs')
`

/** Builds the image of `version` and returns its reference. */
export async function buildRecordingImage(
  version: string,
  options: { registry: string; jwksUrl: string; issuer: string },
): Promise<string> {
  const release = findRecordingRelease(version)
  if (!release) throw new Error(`The lab has no recording service release ${version}.`)
  const dir = mkdtempSync(join(tmpdir(), `svcops-e2e-image-${version}-`))
  mkdirSync(join(dir, 'opt'), { recursive: true })
  await bundleRecordingService(release, { prefix: 'svc', dir: 'svc' }, join(dir, 'opt', 'service.mjs'))
  writeFileSync(join(dir, 'opt', 'entrypoint.mjs'), ENTRYPOINT)
  const base = defaultServiceConfig(release, { dir: 'svc' })
  base.auth = { ...(base.auth as object), jwksUrl: options.jwksUrl, issuer: options.issuer }
  writeFileSync(
    join(dir, 'Containerfile'),
    [
      'FROM docker.io/library/node:24-slim',
      'COPY opt/ /opt/recording/',
      `ENV SVCOPS_E2E_BASE_CONFIG=${JSON.stringify(JSON.stringify(base))}`,
      'USER 10001',
      'ENTRYPOINT ["node", "/opt/recording/entrypoint.mjs"]',
      '',
    ].join('\n'),
  )
  const image = `${options.registry}/svc/recording:${version}`
  await runCommand(local, ['docker', 'build', '-f', join(dir, 'Containerfile'), '-t', image, dir], { timeoutMs: 900_000 })
  return image
}

/**
 * The lab's live production system as container images, one per component and release
 * (`<registry>/svc/<component>:<v>`): the components' program bundled as the lab's packages bundle
 * it (src/lab/live/package.ts), with the release's `build.json`; the program reads its settings from
 * the environment the Pulumi program gives the pod, as it reads the environment file on a host.
 */
export async function buildLiveImage(component: LiveComponent, version: string, options: { registry: string }): Promise<string> {
  const release = findLiveLabRelease(version)
  if (!release) throw new Error(`The lab has no live production system release ${version}.`)
  const dir = mkdtempSync(join(tmpdir(), `svcops-e2e-live-${component}-${version}-`))
  mkdirSync(join(dir, 'opt'), { recursive: true })
  const { build } = await import('esbuild')
  const entry = `import { runLiveComponent } from './main.ts'\nimport { fileURLToPath } from 'node:url'\nawait runLiveComponent(fileURLToPath(new URL('./build.json', import.meta.url)), process.argv.slice(2))\n`
  await build({
    stdin: { contents: entry, resolveDir: projectPath('src/lab/live'), sourcefile: 'live-component.ts', loader: 'ts' },
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    outfile: join(dir, 'opt', 'program.mjs'),
    logLevel: 'silent',
  })
  const buildFile: LiveBuild = { component, version, fault: release.fault, product: DEFAULT_LIVE_PRODUCT }
  writeFileSync(join(dir, 'opt', 'build.json'), `${JSON.stringify(buildFile)}\n`)
  writeFileSync(
    join(dir, 'Containerfile'),
    [
      'FROM docker.io/library/node:24-slim',
      'COPY opt/ /opt/live/',
      'USER 10001',
      'ENTRYPOINT ["node", "/opt/live/program.mjs", "--root", "/tmp/root"]',
      '',
    ].join('\n'),
  )
  const image = `${options.registry}/svc/${component}:${version}`
  await runCommand(local, ['docker', 'build', '-f', join(dir, 'Containerfile'), '-t', image, dir], { timeoutMs: 900_000 })
  return image
}

/** svcops itself, from the project's Containerfile (the scheduled jobs' image), tagged `<registry>/svcops:<tag>`. */
export async function buildSvcopsImage(options: { registry: string; tag: string }): Promise<string> {
  const image = `${options.registry}/svcops:${options.tag}`
  await runCommand(local, ['docker', 'build', '-f', projectPath('Containerfile'), '-t', image, projectPath('.')], { timeoutMs: 1_800_000 })
  return image
}

/**
 * The lab's manager emulator as an image (`<registry>/svc/manager:<tag>`), listening on 8080 with one
 * user (`email`, its password hashed here; the password itself never enters the image). The recording
 * service's pods fetch its JWKS through its Service; svcops reaches it through a port-forward.
 */
export async function buildManagerImage(options: { registry: string; tag: string; email: string; password: string }): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'svcops-e2e-manager-'))
  mkdirSync(join(dir, 'opt'), { recursive: true })
  const { build } = await import('esbuild')
  await build({
    entryPoints: [projectPath('src/lab/manager/main.ts')],
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    outfile: join(dir, 'opt', 'manager.mjs'),
    logLevel: 'silent',
  })
  const config = {
    host: '0.0.0.0',
    port: 8080,
    users: [{ email: options.email, passwordHash: await hashPassword(options.password), permissions: Object.values(LAB_SCOPES) }],
  }
  writeFileSync(join(dir, 'opt', 'config.json'), `${JSON.stringify(config)}\n`)
  writeFileSync(
    join(dir, 'Containerfile'),
    [
      'FROM docker.io/library/node:24-slim',
      'COPY opt/ /opt/manager/',
      'USER 10001',
      'ENTRYPOINT ["node", "/opt/manager/manager.mjs", "--config", "/opt/manager/config.json"]',
      '',
    ].join('\n'),
  )
  const image = `${options.registry}/svc/manager:${options.tag}`
  await runCommand(local, ['docker', 'build', '-f', join(dir, 'Containerfile'), '-t', image, dir], { timeoutMs: 900_000 })
  return image
}
