/**
 * `svcops:live` of a live production system deployed by this project's Pulumi program
 * (`platform: kubernetes`): no host, no package, no file of its own. The release is
 * `svcops:deploy.live.version`, the namespace and the Deployments come from `svcops:deploy`, the PSK
 * from the program's Secret (rotated through `svcops:deploy.pskRotation`). What stays here is what
 * the live playbook reads besides: the gates' inputs and how long a component may take to come up.
 *
 * Kept apart from schema.ts's host section so that each platform's section is checked by its own
 * strict schema (load.ts picks it by `platform`), with errors naming `live.<field>`.
 */
import { z } from 'zod'
import { declaredChecksSchema, liveUuidsSchema } from './checks.ts'

/** The instances on this platform: one per Deployment, named by its component type. */
const INSTANCES = new Set(['ingest', 'pipeline', 'control-panel'])

export const liveClusterSchema = z.strictObject({
  platform: z.literal('kubernetes'),
  /** How long the pods of a component may take to be Running and ready on the release after `pulumi up` (default 300 s). */
  connectTimeoutSeconds: z.number().int().min(1).max(3600).optional(),
  /** Where svcops reaches the system controller's Service instead of its cluster DNS name or a port-forward (an ingress). */
  controllerUrl: z.url({ protocol: /^https?$/, error: 'expected an http:// or https:// URL' }).optional(),
  /** Log lines read from every pod after the start (default 50). */
  logLines: z.number().int().min(1).max(10_000).optional(),
  /** C++ SDK source directories checked by `svcops scan sdk` before an upgrade (a blocking gate). */
  sdkSourceDirs: z.array(z.string().min(1)).default([]),
  /** Files of saved controller calls checked by `svcops migrate requests`. */
  savedRequests: z.array(z.string().min(1)).default([]),
  /** Dashboards and rules checked by `svcops migrate metrics`. */
  metricFiles: z.array(z.string().min(1)).default([]),
  /** The controller's UUID of each instance (`ingest`, `pipeline`, `control-panel`): what the seed's checks ask for. */
  uuids: liveUuidsSchema.refine((u) => Object.keys(u).every((k) => INSTANCES.has(k)), {
    error: 'expected the names ingest, pipeline and control-panel (one Deployment each)',
  }),
  /**
   * The site's checks where the seed is silent (src/config/checks.ts): web and metric checks only.
   * A command check has no host to run on here (svcops reads the cluster through its API, and runs
   * nothing in the pods), so it is refused with one sentence.
   */
  checks: declaredChecksSchema.superRefine((checks, ctx) => {
    for (const [i, c] of checks.entries())
      if (c.command)
        ctx.addIssue({
          code: 'custom',
          path: [i, 'command'],
          message: `'${c.name}' is a command check, which runs on a host; live.platform kubernetes has none: declare a web or metric check instead`,
        })
  }),
})

export type LiveClusterConfig = z.infer<typeof liveClusterSchema>

/** True when a raw `svcops:live` section asks for the Kubernetes platform. */
export function isClusterLiveSection(raw: unknown): boolean {
  return !!raw && typeof raw === 'object' && (raw as { platform?: unknown }).platform === 'kubernetes'
}
