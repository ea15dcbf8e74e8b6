/**
 * The lab's recording service as container images, one per release (`<registry>/svc/recording:<v>`),
 * for the real-cluster suite. The image holds the release's bundle (the same one the lab's .deb
 * packages install) and an entrypoint that turns the variables the Pulumi program gives the pod
 * (`SVC_DB_*`, `SVC_RECORDINGS_DIR`) into the service's configuration file; the manager's JWKS URL
 * is a build argument, since the program gives the recording service no manager address.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runCommand, local } from '../../src/core/runner.ts'
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
