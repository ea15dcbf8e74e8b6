/**
 * ConfigMaps svcops writes itself in a stack's namespace (its run store: src/live/kubernetes/
 * live-cluster-run-store.ts), through the same client library, kubeconfig, context, deadlines and
 * body caps as the Kubernetes driver (kubernetes.ts, kubernetes-limits.ts). Only svcops' own
 * objects: what the Pulumi program manages, only the program writes (DESIGN.md, rule 7).
 *
 *   list    GET /api/v1/namespaces/NS/configmaps?labelSelector=...   (the labels checked again on the answer)
 *   read    GET /api/v1/namespaces/NS/configmaps/NAME                 (404: none)
 *   write   PATCH ... (merge patch of labels and data), POST when the answer is 404
 *   delete  DELETE /api/v1/namespaces/NS/configmaps/NAME              (404: nothing to do)
 *
 * The rights: get, list, create, patch and delete configmaps in the namespace (docs/live.md).
 */
import type { CoreV1Api, KubeConfig } from '@kubernetes/client-node'
import { errorMessage } from '../core/errors.ts'
import { callKubernetes, kubernetesClient, loadKubeConfig, type ClusterTarget } from './kubernetes.ts'
import type { callLimits } from './kubernetes-limits.ts'

type Where = Pick<ClusterTarget, 'namespace' | 'context' | 'kubeconfig' | 'timeoutMs'>

/** The requests each call sends, for messages and the docs. */
export const describeConfigMapCall = {
  list: (t: Pick<Where, 'namespace'>, selector: string) => `GET /api/v1/namespaces/${t.namespace}/configmaps?labelSelector=${selector}`,
  read: (t: Pick<Where, 'namespace'>, name: string) => `GET /api/v1/namespaces/${t.namespace}/configmaps/${name}`,
  write: (t: Pick<Where, 'namespace'>, name: string) =>
    `PATCH /api/v1/namespaces/${t.namespace}/configmaps/${name} (merge patch; POST /api/v1/namespaces/${t.namespace}/configmaps when absent)`,
  delete: (t: Pick<Where, 'namespace'>, name: string) => `DELETE /api/v1/namespaces/${t.namespace}/configmaps/${name}`,
}

/** An API answer of 404: the object does not exist. */
function isNotFound(error: unknown): boolean {
  return (error as { code?: unknown } | undefined)?.code === 404
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(errorMessage(error))
}

/** svcops' own ConfigMaps in the namespace of `where`. Nothing connects until a call. */
export class ConfigMapClient {
  readonly where: Where
  private readonly kc: KubeConfig
  private readonly core: CoreV1Api

  constructor(where: Where, kc = loadKubeConfig(where)) {
    this.where = where
    this.kc = kc
    this.core = kc.makeApiClient(kubernetesClient().CoreV1Api)
  }

  /** The ConfigMaps carrying every one of `labels`: name and data. */
  async list(labels: Record<string, string>): Promise<{ name: string; data: Record<string, string> }[]> {
    const selector = Object.entries(labels)
      .map(([k, v]) => `${k}=${v}`)
      .join(',')
    const list = await this.call(describeConfigMapCall.list(this.where, selector), (options) =>
      this.core.listNamespacedConfigMap({ namespace: this.where.namespace, labelSelector: selector }, options),
    )
    return list.items
      .filter((m) => Object.entries(labels).every(([k, v]) => m.metadata?.labels?.[k] === v))
      .map((m) => ({ name: m.metadata?.name ?? '?', data: m.data ?? {} }))
  }

  /** The data of ConfigMap `name`, or undefined when there is none of that name. */
  read(name: string): Promise<Record<string, string> | undefined> {
    return this.call(describeConfigMapCall.read(this.where, name), (options) =>
      this.core.readNamespacedConfigMap({ name, namespace: this.where.namespace }, options).then(
        (m) => m.data ?? {},
        (error: unknown) => (isNotFound(error) ? undefined : Promise.reject(asError(error))),
      ),
    )
  }

  /** Writes ConfigMap `name` with `labels` and `data` (each key replaced whole), created when absent. */
  async write(name: string, labels: Record<string, string>, data: Record<string, string>): Promise<void> {
    const { namespace } = this.where
    const request = describeConfigMapCall.write(this.where, name)
    const patched = await this.call(
      request,
      (options) =>
        this.core.patchNamespacedConfigMap({ name, namespace, body: { metadata: { labels }, data } }, options).then(
          () => true,
          (error: unknown) => (isNotFound(error) ? false : Promise.reject(asError(error))),
        ),
      { 'Content-Type': kubernetesClient().PatchStrategy.MergePatch },
    )
    if (patched) return
    await this.call(request, (options) =>
      this.core.createNamespacedConfigMap(
        { namespace, body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace, labels }, data } },
        options,
      ),
    )
  }

  /** Deletes ConfigMap `name`; nothing when there is none. */
  async remove(name: string): Promise<void> {
    await this.call(describeConfigMapCall.delete(this.where, name), (options) =>
      this.core.deleteNamespacedConfigMap({ name, namespace: this.where.namespace }, options).then(
        () => undefined,
        (error: unknown) => (isNotFound(error) ? undefined : Promise.reject(asError(error))),
      ),
    )
  }

  /** One call with the driver's deadline and body cap; its failure names the request and the server, never a token. */
  private call<T>(request: string, fn: (options: ReturnType<typeof callLimits>['options']) => Promise<T>, headers = {}): Promise<T> {
    const server = this.kc.getCurrentCluster()?.server ?? 'the cluster'
    const what = request.replace(/ \(.*$/, '')
    return callKubernetes({ request, what, server, timeoutMs: this.where.timeoutMs, rights: 'docs/live.md (the run store)', headers }, fn)
  }
}
