/**
 * Declared checks (`svcops:live.checks`): what a site says about the live production system where
 * the seed is silent — how a component shows it is connected to the system controller, where its
 * metrics are served, which file on its host must be there. Each check has one provider, as Argo
 * Rollouts' analysis templates do: an HTTP request with an expectation (`web`), a metric with a
 * condition (`metric`), or a command on the component's host (`command`). The checks on the seed's
 * own endpoints need no declaration: src/live/live-checks.ts makes them from the release.
 *
 * Placeholders in paths, names and arguments: `{api}` the release's API prefix (`/api/v3`),
 * `{version}` the release, `{unit}` the instance's name (`ingest`, or `live-2/ingest` across
 * hosts), `{component}` its type, `{product}` the product prefix (`svc`), `{uuid}` the instance's
 * UUID (`svcops:live.uuids`), `{root}` a lab host's sandbox root (empty on a real host).
 */
import { z } from 'zod'

/** The live components a check may name (the catalog's order). */
const COMPONENTS = ['system-controller', 'ingest', 'pipeline', 'control-panel'] as const

const PLACEHOLDER = /\{([a-z]+)\}/g
const KNOWN = new Set(['api', 'version', 'unit', 'component', 'product', 'uuid', 'root'])

/** A text whose placeholders are all known ones. */
const template = z
  .string()
  .min(1)
  .refine((s) => [...s.matchAll(PLACEHOLDER)].every((m) => KNOWN.has(m[1] ?? '')), {
    error: `expected only the placeholders ${[...KNOWN].map((k) => `{${k}}`).join(', ')}`,
  })

const webSchema = z.strictObject({
  /** Whose HTTP server answers: the system controller (`live.controllerUrl`, the default) or the component's own port. */
  target: z.enum(['controller', 'component']).default('controller'),
  /** The request's path, like `{api}/components`. */
  path: template.refine((s) => s.startsWith('/') || s.startsWith('{api}'), { error: 'expected a path starting with / or {api}' }),
  /** The status that passes (default 200). */
  status: z.number().int().min(100).max(599).default(200),
  /**
   * A JSON value the answer must contain (its strings may hold placeholders): an object's members
   * with these values; in an array, one element that contains it.
   */
  contains: z.unknown().optional(),
})

const metricSchema = z
  .strictObject({
    /** The path of the component's Prometheus text exposition on its metrics port (default /metrics). */
    path: z
      .string()
      .regex(/^\/[A-Za-z0-9._/-]*$/, 'expected a path like /metrics')
      .default('/metrics'),
    /** A metric's name (placeholders allowed) and the value it must have. */
    name: template.optional(),
    equals: z.number().optional(),
    /** Every metric name the catalog gives the component's release must be exposed. */
    releaseNames: z.boolean().optional(),
  })
  .refine((m) => (m.name !== undefined) === (m.equals !== undefined) && (m.name !== undefined || m.releaseNames === true), {
    error: 'expected name with equals, or releaseNames: true',
  })

const commandSchema = z.strictObject({
  /**
   * The command's argv on the component's host (exit 0 passes); never a shell line. It must only
   * read: `svcops probe` runs it too, and promises to change nothing.
   */
  argv: z.array(template).min(1),
})

/** One declared check: a name, the components it applies to, and exactly one provider. */
export const declaredCheckSchema = z
  .strictObject({
    name: z.string().min(1).max(120),
    /** The component types it applies to (default: all four). */
    components: z.array(z.enum(COMPONENTS)).min(1).optional(),
    web: webSchema.optional(),
    metric: metricSchema.optional(),
    command: commandSchema.optional(),
  })
  .refine((c) => [c.web, c.metric, c.command].filter((p) => p !== undefined).length === 1, {
    error: 'expected exactly one provider: web, metric or command',
  })

export type DeclaredCheck = z.infer<typeof declaredCheckSchema>

/** A list of declared checks names each check once (the name keys its row in reports and the probe). */
function namesOnce(checks: { name: string }[], ctx: z.RefinementCtx): void {
  const seen = new Set<string>()
  for (const [i, c] of checks.entries()) {
    if (seen.has(c.name))
      ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `expected each check's name once; '${c.name}' is given twice` })
    seen.add(c.name)
  }
}

/** `svcops:live.checks`: the site's checks, each a name unique in the list. */
export const declaredChecksSchema = z.array(declaredCheckSchema).default([]).superRefine(namesOnce)

/** A UUID as the controller names an instance. */
const uuid = z.string().regex(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/, 'expected a UUID')

/**
 * `svcops:live.uuids`: the UUID the system controller gives each ingest, pipeline and control
 * panel instance, by unit name (`ingest`, or `live-2/ingest` across hosts): what the seed's
 * endpoints `GET <prefix>/ingests/{uuid}`, `/pipelines/{uuid}` and `/controlpanels/{uuid}` take.
 */
export const liveUuidsSchema = z.record(z.string().min(1), uuid).default({})

/** The placeholders of a recording service's check: the product prefix, the target's name, a lab host's sandbox root. */
const RECORDING_KNOWN = new Set(['product', 'host', 'root'])

/** A text whose placeholders are all those of a recording service's check. */
const recordingTemplate = z
  .string()
  .min(1)
  .refine((s) => [...s.matchAll(PLACEHOLDER)].every((m) => RECORDING_KNOWN.has(m[1] ?? '')), {
    error: `expected only the placeholders ${[...RECORDING_KNOWN].map((k) => `{${k}}`).join(', ')}`,
  })

/**
 * One declared check of the recording service (`svcops:recording.checks`), asked after the seed's
 * own (`GET /`, the content list) in the upgrade's and the rollback's verification, in `svcops
 * verify recording` and in `svcops probe`: `GET <path>` of the service with a status and what the
 * answer contains (`web`), a metric of the service's Prometheus text with its value (`metric`), or
 * a command on the service's host (`command`, argv, exit 0; it must only read: the probe runs it).
 */
export const recordingCheckSchema = z
  .strictObject({
    name: z.string().min(1).max(120),
    web: z
      .strictObject({
        path: recordingTemplate.refine((s) => s.startsWith('/'), { error: 'expected a path starting with /' }),
        status: z.number().int().min(100).max(599).default(200),
        contains: z.unknown().optional(),
      })
      .optional(),
    metric: z
      .strictObject({
        path: z
          .string()
          .regex(/^\/[A-Za-z0-9._/-]*$/, 'expected a path like /metrics')
          .default('/metrics'),
        name: recordingTemplate,
        equals: z.number(),
      })
      .optional(),
    command: z.strictObject({ argv: z.array(recordingTemplate).min(1) }).optional(),
  })
  .refine((c) => [c.web, c.metric, c.command].filter((p) => p !== undefined).length === 1, {
    error: 'expected exactly one provider: web, metric or command',
  })

export type RecordingCheck = z.infer<typeof recordingCheckSchema>

/** `svcops:recording.checks`: the site's checks of the recording service, each a name unique in the list. */
export const recordingChecksSchema = z.array(recordingCheckSchema).default([]).superRefine(namesOnce)
