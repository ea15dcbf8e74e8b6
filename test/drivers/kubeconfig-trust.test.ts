/**
 * A kubeconfig whose cluster entry sets `insecure-skip-tls-verify: true` lets anyone on the way
 * pose as the API server. svcops refuses it — the driver, and a whole `svcops upgrade recording`
 * dry run on the shipped prod stack — unless the stack opts in with
 * `svcops:deploy.allowInsecureSkipTlsVerify: true`, and then it warns. The API server is the
 * in-test stand-in over HTTPS (test/support/kube-api-standin.ts); its kubeconfig names its CA, and
 * the insecure copy drops the CA for the flag.
 */
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { BadInputError } from '../../src/core/errors.ts'
import { collect } from '../../src/core/events.ts'
import { KubernetesDriver, type ClusterTarget } from '../../src/drivers/kubernetes.ts'
import { ROOT, runSvcops } from '../support/cli.ts'
import { startKubeApiStandin, type KubeApiStandin } from '../support/kube-api-standin.ts'
import { createPulumiArgvRecorder, type ArgvRecorder } from '../support/pulumi-argv-recorder.ts'

let api: KubeApiStandin
let recorder: ArgvRecorder
let insecure: string
let dir: string

beforeAll(async () => {
  api = await startKubeApiStandin({ version: '1.5.0' }, 'prod-cluster')
  recorder = createPulumiArgvRecorder()
  dir = mkdtempSync(join(tmpdir(), 'svcops-kube-trust-'))
  // The same cluster, its CA replaced by the flag that turns verification off.
  insecure = join(dir, 'kubeconfig')
  writeFileSync(
    insecure,
    readFileSync(api.kubeconfig, 'utf8').replace(/certificate-authority-data: [A-Za-z0-9+/=]+/, 'insecure-skip-tls-verify: true'),
    { mode: 0o600 },
  )
})
afterAll(() => api.close())

const target = (kubeconfig: string, extra: object = {}): ClusterTarget => ({
  namespace: 'svc-prod',
  deployment: 'svc-recording',
  container: 'recording-service',
  port: 8080,
  context: 'prod-cluster',
  kubeconfig,
  ...extra,
})

describe('a kubeconfig that skips TLS verification', () => {
  it('is refused by the driver in one sentence naming the cluster and what is expected', () => {
    expect(readFileSync(insecure, 'utf8')).toContain('insecure-skip-tls-verify: true')
    const refusal = (() => {
      try {
        new KubernetesDriver(target(insecure))
        return undefined
      } catch (error) {
        return error
      }
    })()
    expect(refusal).toBeInstanceOf(BadInputError)
    expect((refusal as Error).message).toBe(
      `the kubeconfig '${insecure}' (context prod-cluster): cluster 'standin' at ${api.url} sets insecure-skip-tls-verify: true, which lets anyone on the way to it pose as the API server; expected a cluster entry with certificate-authority or certificate-authority-data (or svcops:deploy.allowInsecureSkipTlsVerify: true in the stack, to accept the risk).`,
    )
  })

  it('is used with the opt-in, with a warning; a kubeconfig with its CA needs none', async () => {
    const log = collect()
    const kube = new KubernetesDriver(target(insecure, { allowInsecureSkipTlsVerify: true }))
    expect(await kube.serverVersion()).toMatch(/^v1\./)
    new KubernetesDriver(target(api.kubeconfig))
    log.stop()
    const warnings = log.events.filter((e) => e.kind === 'warn').map((e) => (e as { message: string }).message)
    expect(warnings).toEqual([
      `TLS verification is off for the Kubernetes API at ${api.url} (cluster 'standin' of the kubeconfig '${insecure}' (context prod-cluster) sets insecure-skip-tls-verify): svcops:deploy.allowInsecureSkipTlsVerify accepts it; anyone on the way can pose as the cluster.`,
    ])
  })

  it('stops svcops verify recording on the prod stack with exit 2; with the stack opt-in it reads the cluster, warned', async () => {
    const env = { KUBECONFIG: insecure, PATH: `${recorder.binDir}:${process.env.PATH ?? ''}`, SVCOPS_RUNS_DIR: join(dir, 'runs') }
    const args = ['verify', 'recording', '--env', 'prod']
    const seen = api.requests.length
    const refused = await runSvcops(args, { env })
    expect(refused.code, refused.stdout + refused.stderr).toBe(2)
    expect(refused.stderr).toContain(
      `svcops: the kubeconfig (context prod-cluster): cluster 'standin' at ${api.url} sets insecure-skip-tls-verify: true`,
    )
    expect(api.requests.length).toBe(seen) // not one request reached the server
    // A copy of the shipped stacks whose prod stack opts in.
    const stacks = join(dir, 'stacks')
    cpSync(join(ROOT, 'stacks'), stacks, { recursive: true })
    const file = join(stacks, 'Pulumi.prod.yaml')
    const doc = parseYaml(readFileSync(file, 'utf8')) as { config: Record<string, Record<string, unknown>> }
    doc.config['svcops:deploy'] = { ...doc.config['svcops:deploy'], allowInsecureSkipTlsVerify: true }
    writeFileSync(file, toYaml(doc))
    const allowed = await runSvcops(args, { env: { ...env, SVCOPS_STACKS_DIR: stacks } })
    expect(allowed.stderr).toContain(`warning: TLS verification is off for the Kubernetes API at ${api.url}`)
    expect(allowed.stderr).not.toContain('sets insecure-skip-tls-verify: true, which')
    // It reached the cluster (the run stops later: the shipped stack's credentials are not on this machine).
    expect(api.requests.length).toBeGreaterThan(seen)
  })
})
