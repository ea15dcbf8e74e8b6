/**
 * The Kubernetes driver at its seam: the calls @kubernetes/client-node sends with the stack's
 * kubeconfig and context, against an in-test STAND-IN of the API server that answers as the API
 * reference shapes them (test/support/kube-api-standin.ts). No cluster is involved.
 */
import { createServer } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BadInputError, OperationError } from '../../src/core/errors.ts'
import { describeCall, imageTag, KubernetesDriver, neededRights, podSelector, type ClusterTarget } from '../../src/drivers/kubernetes.ts'
import { startKubeApiStandin, type KubeApiStandin } from '../support/kube-api-standin.ts'

let api: KubeApiStandin
let target: ClusterTarget

beforeAll(async () => {
  api = await startKubeApiStandin({}, 'prod-cluster')
  target = {
    namespace: 'svc-prod',
    deployment: 'svc-recording',
    container: 'recording-service',
    port: 8080,
    context: 'prod-cluster',
    kubeconfig: api.kubeconfig,
  }
})
afterAll(() => api.close())

/** The last request, as the dry run writes it: `METHOD path[?query]`. */
function lastCall(): string {
  const r = api.requests.at(-1)
  const query = new URLSearchParams(r?.query ?? {}).toString()
  return `${r?.method} ${r?.path}${query ? `?${decodeURIComponent(query)}` : ''}`
}

describe('the Kubernetes driver, against a stand-in of the API server', () => {
  it("uses the stack's context from the kubeconfig Pulumi reads, not the kubeconfig's current one", async () => {
    const kube = new KubernetesDriver(target)
    expect(await kube.serverVersion()).toBe('v1.31.2')
    expect(kube.server()).toBe(api.url)
    expect(api.requests.at(-1)?.authorization).toBe(`Bearer ${api.token}`)
  })

  it('refuses a context the kubeconfig does not have, naming the ones it has', () => {
    expect(() => new KubernetesDriver({ ...target, context: 'prod' })).toThrow(BadInputError)
    expect(() => new KubernetesDriver({ ...target, context: 'prod' })).toThrow(
      'kubernetes:context: "prod" is not a context of the kubeconfig; expected one of prod-cluster, other.',
    )
  })

  it('reads the version of the Deployment from its image tag, and its rollout', async () => {
    const d = await new KubernetesDriver(target).readDeployment()
    expect(api.requests.at(-1)).toMatchObject({ method: 'GET', path: '/apis/apps/v1/namespaces/svc-prod/deployments/svc-recording' })
    expect(describeCall.deployment(target)).toBe('GET /apis/apps/v1/namespaces/svc-prod/deployments/svc-recording')
    expect(d).toEqual({
      version: '1.5.0',
      image: 'registry.example.internal/svc/recording:1.5.0',
      replicas: 3,
      readyReplicas: 2,
      updatedReplicas: 2,
      generation: 4,
      observedGeneration: 4,
    })
  })

  it('lists the pods by the program’s selector and reads the last log lines of each', async () => {
    api.state.pods[1] = {
      name: 'svc-recording-7d4b9c-b2',
      version: '1.5.0',
      ready: false,
      waiting: 'CrashLoopBackOff',
      restarts: 4,
      log: ['a', 'b', 'FATAL c'],
    }
    const kube = new KubernetesDriver(target)
    const pods = await kube.listPods()
    expect(lastCall()).toBe(describeCall.pods(target))
    expect(api.requests.at(-1)?.query.labelSelector).toBe(podSelector(target))
    expect(pods[1]).toEqual({
      name: 'svc-recording-7d4b9c-b2',
      phase: 'Running',
      ready: false,
      restarts: 4,
      version: '1.5.0',
      waiting: 'CrashLoopBackOff',
      deleting: false,
      // The image its spec names, and the content the kubelet pulled (a crash loop has pulled it).
      image: 'registry.example.internal/svc/recording:1.5.0',
      imageID: expect.stringMatching(/^registry\.example\.internal\/svc\/recording@sha256:[0-9a-f]{64}$/) as string,
    })
    expect(await kube.podLog('svc-recording-7d4b9c-b2', 2)).toEqual(['b', 'FATAL c'])
    expect(api.requests.at(-1)).toMatchObject({
      method: 'GET',
      path: '/api/v1/namespaces/svc-prod/pods/svc-recording-7d4b9c-b2/log',
      query: { container: 'recording-service', tailLines: '2', limitBytes: '262144' },
    })
  })

  it('asks a SelfSubjectAccessReview for every right the run needs and returns the ones denied', async () => {
    api.state.denied = ['patch deployments', 'create pods/portforward']
    const rights = neededRights(target, { portForward: true, stackMap: 'svc-svcops-stack' })
    const missing = await new KubernetesDriver(target).missingRights(rights)
    expect(missing.map((r) => `${r.verb} ${r.resource}/${r.subresource ?? ''}`)).toEqual(['patch deployments/', 'create pods/portforward'])
    // svcops writes nothing the program manages: the stop and the start are `pulumi up`, no scale subresource.
    expect(rights.some((r) => r.subresource === 'scale')).toBe(false)
    const reviews = api.requests.filter((r) => r.path === '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews')
    expect(reviews).toHaveLength(rights.length)
    expect(reviews.find((r) => JSON.stringify(r.body).includes('configmaps'))?.body).toMatchObject({
      kind: 'SelfSubjectAccessReview',
      spec: { resourceAttributes: { namespace: 'svc-prod', group: '', resource: 'configmaps', verb: 'patch', name: 'svc-svcops-stack' } },
    })
    api.state.denied = []
  })

  it("names the request, the server and the API's Status when the API refuses, and never the token", async () => {
    const error = await new KubernetesDriver({ ...target, deployment: 'missing' }).readDeployment().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OperationError)
    expect((error as Error).message).toBe(
      `The Kubernetes API at ${api.url} answered GET /apis/apps/v1/namespaces/svc-prod/deployments/missing with HTTP 404 (NotFound: deployments.apps "missing" not found).`,
    )
    expect((error as Error).message).not.toContain(api.token)
  })

  it('forwards a local port to the Service: each connection to a ready pod of its selector, through the pod’s portforward', async () => {
    const pod = createServer((req, res) => res.end(`answered ${req.method} ${req.url}`))
    await new Promise<void>((resolve) => pod.listen(0, '127.0.0.1', () => resolve()))
    const address = pod.address()
    api.state.pods = [{ name: 'svc-recording-5f6c7d-c3', version: '2.0.0' }]
    api.state.forwardTo = { host: '127.0.0.1', port: typeof address === 'object' && address ? address.port : 0 }
    const forward = await new KubernetesDriver(target).forwardService()
    try {
      expect(forward.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
      for (const path of ['/', '/api/v1/content?limit=5'])
        expect(await (await fetch(`${forward.url}${path}`)).text()).toBe(`answered GET ${path}`)
      const seen = api.requests.map((r) => `${r.method} ${r.path}${r.query.ports ? `?ports=${r.query.ports}` : ''}`)
      expect(seen).toContain('GET /api/v1/namespaces/svc-prod/services/svc-recording')
      expect(seen).toContain('GET /api/v1/namespaces/svc-prod/pods/svc-recording-5f6c7d-c3/portforward?ports=8080')
    } finally {
      await forward.close()
      pod.close()
    }
  })

  it('reads the tag of an image reference, with a registry port and a digest', () => {
    expect(imageTag('registry.example.internal:5000/svc/recording:2.0.0@sha256:' + 'a'.repeat(64))).toBe('2.0.0')
    expect(imageTag('registry.example.internal:5000/svc/recording')).toBeUndefined()
  })
})
