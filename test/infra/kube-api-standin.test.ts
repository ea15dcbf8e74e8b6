/**
 * The Kubernetes API stand-in (test/support/kube-api-standin.ts) fails as the API server does:
 * field ownership under server-side apply (conflicts in the API's Status shape, shared equal
 * values, force, dry runs), the managers other writes record (client-node's merge patch on the
 * scale subresource), and RBAC from stored Roles (a 403 with the API's message, the same answer in
 * a SelfSubjectAccessReview). The expected texts are the API server's own
 * (k8s.io/apimachinery managedfields/internal/conflict.go, apiserver responsewriters/errors.go).
 */
import { request } from 'node:https'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { AppsV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node'
import { loadKubeConfig } from '../../src/drivers/kubernetes.ts'
import { startKubeApiStandin, type KubeApiStandin } from '../support/kube-api-standin.ts'
import type { ManagedFieldsEntry } from '../support/kube-fields.ts'
import { kindOfResource } from '../support/kube-kinds.ts'
import { managedFieldsOf } from '../support/kube-store.ts'

let api: KubeApiStandin
beforeAll(async () => {
  api = await startKubeApiStandin({ namespace: 'svc-prod' }, 'prod-cluster')
})
afterAll(async () => {
  await api.close()
})

type Obj = Record<string, unknown>

/** One request to the stand-in as `token`. */
function call(
  token: string,
  method: string,
  path: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<{ code: number; body: Obj }> {
  const url = new URL(path, api.url)
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: `${url.pathname}${url.search}`,
        method,
        ca: api.caCertificate,
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': contentType, 'User-Agent': 'kubectl/v1.31.2 (linux/amd64)' },
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (d: Buffer) => chunks.push(d))
        res.on('end', () => resolve({ code: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString() || '{}') as Obj }))
      },
    )
    req.on('error', reject)
    if (body !== undefined) req.write(typeof body === 'string' ? body : JSON.stringify(body))
    req.end()
  })
}

const DEPLOYMENT = '/apis/apps/v1/namespaces/svc-prod/deployments/svc-recording'
const apply = (manager: string, object: Obj, extra = '') =>
  call(api.token, 'PATCH', `${DEPLOYMENT}?fieldManager=${manager}${extra}`, object, 'application/apply-patch+yaml')
const deploymentOf = (replicas: number, version: string): Obj => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'svc-recording', namespace: 'svc-prod' },
  spec: {
    replicas,
    selector: { matchLabels: { 'app.kubernetes.io/name': 'recording-service' } },
    template: {
      metadata: { labels: { 'app.kubernetes.io/name': 'recording-service' } },
      spec: { containers: [{ name: 'recording-service', image: `registry.example.internal/svc/recording:${version}` }] },
    },
  },
})
const managers = (): ManagedFieldsEntry[] =>
  managedFieldsOf(api.store.get(kindOfResource('apps', 'v1', 'deployments')!, 'svc-prod', 'svc-recording'))

/** The Deployment made by one applier, `replicas` shared with a second one that sent an equal value. */
async function givenShared(): Promise<void> {
  expect((await apply('pulumi-kubernetes-1a2b3c4d', deploymentOf(1, '1.5.0'))).code).toBe(200)
  const shared = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'svc-recording' }, spec: { replicas: 1 } }
  expect((await apply('someone-else', shared)).code).toBe(200)
}

/** `givenShared`, then a third applier that took `replicas` over with force. */
async function givenForced(): Promise<void> {
  await givenShared()
  expect((await apply('pulumi-kubernetes-9f8e7d6c', deploymentOf(3, '1.5.0'), '&force=true')).code).toBe(200)
}

/** `givenForced`, then the scale subresource patched by @kubernetes/client-node. */
async function givenScaled(): Promise<void> {
  await givenForced()
  const apps = loadKubeConfig({ context: 'prod-cluster', kubeconfig: api.kubeconfig }).makeApiClient(AppsV1Api)
  await apps.patchNamespacedDeploymentScale(
    { name: 'svc-recording', namespace: 'svc-prod', body: { spec: { replicas: 0 } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  )
}

describe('server-side apply on the stand-in', () => {
  // Each case starts from no Deployment and makes the history it needs (the given* functions above).
  beforeEach(() => {
    api.store.remove(kindOfResource('apps', 'v1', 'deployments')!, 'svc-prod', 'svc-recording')
  })

  it('creates the object, the applier owning every field it sent; an equal value from another applier is shared, not a conflict', async () => {
    const created = await apply('pulumi-kubernetes-1a2b3c4d', deploymentOf(1, '1.5.0'))
    expect(created.code).toBe(200)
    expect(managers()).toMatchObject([
      { manager: 'pulumi-kubernetes-1a2b3c4d', operation: 'Apply', fieldsV1: { 'f:spec': { 'f:replicas': {} } } },
    ])
    const shared = await apply('someone-else', {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'svc-recording' },
      spec: { replicas: 1 },
    })
    expect(shared.code).toBe(200)
    expect(managers().map((m) => m.manager)).toEqual(['pulumi-kubernetes-1a2b3c4d', 'someone-else'])
  })

  it("answers a changed field another manager owns with the API's 409 Conflict, naming the manager and the field; force takes it over", async () => {
    await givenShared()
    const refused = await apply('pulumi-kubernetes-9f8e7d6c', deploymentOf(3, '1.5.0'))
    expect(refused.code).toBe(409)
    expect(refused.body).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message:
        'Apply failed with 2 conflicts: conflicts with "pulumi-kubernetes-1a2b3c4d":\n- .spec.replicas\nconflicts with "someone-else":\n- .spec.replicas',
      reason: 'Conflict',
      details: {
        causes: [
          { reason: 'FieldManagerConflict', message: 'conflict with "pulumi-kubernetes-1a2b3c4d"', field: '.spec.replicas' },
          { reason: 'FieldManagerConflict', message: 'conflict with "someone-else"', field: '.spec.replicas' },
        ],
      },
      code: 409,
    })
    const dry = await apply('pulumi-kubernetes-9f8e7d6c', deploymentOf(3, '1.5.0'), '&force=true&dryRun=All')
    expect(dry.code).toBe(200)
    expect((api.store.get(kindOfResource('apps', 'v1', 'deployments')!, 'svc-prod', 'svc-recording')?.spec as Obj).replicas).toBe(1)
    const forced = await apply('pulumi-kubernetes-9f8e7d6c', deploymentOf(3, '1.5.0'), '&force=true')
    expect(forced.code).toBe(200)
    expect((forced.body.spec as Obj).replicas).toBe(3)
    // The field left both former owners; everything else the first applier sent is still its own.
    const byName = Object.fromEntries(managers().map((m) => [m.manager, m.fieldsV1]))
    expect(byName['pulumi-kubernetes-1a2b3c4d']).not.toHaveProperty(['f:spec', 'f:replicas'])
    expect(byName['pulumi-kubernetes-1a2b3c4d']).toHaveProperty(['f:spec', 'f:template'])
    expect(byName['someone-else']).toBeUndefined()
  })

  it('records the scale of @kubernetes/client-node on the Deployment as kubernetes-client-javascript with subresource scale, taking spec.replicas', async () => {
    await givenForced()
    // A merge patch of the scale subresource, as the client library sends it (what svcops' stop once was).
    const apps = loadKubeConfig({ context: 'prod-cluster', kubeconfig: api.kubeconfig }).makeApiClient(AppsV1Api)
    await apps.patchNamespacedDeploymentScale(
      { name: 'svc-recording', namespace: 'svc-prod', body: { spec: { replicas: 0 } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )
    const scale = managers().find((m) => m.subresource === 'scale')
    expect(scale).toMatchObject({
      manager: 'kubernetes-client-javascript',
      operation: 'Update',
      apiVersion: 'apps/v1',
      fieldsV1: { 'f:spec': { 'f:replicas': {} } },
    })
    expect(api.requests.at(-1)?.userAgent).toMatch(/^kubernetes-client-javascript\//)
    const again = await apply('pulumi-kubernetes-9f8e7d6c', deploymentOf(3, '1.5.0'))
    expect(again.body.message).toBe(
      'Apply failed with 1 conflict: conflict with "kubernetes-client-javascript" with subresource "scale" using apps/v1: .spec.replicas',
    )
    // The summary the pods come from followed the stop: no pod left.
    expect(api.state.pods).toEqual([])
  })

  it('replaces the managed fields as a JSON patch gives them (how pulumi-kubernetes takes over kubectl)', async () => {
    await givenScaled()
    const entries = managers().filter((m) => m.manager !== 'kubernetes-client-javascript')
    expect(entries.length).toBeLessThan(managers().length)
    const patched = await call(
      api.token,
      'PATCH',
      DEPLOYMENT,
      [{ op: 'replace', path: '/metadata/managedFields', value: entries }],
      'application/json-patch+json',
    )
    expect(patched.code).toBe(200)
    expect(managers().map((m) => m.manager)).toEqual(entries.map((m) => m.manager))
  })
})

describe('rights on the stand-in', () => {
  const role = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: 'reader', namespace: 'svc-prod' },
    rules: [
      { apiGroups: ['apps'], resources: ['deployments'], resourceNames: ['svc-recording'], verbs: ['get'] },
      { apiGroups: [''], resources: ['namespaces'], resourceNames: ['svc-prod'], verbs: ['get'] },
    ],
  }
  const binding = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'reader', namespace: 'svc-prod' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'reader' },
    subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: 'svc-prod' }],
  }

  it('gives a ServiceAccount what its bound Role grants in that namespace, its own namespace object included, and refuses the rest with the API’s 403', async () => {
    const token = api.serviceAccountToken('svc-prod', 'reader')
    expect((await call(token, 'GET', DEPLOYMENT)).code).toBe(403)
    for (const [path, object] of [
      ['/apis/rbac.authorization.k8s.io/v1/namespaces/svc-prod/roles', role],
      ['/apis/rbac.authorization.k8s.io/v1/namespaces/svc-prod/rolebindings', binding],
      ['/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'svc-prod' } }],
    ] as const)
      expect((await call(api.token, 'POST', path, object)).code).toBe(201)
    expect((await call(token, 'GET', DEPLOYMENT)).code).toBe(200)
    expect((await call(token, 'GET', '/api/v1/namespaces/svc-prod')).code).toBe(200)
    const refused = await call(token, 'GET', '/api/v1/namespaces/svc-prod/secrets/svc-psk')
    expect(refused).toEqual({
      code: 403,
      body: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message:
          'secrets "svc-psk" is forbidden: User "system:serviceaccount:svc-prod:reader" cannot get resource "secrets" in API group "" in the namespace "svc-prod"',
        reason: 'Forbidden',
        details: { name: 'svc-psk', group: '', kind: 'secrets' },
        code: 403,
      },
    })
    // A name-restricted rule never allows a list.
    expect((await call(token, 'GET', '/apis/apps/v1/namespaces/svc-prod/deployments')).body.message).toBe(
      'deployments.apps is forbidden: User "system:serviceaccount:svc-prod:reader" cannot list resource "deployments" in API group "apps" in the namespace "svc-prod"',
    )
    const review = (attrs: Obj) =>
      call(token, 'POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SelfSubjectAccessReview',
        spec: { resourceAttributes: { namespace: 'svc-prod', ...attrs } },
      })
    expect(
      ((await review({ group: 'apps', resource: 'deployments', verb: 'get', name: 'svc-recording' })).body.status as Obj).allowed,
    ).toBe(true)
    expect(((await review({ group: 'apps', resource: 'deployments', verb: 'get' })).body.status as Obj).allowed).toBe(false)
    expect(((await review({ group: '', resource: 'secrets', verb: 'get', name: 'svc-psk' })).body.status as Obj).allowed).toBe(false)
  })
})
