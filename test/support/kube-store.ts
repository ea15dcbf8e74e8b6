/**
 * The objects the Kubernetes API stand-in holds, written as the API server writes them: create,
 * server-side apply (with `fieldManager`, `force`, `dryRun`), merge / strategic merge / JSON
 * patches and the `scale` subresource of a Deployment, each recording its manager in
 * `metadata.managedFields` (./kube-fields.ts), bumping `metadata.generation` when more than
 * metadata changed, and answering errors with the API's `Status` (NotFound, AlreadyExists,
 * Conflict with the conflicting manager and field, Invalid).
 */
import { randomUUID } from 'node:crypto'
import { isDeepStrictEqual } from 'node:util'
import { parse as parseYaml } from 'yaml'
import {
  applyFields,
  conflictMessage,
  jsonPatch,
  mergePatch,
  showManager,
  textOf,
  updateFields,
  type Json,
  type ManagedFieldsEntry,
  type Obj,
} from './kube-fields.ts'
import { apiVersionOf, type KindInfo } from './kube-kinds.ts'

/** An answer of the store: the HTTP code and the body. */
export interface StoreAnswer {
  code: number
  body: Obj
}

/** How a write is made. */
export interface WriteOptions {
  /** The manager recorded: `fieldManager`, else the User-Agent's product (`kubernetes-client-javascript`). */
  manager: string | undefined
  force?: boolean
  dryRun?: boolean
}

/** The API reference's `Status` for an error. */
export function statusOf(code: number, reason: string, message: string, details?: Obj): Obj {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, ...(details ? { details } : {}), code }
}

function qualified(info: KindInfo): string {
  return info.group ? `${info.resource}.${info.group}` : info.resource
}

function notFound(info: KindInfo, name: string): StoreAnswer {
  return {
    code: 404,
    body: statusOf(404, 'NotFound', `${qualified(info)} ${JSON.stringify(name)} not found`, {
      name,
      group: info.group,
      kind: info.resource,
    }),
  }
}

const meta = (o: Obj): Obj => (o.metadata ?? {}) as Obj

/** Everything but metadata and status: a change there is a new generation. */
function specOf(o: Obj): Obj {
  const { metadata: _m, status: _s, ...rest } = o
  return rest
}

export class ObjectStore {
  private readonly objects = new Map<string, Obj>()
  private version = 1000

  private key(info: KindInfo, namespace: string, name: string): string {
    return `${info.group}/${info.resource}/${info.namespaced ? namespace : ''}/${name}`
  }

  /** A copy of the stored object, if any. */
  get(info: KindInfo, namespace: string, name: string): Obj | undefined {
    const o = this.objects.get(this.key(info, namespace, name))
    return o ? structuredClone(o) : undefined
  }

  /** Copies of the objects of a kind in a namespace (every namespace for a cluster-scoped kind). */
  list(info: KindInfo, namespace: string): Obj[] {
    const prefix = `${info.group}/${info.resource}/${info.namespaced ? namespace : ''}/`
    return [...this.objects.entries()].filter(([k]) => k.startsWith(prefix)).map(([, o]) => structuredClone(o))
  }

  /** Copies of every stored object. */
  all(): Obj[] {
    return [...this.objects.values()].map((o) => structuredClone(o))
  }

  /** `GET` of one object. */
  read(info: KindInfo, namespace: string, name: string): StoreAnswer {
    const o = this.get(info, namespace, name)
    return o ? { code: 200, body: o } : notFound(info, name)
  }

  /** `DELETE` of one object. */
  remove(info: KindInfo, namespace: string, name: string): StoreAnswer {
    const k = this.key(info, namespace, name)
    const o = this.objects.get(k)
    if (!o) return notFound(info, name)
    this.objects.delete(k)
    return { code: 200, body: statusOf(200, '', '', { name, group: info.group, kind: info.resource }) }
  }

  /** `POST`: a new object (201); its every field is the creator's (an Update entry). */
  create(info: KindInfo, namespace: string, body: Obj, options: WriteOptions): StoreAnswer {
    const name = textOf(meta(body).name)
    if (this.objects.has(this.key(info, namespace, name)))
      return {
        code: 409,
        body: statusOf(409, 'AlreadyExists', `${qualified(info)} ${JSON.stringify(name)} already exists`, {
          name,
          group: info.group,
          kind: info.resource,
        }),
      }
    const now = new Date().toISOString()
    const object = this.stamp(info, namespace, name, structuredClone(body), undefined)
    meta(object).managedFields = updateFields(undefined, object, options.manager ?? 'unknown', apiVersionOf(info), undefined, now) as never
    // 201 Created, as the API server answers a create (200 is a replace's or a patch's).
    return { ...this.commit(info, namespace, name, object, options), code: 201 }
  }

  /**
   * `PATCH` of an object or its `scale` subresource, by content type: an apply
   * (`application/apply-patch+yaml`), a merge patch, a strategic merge patch or a JSON patch.
   */
  patch(
    info: KindInfo,
    namespace: string,
    name: string,
    subresource: string,
    contentType: string,
    text: string,
    options: WriteOptions,
  ): StoreAnswer {
    const type = contentType.split(';')[0]?.trim() ?? ''
    let body: Json
    try {
      body = (type === 'application/apply-patch+yaml' ? parseYaml(text) : JSON.parse(text)) as Json
    } catch (error) {
      return {
        code: 400,
        body: statusOf(400, 'BadRequest', `the body of the request was in an unknown format: ${(error as Error).message}`),
      }
    }
    const now = new Date().toISOString()
    const before = this.get(info, namespace, name)
    if (type === 'application/apply-patch+yaml') {
      if (!options.manager)
        return {
          code: 422,
          body: statusOf(
            422,
            'Invalid',
            'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
          ),
        }
      if (subresource)
        return { code: 400, body: statusOf(400, 'BadRequest', `apply to the ${subresource} subresource is not supported here`) }
      const applied = body as Obj
      const result = applyFields(before, applied, options.manager, options.force === true, now)
      if (result.conflicts.length > 0)
        return {
          code: 409,
          body: statusOf(409, 'Conflict', conflictMessage(result.conflicts), {
            causes: result.conflicts.map((c) => ({
              reason: 'FieldManagerConflict',
              message: `conflict with ${showManager(c.manager)}`,
              field: c.path,
            })),
          }),
        }
      const object = this.stamp(info, namespace, name, result.object, before)
      meta(object).managedFields = result.managedFields as never
      return this.commit(info, namespace, name, object, options)
    }
    if (!before) return notFound(info, name)
    const manager = options.manager ?? 'unknown'
    if (subresource === 'scale') {
      if (info.resource !== 'deployments') return notFound(info, name)
      const replicas = (body as { spec?: { replicas?: Json } }).spec?.replicas
      if (typeof replicas !== 'number') return { code: 422, body: statusOf(422, 'Invalid', 'spec.replicas: Required value') }
      const after = structuredClone(before)
      after.spec = { ...(after.spec as Obj), replicas }
      // The scale subresource records its writer on the Deployment, under the Deployment's apiVersion.
      meta(after).managedFields = updateFields(before, after, manager, apiVersionOf(info), 'scale', now) as never
      const answer = this.commit(info, namespace, name, this.stamp(info, namespace, name, after, before), options)
      if (answer.code !== 200) return answer
      return {
        code: 200,
        body: {
          apiVersion: 'autoscaling/v1',
          kind: 'Scale',
          metadata: { name, namespace, resourceVersion: meta(answer.body).resourceVersion ?? '' },
          spec: { replicas },
          status: { replicas },
        },
      }
    }
    if (subresource) return { code: 404, body: statusOf(404, 'NotFound', 'the server could not find the requested resource') }
    let after: Obj
    try {
      if (type === 'application/json-patch+json') after = jsonPatch(before, body as { op: string; path: string; value?: Json }[])
      else if (type === 'application/merge-patch+json' || type === 'application/strategic-merge-patch+json')
        after = mergePatch(before, body, type === 'application/strategic-merge-patch+json') as Obj
      else return { code: 415, body: statusOf(415, 'UnsupportedMediaType', `the body of the request was in an unknown format: ${type}`) }
    } catch (error) {
      return { code: 422, body: statusOf(422, 'Invalid', (error as Error).message) }
    }
    // A write of managedFields itself is taken as given; any other change moves to the patcher.
    const fieldsWritten = !isDeepStrictEqual(meta(after).managedFields, meta(before).managedFields)
    if (!fieldsWritten) meta(after).managedFields = updateFields(before, after, manager, apiVersionOf(info), undefined, now) as never
    return this.commit(info, namespace, name, this.stamp(info, namespace, name, after, before), options)
  }

  /** The server's own fields: identity, uid, creation time, generation, resourceVersion. */
  private stamp(info: KindInfo, namespace: string, name: string, object: Obj, before: Obj | undefined): Obj {
    const m = { ...meta(object) }
    m.name = name
    if (info.namespaced) m.namespace = namespace
    else delete m.namespace
    m.uid = before ? (meta(before).uid ?? randomUUID()) : randomUUID()
    m.creationTimestamp = before ? (meta(before).creationTimestamp ?? new Date().toISOString()) : new Date().toISOString()
    const generation = Number(before ? (meta(before).generation ?? 1) : 0)
    m.generation = !before ? 1 : isDeepStrictEqual(specOf(object), specOf(before)) ? generation : generation + 1
    object.apiVersion = apiVersionOf(info)
    object.kind = info.kind
    object.metadata = m
    return object
  }

  /** Stores (unless a dry run) and answers the object as stored. */
  private commit(info: KindInfo, namespace: string, name: string, object: Obj, options: WriteOptions): StoreAnswer {
    meta(object).resourceVersion = String(++this.version)
    if (!options.dryRun) this.objects.set(this.key(info, namespace, name), structuredClone(object))
    return { code: 200, body: object }
  }
}

/** The managed fields of a stored object. */
export function managedFieldsOf(o: Obj | undefined): ManagedFieldsEntry[] {
  return ((o?.metadata as Obj | undefined)?.managedFields ?? []) as unknown as ManagedFieldsEntry[]
}
