/**
 * The Kubernetes driver over TLS, as a real cluster is reached: the API server's certificate checked
 * against the kubeconfig's CA (the client's undici Agent), also through an HTTP proxy
 * (`proxy-url`, the client's undici ProxyAgent, CONNECT). package.json pins the client's undici
 * to 7.x (`overrides`), a line the client does not declare (^8): these cases prove the pin keeps
 * what svcops relies on. The API server is a stand-in answering `GET /version` only; the
 * certificates are made by Debian's `openssl`.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer as createHttpServer, type Server } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findBinary } from '../../src/core/runner.ts'
import { KubernetesDriver } from '../../src/drivers/kubernetes.ts'

const dir = mkdtempSync(join(tmpdir(), 'svcops-kube-tls-'))
const authorizations: string[] = []
const tunnels: string[] = []
/** TLS connections the API server accepted (a handshake each). */
let handshakes = 0
let api: Server
let proxy: Server

/** Runs openssl in `dir`; a machine without it fails here, naming the package. */
function openssl(args: string[]): void {
  if (!findBinary('openssl')) throw new Error('openssl is missing; install it with: apt-get install -y --no-install-recommends openssl')
  execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' })
}

/** A CA, and a certificate it signed for 127.0.0.1 (the API server's). */
function makeCertificates(): void {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes']
  openssl(['req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-subj', '/CN=svcops test CA', '-days', '2'])
  openssl(['req', ...ec, '-keyout', 'api.key', '-out', 'api.csr', '-subj', '/CN=kube-apiserver'])
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1\n')
  openssl([
    'x509',
    '-req',
    '-in',
    'api.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'api.crt',
    '-days',
    '2',
    '-extfile',
    'san.ext',
  ])
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)))
}

/** A kubeconfig for the stand-in, with or without its CA and a proxy. */
function kubeconfig(port: number, options: { ca: boolean; proxyPort?: number }): string {
  const ca = options.ca ? `\n    certificate-authority-data: ${readFileSync(join(dir, 'ca.crt')).toString('base64')}` : ''
  const proxyUrl = options.proxyPort ? `\n    proxy-url: http://127.0.0.1:${options.proxyPort}` : ''
  return `apiVersion: v1
kind: Config
clusters:
- name: tls
  cluster:
    server: https://127.0.0.1:${port}${ca}${proxyUrl}
users:
- name: deployer
  user:
    token: tls-test-token
contexts:
- name: tls
  context: { cluster: tls, user: deployer }
current-context: tls
`
}

let apiPort = 0
let proxyPort = 0

beforeAll(async () => {
  makeCertificates()
  api = createHttpsServer({ key: readFileSync(join(dir, 'api.key')), cert: readFileSync(join(dir, 'api.crt')) }, (req, res) => {
    authorizations.push(req.headers.authorization ?? '')
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify({ major: '1', minor: '31', gitVersion: 'v1.31.2' }))
  })
  api.on('secureConnection', () => handshakes++)
  apiPort = await listen(api)
  // An HTTP proxy as corporate networks run one: CONNECT host:port, then bytes both ways.
  proxy = createHttpServer()
  proxy.on('connect', (req, socket, head) => {
    tunnels.push(req.url ?? '')
    const [host = '', port = '0'] = (req.url ?? '').split(':')
    const upstream = connect(Number(port), host, () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n')
      upstream.write(head)
      upstream.pipe(socket)
      socket.pipe(upstream)
    })
    upstream.on('error', () => socket.destroy())
    socket.on('error', () => upstream.destroy())
  })
  proxyPort = await listen(proxy)
})

afterAll(async () => {
  await Promise.all([api, proxy].map((s) => new Promise((resolve) => s.close(resolve))))
  rmSync(dir, { recursive: true, force: true })
})

const target = { namespace: 'svc-prod', deployment: 'svc-recording', container: 'recording-service', port: 8080, context: 'tls' }

describe('the Kubernetes driver over TLS', () => {
  it("checks the API server's certificate against the kubeconfig's CA and sends the token", async () => {
    const kube = new KubernetesDriver({ ...target, kubeconfig: kubeconfig(apiPort, { ca: true }) })
    expect(await kube.serverVersion()).toBe('v1.31.2')
    expect(authorizations.at(-1)).toBe('Bearer tls-test-token')
  })

  it('makes its calls on kept-alive TLS connections, not a handshake each, and still sends the token with every call', async () => {
    const kube = new KubernetesDriver({ ...target, kubeconfig: kubeconfig(apiPort, { ca: true }) })
    const [before, sent] = [handshakes, authorizations.length]
    for (let i = 0; i < 10; i++) expect(await kube.serverVersion()).toBe('v1.31.2')
    // One connection, or two: undici's pool opens a second when a call comes while the first
    // connection is still finishing the answer before it; each is reused afterwards.
    expect(handshakes - before).toBeLessThanOrEqual(2)
    expect(authorizations.slice(sent)).toEqual(Array(10).fill('Bearer tls-test-token'))
  })

  it('refuses an API server whose certificate no CA of the kubeconfig signed, before sending the token', async () => {
    const before = authorizations.length
    const kube = new KubernetesDriver({ ...target, kubeconfig: kubeconfig(apiPort, { ca: false }) })
    await expect(kube.serverVersion()).rejects.toThrow(/could not be reached for GET \/version/)
    expect(authorizations.length).toBe(before)
  })

  it("reaches the API server through the kubeconfig's proxy-url (CONNECT), still checking its certificate", async () => {
    const kube = new KubernetesDriver({ ...target, kubeconfig: kubeconfig(apiPort, { ca: true, proxyPort }) })
    expect(await kube.serverVersion()).toBe('v1.31.2')
    expect(tunnels).toContain(`127.0.0.1:${apiPort}`)
  })
})
