/**
 * The deadline and the body cap of each Kubernetes API call, taken from the one table of svcops'
 * HTTP limits (src/core/http.ts, peers `kubernetes-*`) and put on @kubernetes/client-node's own
 * requests through its middleware: `pre` gives the request an abort signal (the deadline, covering
 * the answer's body too), `post` replaces the answer's body readers with ones that stop at the cap
 * and cancel the stream. A pod that answers its /metrics without end through the pod proxy, or an
 * API server that never answers, costs a bounded memory and a bounded time.
 */
import type { ConfigurationOptions, Observable, ObservableMiddleware, RequestContext, ResponseContext } from '@kubernetes/client-node'
import { deadlineError, limitsOf, readCappedStream, tooLargeError, type HttpPeer, type Limits } from '../core/http.ts'

/** The peers of the Kubernetes API: a plain call, a pod's log, a read through the pod proxy. */
export type KubernetesPeer = Extract<HttpPeer, `kubernetes-${string}`>

/** The body readers of an answer as client-node's ResponseContext holds them. */
interface ResponseBody {
  text(): Promise<string>
  binary(): Promise<Buffer>
  stream(): ReadableStream<Uint8Array> | null | undefined
}

/**
 * The options of one call: its deadline and body cap (`limitsOf` of `peer`, shortened by the
 * target's configured `timeoutMs`), described in errors as `what`; `headers` are set on the request
 * too (a patch's content type). `observable` is the library's own Observable (its middleware's currency).
 */
export function callLimits(
  peer: KubernetesPeer,
  what: string,
  timeoutMs: number | undefined,
  headers: Record<string, string>,
  observable: typeof Observable,
): { limits: Limits; options: ConfigurationOptions; translate(error: unknown): unknown } {
  const limits = limitsOf({ peer, timeoutMs })
  const of = <T>(value: T): Observable<T> => new observable(Promise.resolve(value))
  const middleware: ObservableMiddleware = {
    pre: (request: RequestContext) => {
      request.setSignal(AbortSignal.timeout(limits.timeoutMs))
      for (const [key, value] of Object.entries(headers)) request.setHeaderParam(key, value)
      return of(request)
    },
    post: (response: ResponseContext) => {
      const body = response.body as unknown as ResponseBody
      const tooLarge = () => tooLargeError(what, limits.maxBodyBytes, response.httpStatusCode)
      const capped = () => readCappedStream(body.stream() as AsyncIterable<Uint8Array> | null | undefined, limits.maxBodyBytes, tooLarge)
      const replaced: ResponseBody = {
        text: capped,
        binary: async () => Buffer.from(await capped(), 'utf8'),
        stream: () => body.stream(),
      }
      response.body = replaced as unknown as ResponseContext['body']
      return of(response)
    },
  }
  return {
    limits,
    options: { middleware: [middleware], middlewareMergeStrategy: 'append' },
    translate: (error) =>
      error instanceof Error && (error.name === 'TimeoutError' || (error.name === 'AbortError' && /timeout/i.test(String(error.cause))))
        ? deadlineError(what, limits.timeoutMs)
        : error,
  }
}
