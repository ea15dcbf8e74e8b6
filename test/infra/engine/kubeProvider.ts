/**
 * The part of pulumi-kubernetes 4.x (server-side apply mode, its default) that talks to the
 * cluster, for the in-test engine (./engine.ts, `cluster: true`): the requests its Create, Update,
 * Read and refresh send, to whatever API server the provider's kubeconfig names (the Kubernetes API
 * stand-in in tests). Read from the provider's sources (provider/pkg/await/await.go,
 * provider/pkg/provider/provider.go in pulumi/pulumi-kubernetes):
 *
 * - the kubeconfig: the provider input `kubeconfig` (a path or the file's text) when not empty,
 *   else KUBECONFIG of the machine (its first file), else ~/.kube/config, read as client-go reads
 *   it (`token`, `tokenFile`, `certificate-authority[-data]`); the context from the input;
 * - create (provider/pkg/await/await.go, `Creation`): a client-side `POST` under the static field
 *   manager `pulumi-kubernetes` (an Update entry owning every field), which answers 409
 *   AlreadyExists for an object that is there, with upstream's hint; a server-side apply instead
 *   only with `upsertExistingObjects` (input, else PULUMI_K8S_UPSERT_EXISTING_OBJECTS) or for a
 *   `*Patch` resource; a preview sends the same request with `dryRun=All`;
 * - update (await.go, `Update` and `ssaUpdate`): a server-side apply (`PATCH`
 *   `application/apply-patch+yaml`) with the resource's own field manager: the
 *   `pulumi.com/patchFieldManager` annotation, else the one kept in state, else a new
 *   `pulumi-kubernetes-<8 hex>` (the create's static manager is taken over on the first update);
 * - `force` (await.go, `patchForce`): the `pulumi.com/patchForce: "true"` annotation; else the
 *   provider input `enablePatchForce` when given; else PULUMI_K8S_ENABLE_PATCH_FORCE (`true`); in a
 *   preview also when the object does not exist yet or carries a client-side-apply manager of the
 *   provider (an Update entry of `pulumi-kubernetes`, `pulumi-kubernetes.exe`,
 *   `pulumi-resource-kubernetes`); and always when the live object has no `managedFields` at all
 *   (a legacy object whose fields `before-first-apply` owns); otherwise never;
 * - before an update (not in a preview, not for a `*Patch` resource, not when the live object has
 *   no `managedFields`) the entries of the managers it takes over become its own Apply entry
 *   (await.go `fixCSAFieldManagers`, which calls fluxcd/pkg ssa/patch.go
 *   `PatchReplaceFieldsManagers`): an entry matches when its manager STARTS WITH one of `kubectl`
 *   (Apply or Update), `before-first-apply`, `pulumi-kubernetes`, `pulumi-kubernetes.exe`,
 *   `pulumi-resource-kubernetes` (Update), with the operation named and no subresource. So an
 *   operator's `kubectl edit` (manager `kubectl-edit`, Update) or `kubectl patch` (`kubectl-patch`)
 *   is taken over without a conflict and the apply silently puts the program's value back, while
 *   `kubectl scale` (subresource `scale`) and any other client's manager stay theirs and conflict;
 * - a 409 Conflict becomes "Server-Side Apply field conflict detected. See <link> for troubleshooting
 *   help." and "The resource managed by field manager "<m>" had an apply conflict: <the API's
 *   message>" (handleSSAErr);
 * - a preview of an update is the same apply with `dryRun=All`, without the take-over (skipped while
 *   inputs hold unknowns): an operator's edit of a field the program owns conflicts there, before
 *   the update that would revert it;
 * - Read (a `.get`, a refresh) is a `GET` of the object: 404 means gone, any other error (a 403
 *   Forbidden) is passed on as the API's message;
 * - a refresh's Read also judges readiness as the kind's awaiter does (provider/pkg/provider/
 *   provider.go `Read` calls await.go `Read`, which for a Deployment runs deployment.go's
 *   `deploymentInitAwaiter.Read`): a Deployment whose available or updated replicas fall short of
 *   `spec.replicas` is read back with initialization errors, the sub-errors of upstream's
 *   `errorMessages` (`[MinimumReplicasUnavailable] Deployment does not have minimum
 *   availability.`, `Minimum number of live Pods was not attained`), which the provider returns as
 *   the resource's `initErrors` and the engine keeps in the checkpoint (`refreshReadiness`). The
 *   pods' own messages (`[Pod ns/name]: containers with unready status: [...]`) are not modelled.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { request } from 'node:https'
import { join } from 'node:path'
import { parse as parseYaml } from 'yaml'
import { textOf } from '../../support/kube-fields.ts'
import { apiVersionOf, kindInfo, objectPath, type KindInfo } from '../../support/kube-kinds.ts'
import { hasUnknown, plain, type Value } from './wire.ts'

type Obj = Record<string, Value>

/** A failure as the provider reports it. */
export class ProviderError extends Error {}

const SSA_LINK =
  'https://www.pulumi.com/registry/packages/kubernetes/how-to-guides/managing-resources-with-server-side-apply/#handle-field-conflicts-on-existing-resources'

/**
 * The managers whose fields the provider takes over before an update (await.go
 * `fixCSAFieldManagers`): each a PREFIX of the entry's manager, with its operation, as fluxcd/pkg
 * ssa/patch.go `patchReplaceFieldsManagers` matches them (`strings.HasPrefix`, no subresource).
 */
const TAKEN_OVER: [string, 'Apply' | 'Update'][] = [
  ['kubectl', 'Apply'],
  ['kubectl', 'Update'],
  ['before-first-apply', 'Update'],
  ['pulumi-kubernetes', 'Update'],
  ['pulumi-kubernetes.exe', 'Update'],
  ['pulumi-resource-kubernetes', 'Update'],
]

/** The field manager of a client-side create (await.go `Creation`: "Use the static field manager name for client-side creates"). */
const CREATE_MANAGER = 'pulumi-kubernetes'

interface Connection {
  server: URL
  ca?: Buffer
  token?: string
  cert?: Buffer
  key?: Buffer
}

const isTrue = (v: Value | undefined) => v === true || v === 'true'

/** The kubeconfig the provider uses, read as client-go reads it. */
function connect(providerInputs: Obj, env: Record<string, string>): Connection {
  const input = typeof providerInputs.kubeconfig === 'string' ? providerInputs.kubeconfig : ''
  let text: string
  let base = ''
  if (input !== '') {
    text = existsSync(input) ? readFileSync(input, 'utf8') : input
    base = existsSync(input) ? join(input, '..') : ''
  } else {
    const candidates = [...(env.KUBECONFIG ?? '').split(':').filter(Boolean), join(env.HOME ?? '/nonexistent', '.kube/config')]
    const file = candidates.find((f) => existsSync(f))
    if (!file) throw new ProviderError('unable to load Kubernetes client configuration from kubeconfig file: no kubeconfig found')
    text = readFileSync(file, 'utf8')
    base = join(file, '..')
  }
  const doc = parseYaml(text) as {
    'current-context'?: string
    contexts?: { name: string; context: { cluster: string; user: string } }[]
    clusters?: { name: string; cluster: Record<string, string> }[]
    users?: { name: string; user: Record<string, string> }[]
  }
  const name = typeof providerInputs.context === 'string' && providerInputs.context ? providerInputs.context : doc['current-context']
  const context = doc.contexts?.find((c) => c.name === name)?.context
  if (!context) throw new ProviderError(`unable to load Kubernetes client configuration: context "${String(name)}" does not exist`)
  const cluster = doc.clusters?.find((c) => c.name === context.cluster)?.cluster ?? {}
  const user = doc.users?.find((u) => u.name === context.user)?.user ?? {}
  const file = (p: string | undefined) => (p ? readFileSync(p.startsWith('/') ? p : join(base, p)) : undefined)
  const data = (d: string | undefined) => (d ? Buffer.from(d, 'base64') : undefined)
  // client-go: `token`, else the file `tokenFile` names (clientcmd/api/v1 AuthInfo).
  const tokenFile = user.tokenFile
  const token = user.token ?? (tokenFile ? readFileSync(tokenFile, 'utf8').trim() : undefined)
  return {
    server: new URL(cluster.server ?? 'http://localhost:8080'),
    ...(cluster['certificate-authority-data'] || cluster['certificate-authority']
      ? { ca: data(cluster['certificate-authority-data']) ?? file(cluster['certificate-authority']) }
      : {}),
    ...(token ? { token } : {}),
    ...(user['client-certificate-data'] || user['client-certificate']
      ? { cert: data(user['client-certificate-data']) ?? file(user['client-certificate']) }
      : {}),
    ...(user['client-key-data'] || user['client-key'] ? { key: data(user['client-key-data']) ?? file(user['client-key']) } : {}),
  }
}

interface Answer {
  code: number
  body: Obj
}

/** The provider of one `pulumi:providers:kubernetes` registration on this machine. */
export class KubeProviderModel {
  private readonly inputs: Obj
  private readonly env: Record<string, string>
  private connection: Connection | undefined

  constructor(providerInputs: Obj, env: Record<string, string>) {
    this.inputs = plain(providerInputs) as Obj
    this.env = env
  }

  private call(method: string, path: string, body?: string, contentType?: string): Promise<Answer> {
    this.connection ??= connect(this.inputs, this.env)
    const c = this.connection
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: c.server.hostname,
          port: c.server.port,
          method,
          path,
          // A connection per request: a kept-alive socket the server closed meanwhile (its
          // keep-alive timeout, longer than a busy machine's pauses) would fail the request.
          agent: false,
          ...(c.ca ? { ca: c.ca } : {}),
          ...(c.cert ? { cert: c.cert } : {}),
          ...(c.key ? { key: c.key } : {}),
          headers: {
            'User-Agent': 'pulumi-resource-kubernetes/v4.0.0 (linux/amd64) kubernetes/go',
            Accept: 'application/json',
            ...(c.token ? { Authorization: `Bearer ${c.token}` } : {}),
            ...(contentType ? { 'Content-Type': contentType } : {}),
            // Node sends a DELETE's body unframed without it (no chunked encoding for DELETE).
            ...(body !== undefined ? { 'Content-Length': Buffer.byteLength(body) } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = []
          res.on('data', (d: Buffer) => chunks.push(d))
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8')
            let parsed: Obj = {}
            try {
              parsed = text ? (JSON.parse(text) as Obj) : {}
            } catch {
              parsed = { message: text }
            }
            resolve({ code: res.statusCode ?? 0, body: parsed })
          })
        },
      )
      req.on('error', (error) =>
        reject(new ProviderError(`failed to reach the Kubernetes API server at ${c.server.origin}: ${error.message}`)),
      )
      if (body !== undefined) req.write(body)
      req.end()
    })
  }

  private flag(input: string, variable: string): boolean | undefined {
    const v = this.inputs[input]
    if (v !== undefined && v !== null && v !== '') return isTrue(v)
    return variable in this.env ? this.env[variable] === 'true' : undefined
  }

  /**
   * await.go `patchForce`: the annotation, else the provider input, else the variable; in a preview
   * also new objects and CSA-managed ones; and a live object without `managedFields`.
   */
  private force(object: Obj, live: Obj | undefined, preview: boolean): boolean {
    const annotations = ((object.metadata as Obj | undefined)?.annotations ?? {}) as Obj
    if (isTrue(annotations['pulumi.com/patchForce'])) return true
    const configured = this.flag('enablePatchForce', 'PULUMI_K8S_ENABLE_PATCH_FORCE')
    if (configured === true) return true
    const managers = ((live?.metadata as Obj | undefined)?.managedFields ?? []) as Obj[]
    if (preview) {
      if (!live) return true
      const csa = managers.some(
        (m) =>
          m.operation === 'Update' &&
          ['pulumi-resource-kubernetes', 'pulumi-kubernetes', 'pulumi-kubernetes.exe'].includes(textOf(m.manager)),
      )
      if (csa) return true
    }
    // A legacy object without managedFields: `before-first-apply` owns every field; take it.
    return live !== undefined && managers.length === 0
  }

  /** The kind of a registration (`kubernetes:apps/v1:DeploymentPatch` patches a Deployment). */
  private infoOf(type: string, object: Obj): KindInfo {
    const info = kindInfo(textOf(object.apiVersion), textOf(object.kind))
    if (!info) throw new ProviderError(`the in-test provider has no model of ${type}`)
    return info
  }

  /** The field manager of a resource: annotation, state, or a new one. */
  fieldManager(object: Obj, kept: string | undefined): string {
    const annotation = ((object.metadata as Obj | undefined)?.annotations as Obj | undefined)?.['pulumi.com/patchFieldManager']
    if (typeof annotation === 'string' && annotation) return annotation
    return kept ?? `pulumi-kubernetes-${randomBytes(4).toString('hex')}`
  }

  /** `GET` of the object `namespace/name` of `type`: the live object, or undefined when it is gone; other errors thrown. */
  async read(type: string, apiVersion: string, kind: string, id: string): Promise<Obj | undefined> {
    const info = kindInfo(apiVersion, kind)
    if (!info) throw new ProviderError(`the in-test provider has no model of ${type}`)
    const [namespace, name] = id.includes('/') ? id.split('/') : [undefined, id]
    const got = await this.call('GET', objectPath(info, namespace, name))
    if (got.code === 404) return undefined
    if (got.code !== 200) throw new ProviderError(textOf(got.body.message) || `HTTP ${got.code}`)
    return got.body
  }

  /**
   * A delete (await.go `Deletion`): `DELETE` with the propagation policy of the
   * `pulumi.com/deletionPropagation` annotation, else Foreground (provider/pkg/metadata/overrides.go
   * `DeletionPropagation`); an object already gone is no error. Upstream then waits until the object
   * is gone; the stand-in removes it at once.
   */
  async delete(type: string, outputs: Obj, id: string): Promise<void> {
    const info = this.infoOf(type, outputs)
    const [namespace, name] = id.includes('/') ? id.split('/') : [undefined, id]
    const annotations = ((outputs.metadata as Obj | undefined)?.annotations ?? {}) as Obj
    const policy = textOf(annotations['pulumi.com/deletionPropagation']).toLowerCase()
    const propagationPolicy = policy === 'orphan' ? 'Orphan' : policy === 'background' ? 'Background' : 'Foreground'
    const body = JSON.stringify({ apiVersion: 'v1', kind: 'DeleteOptions', propagationPolicy })
    const gone = await this.call('DELETE', objectPath(info, namespace, name), body, 'application/json')
    if (gone.code !== 200 && gone.code !== 202 && gone.code !== 404)
      throw new ProviderError(textOf(gone.body.message) || `HTTP ${gone.code}`)
  }

  /**
   * A refresh's Read: the live object (undefined when gone) and, for a Deployment the awaiter finds
   * not ready, its initialization errors (deployment.go `errorMessages`, read from the object's
   * status as the awaiter judges it; empty when ready or of another kind).
   */
  async refreshRead(type: string, apiVersion: string, kind: string, id: string): Promise<{ live: Obj | undefined; initErrors: string[] }> {
    const live = await this.read(type, apiVersion, kind, id)
    return { live, initErrors: live ? deploymentInitErrors(kind, live) : [] }
  }

  /**
   * Create or update (`prior` given) of a registration: the live object after the apply. `patch`
   * resources (DeploymentPatch, ...) patch an existing object and never take managers over.
   */
  async apply(
    urn: string,
    type: string,
    inputs: Obj,
    prior: { fieldManager?: string } | undefined,
    preview: boolean,
  ): Promise<{ live: Obj | undefined; fieldManager: string }> {
    const object = plain(inputs) as Obj
    const info = this.infoOf(type, object)
    const patchResource = type.endsWith('Patch')
    const metadata = (object.metadata ?? {}) as Obj
    const namespace = info.namespaced ? textOf(metadata.namespace) || 'default' : undefined
    const name = textOf(metadata.name)
    const manager = this.fieldManager(object, prior?.fieldManager)
    const where = `${namespace ? `${namespace}/` : ''}${name}`
    if (preview && hasUnknown(object)) return { live: undefined, fieldManager: manager }
    const path = objectPath(info, namespace, name)
    const upsert = this.flag('upsertExistingObjects', 'PULUMI_K8S_UPSERT_EXISTING_OBJECTS') === true
    const body = { ...object, apiVersion: apiVersionOf(info), kind: info.kind }
    if (!prior && !patchResource && !upsert) return this.create(urn, info, namespace, body, manager, preview)
    const existing = await this.call('GET', path)
    if (existing.code !== 200 && existing.code !== 404) throw new ProviderError(textOf(existing.body.message) || `HTTP ${existing.code}`)
    let live = existing.code === 200 ? existing.body : undefined
    if (patchResource && !live) {
      if (preview) return { live: undefined, fieldManager: manager }
      throw new ProviderError(
        `resource "${where}" was not successfully created by the Kubernetes API server: ${info.kind} "${name}" not found`,
      )
    }
    if (prior && live && !preview && !patchResource) live = await this.takeOver(path, live, manager)
    const force = this.force(object, live, preview)
    const query = new URLSearchParams({ fieldManager: manager, force: String(force), ...(preview ? { dryRun: 'All' } : {}) })
    const applied = await this.call('PATCH', `${path}?${query.toString()}`, JSON.stringify(body), 'application/apply-patch+yaml')
    if (applied.code === 200) return { live: applied.body, fieldManager: manager }
    let message = textOf(applied.body.message) || `HTTP ${applied.code}`
    if (applied.code === 409 && applied.body.reason === 'Conflict')
      message = `Server-Side Apply field conflict detected. See ${SSA_LINK} for troubleshooting help.\nThe resource managed by field manager ${JSON.stringify(manager)} had an apply conflict: ${message}`
    throw new ProviderError(
      prior
        ? `the Kubernetes API server reported that "${where}" failed to fully initialize or become live: ${message}`
        : `resource "${urn}" was not successfully created by the Kubernetes API server: ${message}`,
    )
  }

  /**
   * await.go `Creation` without `upsertExistingObjects`: a client-side `POST` under the static
   * manager `pulumi-kubernetes` (so that the first update's take-over moves its fields to the
   * resource's own manager); an object that exists answers 409 AlreadyExists, reported with
   * upstream's hint. The resource keeps `manager` for its updates.
   */
  private async create(
    urn: string,
    info: KindInfo,
    namespace: string | undefined,
    body: Obj,
    manager: string,
    preview: boolean,
  ): Promise<{ live: Obj | undefined; fieldManager: string }> {
    const query = new URLSearchParams({ fieldManager: CREATE_MANAGER, ...(preview ? { dryRun: 'All' } : {}) })
    const created = await this.call('POST', `${objectPath(info, namespace)}?${query.toString()}`, JSON.stringify(body), 'application/json')
    if (created.code === 200 || created.code === 201) return { live: created.body, fieldManager: manager }
    const message = textOf(created.body.message) || `HTTP ${created.code}`
    const hint =
      created.code === 409 && created.body.reason === 'AlreadyExists'
        ? '\n\nThe resource already exists in the cluster. Managing an existing resource: use a Patch resource, adopt it with `pulumi import`, or set upsertExistingObjects on the provider.'
        : ''
    throw new ProviderError(`resource "${urn}" was not successfully created by the Kubernetes API server: ${message}${hint}`)
  }

  /** fixCSAFieldManagers: the fields of the managers the provider takes over become `manager`'s (one JSON patch). */
  private async takeOver(path: string, live: Obj, manager: string): Promise<Obj> {
    const entries = ((live.metadata as Obj | undefined)?.managedFields ?? []) as Obj[]
    const taken = entries.filter((e) =>
      TAKEN_OVER.some(([m, op]) => textOf(e.manager).startsWith(m) && e.operation === op && !e.subresource),
    )
    if (taken.length === 0) return live
    const merge = (a: Value, b: Value): Value => {
      if (!a || typeof a !== 'object' || Array.isArray(a)) return b
      if (!b || typeof b !== 'object' || Array.isArray(b)) return a
      const out: Obj = { ...a }
      for (const [k, v] of Object.entries(b)) out[k] = k in out ? merge(out[k] ?? null, v) : v
      return out
    }
    const mine = entries.find((e) => e.manager === manager && e.operation === 'Apply')
    const fields = taken.reduce<Value>((acc, e) => merge(acc, e.fieldsV1 ?? {}), mine?.fieldsV1 ?? {})
    const rest = entries.filter((e) => !taken.includes(e) && e !== mine)
    const next = [
      ...rest,
      {
        manager,
        operation: 'Apply',
        apiVersion: textOf(live.apiVersion),
        time: new Date().toISOString(),
        fieldsType: 'FieldsV1',
        fieldsV1: fields,
      },
    ]
    const patched = await this.call(
      'PATCH',
      path,
      JSON.stringify([{ op: 'replace', path: '/metadata/managedFields', value: next }]),
      'application/json-patch+json',
    )
    if (patched.code !== 200) throw new ProviderError(textOf(patched.body.message) || `HTTP ${patched.code}`)
    return patched.body
  }
}

/**
 * What pulumi-kubernetes' Deployment awaiter reports of a Deployment that is not ready
 * (provider/pkg/await/deployment.go, `deploymentInitAwaiter.errorMessages`): the controller's
 * MinimumReplicasUnavailable condition and "Minimum number of live Pods was not attained" while
 * fewer replicas are available than `spec.replicas` asks; "Minimum number of Pods to consider the
 * application live was not attained" while the updated ones fall short. Nothing for another kind.
 */
export function deploymentInitErrors(kind: string, live: Obj): string[] {
  if (kind !== 'Deployment') return []
  const spec = (live.spec ?? {}) as Obj
  const status = (live.status ?? {}) as Obj
  const wanted = typeof spec.replicas === 'number' ? spec.replicas : 1
  const count = (v: Value | undefined) => (typeof v === 'number' ? v : 0)
  if (count(status.availableReplicas) < wanted)
    return ['[MinimumReplicasUnavailable] Deployment does not have minimum availability.', 'Minimum number of live Pods was not attained']
  if (count(status.updatedReplicas) < wanted) return ['Minimum number of Pods to consider the application live was not attained']
  return []
}
