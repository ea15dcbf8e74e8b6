/**
 * The deadline and body cap of every Kubernetes API call, and of svcops' own HTTP client, against
 * the attacks that found them missing: a pod whose /metrics answers without end through the API
 * server's pod proxy, a log read and an API server that never answer. The API server here is a
 * small loopback server of this file that answers the paths the API reference gives (pod proxy,
 * pod log, version) and counts what it sent; the memory bound is asserted as bytes sent and the
 * cap's error, never as time.
 */
import { execFileSync } from 'node:child_process'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { createServer, type Server } from 'node:https'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OperationError } from '../../src/core/errors.ts'
import { createHttpClient, HTTP_LIMITS, LOG_LIMIT_BYTES, limitsOf, type HttpClient } from '../../src/core/http.ts'
import { KubernetesDriver, type ClusterTarget } from '../../src/drivers/kubernetes.ts'

const MiB = 1024 * 1024
/** What the endless answers stop at, so that a client without a cap ends (and the test fails) rather than hanging. */
const GIVE_UP_AT = 96 * MiB

interface Seen {
  path: string
  query: URLSearchParams
}

let server: Server
let url: string
/** svcops' own client, trusting the test server's CA as the live system's client trusts the stack's. */
let client: HttpClient
let target: ClusterTarget
const seen: Seen[] = []
let sent = 0
const hanging = new Set<ServerResponse>()

/** Writes chunks of Prometheus text as fast as the client reads them, until GIVE_UP_AT or the client leaves. */
function answerEndlessly(res: ServerResponse): void {
  res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4' })
  const chunk = Buffer.from('svc_recordings_total{channel="a"} 1\n'.repeat(2048))
  const pump = (): void => {
    while (!res.destroyed && sent < GIVE_UP_AT) {
      sent += chunk.length
      if (!res.write(chunk)) return void res.once('drain', pump)
    }
    if (!res.destroyed) res.end()
  }
  pump()
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  const u = new URL(req.url ?? '/', 'http://x')
  const path = decodeURIComponent(u.pathname)
  seen.push({ path, query: u.searchParams })
  if (path === '/api/v1/namespaces/svc-prod/pods/svc-recording-a1:9100/proxy/metrics') return answerEndlessly(res)
  if (path === '/api/v1/namespaces/svc-prod/pods/svc-recording-a1/log') return answerEndlessly(res)
  if (path === '/metrics-direct') return answerEndlessly(res)
  // Everything else never answers: the connection stays open, nothing is sent.
  hanging.add(res)
}

/** A self-signed certificate for 127.0.0.1: client-node speaks HTTPS only, verified against the kubeconfig's CA. */
function certificate(dir: string): { key: Buffer; cert: Buffer } {
  const key = join(dir, 'tls.key')
  const cert = join(dir, 'tls.crt')
  try {
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2', '-subj', '/CN=attacked'].concat(
        ['-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', key, '-out', cert],
      ),
      { stdio: 'pipe' },
    )
  } catch (error) {
    throw new Error(
      `openssl could not make the test's certificate (install it with: apt-get install -y openssl): ${(error as Error).message}`,
    )
  }
  return { key: readFileSync(key), cert: readFileSync(cert) }
}

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kube-limits-'))
  const tls = certificate(dir)
  server = createServer({ key: tls.key, cert: tls.cert }, handle)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  const address = server.address()
  url = `https://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`
  client = createHttpClient({ ca: tls.cert.toString('utf8') })
  const kubeconfig = join(dir, 'kubeconfig')
  writeFileSync(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      'current-context: attacked',
      'clusters:',
      `- name: attacked`,
      `  cluster: { server: '${url}', certificate-authority-data: ${tls.cert.toString('base64')} }`,
      'users:',
      '- name: svcops',
      '  user: { token: t0ken-of-the-test }',
      'contexts:',
      '- name: attacked',
      '  context: { cluster: attacked, user: svcops, namespace: svc-prod }',
      '',
    ].join('\n'),
    { mode: 0o600 },
  )
  target = { namespace: 'svc-prod', deployment: 'svc-recording', container: 'recording-service', port: 8080, kubeconfig }
})

afterAll(async () => {
  await client.close()
  for (const res of hanging) res.destroy()
  server.closeAllConnections()
  await new Promise<void>((resolve) => server.close(() => resolve()))
})

describe('deadlines and caps of the Kubernetes API calls', () => {
  it('refuses an endless /metrics answer through the pod proxy at its cap, naming the cap, having read no more than it', async () => {
    sent = 0
    const kube = new KubernetesDriver(target)
    const error = await kube.podProxyGet('svc-recording-a1', 9100, '/metrics').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OperationError)
    const cap = HTTP_LIMITS['kubernetes-proxy'].maxBodyBytes
    expect(cap).toBeLessThanOrEqual(8 * MiB)
    expect((error as Error).message).toContain(`GET /api/v1/namespaces/svc-prod/pods/svc-recording-a1:9100/proxy/metrics at ${url}`)
    expect((error as Error).message).toContain(`answered more than ${cap / MiB}.0 MiB (status 200), the cap of its answers`)
    // The connection was dropped at the cap: what the server got out is the cap plus the sockets' buffers, far from the end.
    expect(sent).toBeGreaterThan(cap)
    expect(sent).toBeLessThan(GIVE_UP_AT / 2)
  })

  it('asks for a pod log with limitBytes, and caps the answer when the server ignores it', async () => {
    sent = 0
    const kube = new KubernetesDriver(target)
    const error = await kube.podLog('svc-recording-a1', 50).catch((e: unknown) => e)
    const request = seen.findLast((s) => s.path.endsWith('/log'))
    expect(request?.query.get('limitBytes')).toBe(String(LOG_LIMIT_BYTES))
    expect(request?.query.get('tailLines')).toBe('50')
    expect(error).toBeInstanceOf(OperationError)
    expect((error as Error).message).toContain(`more than ${HTTP_LIMITS['kubernetes-log'].maxBodyBytes / 1024}.0 KiB`)
    expect(HTTP_LIMITS['kubernetes-log'].maxBodyBytes).toBeGreaterThan(LOG_LIMIT_BYTES)
    expect(sent).toBeLessThan(GIVE_UP_AT / 2)
  })

  it('gives up on an API server that never answers at the configured deadline, naming it', async () => {
    const kube = new KubernetesDriver({ ...target, timeoutMs: 300 })
    const error = await kube.readDeployment().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OperationError)
    expect((error as Error).message).toBe(
      `The Kubernetes API: GET /apis/apps/v1/namespaces/svc-prod/deployments/svc-recording at ${url} failed: no answer within 300 ms, the deadline of the call.`,
    )
    const logError = await kube.podLog('svc-never', 10).catch((e: unknown) => e)
    expect((logError as Error).message).toContain('no answer within 300 ms, the deadline of the call')
  })

  it('never lets a configured deadline lengthen a peer’s own', () => {
    expect(limitsOf({ peer: 'kubernetes-api', timeoutMs: 10 * 60_000 }).timeoutMs).toBe(HTTP_LIMITS['kubernetes-api'].timeoutMs)
    expect(limitsOf({ peer: 'webhook', timeoutMs: 200 })).toEqual({ timeoutMs: 200, maxBodyBytes: HTTP_LIMITS.webhook.maxBodyBytes })
  })
})

describe('the same limits for svcops’ own HTTP client', () => {
  it('caps an endless answer of a peer by its own cap (a Pushgateway’s: 64 KiB)', async () => {
    sent = 0
    const error = await client.send({ peer: 'pushgateway', method: 'GET', url: `${url}/metrics-direct` }).catch((e: unknown) => e)
    expect((error as Error).message).toBe(
      `GET ${url}/metrics-direct answered more than 64.0 KiB (status 200), the cap of its answers; it was refused unread.`,
    )
    expect(sent).toBeLessThan(GIVE_UP_AT / 2)
  })

  it('gives up on a server that never answers at the configured deadline', async () => {
    const error = await client
      .send({ peer: 'manager', method: 'POST', url: `${url}/api/v1/auth/login`, body: {}, timeoutMs: 300 })
      .catch((e: unknown) => e)
    expect((error as Error).message).toBe(`POST ${url}/api/v1/auth/login failed: no answer within 300 ms, the deadline of the call.`)
  })
})
