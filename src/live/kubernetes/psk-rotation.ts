/**
 * `svcops psk rotate` on Kubernetes. The PSK is the program's (src/infra/pskSecret.ts): a random
 * password whose keepers hold `svcops:deploy.pskRotation`, written into the PSK Secret and the
 * controller's settings Secret. A rotation is therefore a new pskRotation value in the stack file
 * (never the key: svcops does not read it) and `pulumi up` of the live components and the PSK's
 * objects, in the program's order: the controller first (Recreate), the media components after it
 * (dependsOn). From the start of that `pulumi up` no controller answers until the new one is
 * ready, and each media component is disconnected until its own new pod is ready: the gap.
 *
 *   check    the stack generates its key (a stack's own `svcops:psk` is not rotated by a value)
 *   write    pskRotation = svcops-<run id> (the same on a resumed run)
 *   apply    `pulumi preview --json` (only the live components and the PSK's objects may change),
 *            then `pulumi up --target` of exactly what it showed; also after the rollback's
 *            restore of the previous pskRotation (live-cluster-config.ts)
 */
import { BadInputError } from '../../core/errors.ts'
import { pulumiArgv, readStackVersion } from '../../drivers/pulumi.ts'
import { pskVariable } from '../../releases/versions.ts'
import type { StepResult } from '../../runs/step.ts'
import { LIVE_COMPONENTS } from '../layout.ts'
import type { PskRotation } from '../live-platform.ts'
import type { ClusterRun } from './live-cluster-config.ts'
import { PSK_ROTATION_KEY, shownPulumi } from './live-cluster-handle.ts'
import { previewLiveChange } from './live-preview.ts'

/** The pskRotation value of this run: one per run, so that a resumed run sets the same one. */
const valueOf = (run: ClusterRun): string => `svcops-${run.journal.run.id}`

const current = (run: ClusterRun): string => readStackVersion(run.cluster.stack().stackFile, PSK_ROTATION_KEY) ?? 'initial'

/** The stack file's Deployments the `pulumi up` restarts, in the program's order. */
function order(run: ClusterRun): string {
  return LIVE_COMPONENTS.map((c) => run.cluster.targets[c].deployment).join(', then ')
}

/** A new PSK for the live system on Kubernetes, through `svcops:deploy.pskRotation` and `pulumi up`. */
export function clusterPskRotation(run: ClusterRun): PskRotation {
  const file = (): string => run.cluster.stack().stackFile
  return {
    check() {
      if (run.cluster.suppliedPsk)
        throw new BadInputError(
          `svcops:psk in ${file()}: the stack supplies its own PSK, which a new ${PSK_ROTATION_KEY} does not change; expected no svcops:psk, so that the program generates the key svcops psk rotate replaces.`,
          `Set a new svcops:psk (svcops psk generate) with pulumi config set --secret and run pulumi up -s ${run.env.name}, or remove svcops:psk to let the program generate it.`,
        )
      return Promise.resolve({ data: { stackFile: file(), pskRotation: current(run) } })
    },
    describeCheck: () =>
      Promise.resolve([
        `read ${PSK_ROTATION_KEY} of ${file()}; refuse a stack with its own svcops:psk (a new pskRotation does not change it)`,
        `the key is the program's: a random password kept by pskRotation, in ${pskVariable(run.live.prefix)} of every component from the PSK Secret; svcops never reads it`,
      ]),
    async write() {
      const before = current(run)
      const value = valueOf(run)
      if (before !== value) await run.cluster.pulumi().setVersion(PSK_ROTATION_KEY, value)
      return {
        changed: [`set ${PSK_ROTATION_KEY} = ${value} in ${file()} (was ${before}): the program generates a new PSK at pulumi up`],
        data: { pskRotation: { from: before, to: value } },
      }
    },
    describeWrite: () =>
      Promise.resolve([
        `${shownPulumi(run.cluster, pulumiArgv.configSet(run.cluster.stack(), PSK_ROTATION_KEY, valueOf(run)))} (now ${current(run)}): a new value, never the key`,
      ]),
    apply: {
      what: 'pulumi up',
      async act(): Promise<StepResult> {
        const targets = await previewLiveChange(run.cluster, run.env, true)
        await run.cluster.pulumi().up(targets)
        return { changed: [`pulumi up of ${targets.length} resource(s): ${order(run)}, each with the new key`], data: { targets } }
      },
      describe: () => [
        `${shownPulumi(run.cluster, pulumiArgv.preview(run.cluster.stack()))}: only the live components and the PSK's random password and Secrets may change`,
        `${shownPulumi(run.cluster, pulumiArgv.up(run.cluster.stack(), ['URN', '...']))} with a --target per URN it shows: ${order(run)}`,
        'no controller answers from the old one’s stop until the new one is ready; each component reconnects when its own new pod is',
      ],
    },
  }
}
