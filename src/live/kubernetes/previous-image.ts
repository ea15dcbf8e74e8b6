/**
 * Whether the image a live rollback on Kubernetes goes back to can run, as far as the API can tell
 * before anything changes (docs/live.md, "Live on Kubernetes"). For each component the rollback
 * moves, with `V` its release before the run:
 *
 *   the reference   `<repository>:<V>`, the repository the stack file names for the component
 *                   (`svcops:deploy.live.<component>.image`): what the rollback's `pulumi up` asks for
 *   proof           a pod of the component's Deployment running that image with an `imageID` (the
 *                   kubelet pulled it and runs it: the registry served it, the pull secret worked),
 *                   seen now, or by the upgrade's own check before its first stop (journaled)
 *   refusal         a pod of that image waiting in ErrImagePull, ImagePullBackOff, InvalidImageName
 *                   or ErrImageNeverPull; a Deployment that runs `V` from another repository than
 *                   the stack's (the rollback would ask for an image nobody ran)
 *
 * What it cannot prove: that the registry still holds the tag now (nothing pulls it until the
 * rollback does), that every node can pull it, or that the tag still names the content seen (unless
 * the stack pins a digest). Without proof and without a refusal, the check says so and goes on.
 * The judgement of the pods is src/drivers/image-proof.ts, which the recording service's check shares.
 */
import type { Environment } from '../../config/schema.ts'
import { errorMessage } from '../../core/errors.ts'
import { judgeImage, type ImageProof } from '../../drivers/image-proof.ts'
import type { PodFacts } from '../../drivers/kubernetes.ts'
import type { LiveComponentName } from '../layout.ts'
import type { LiveCluster } from './live-cluster-handle.ts'
import { livePods } from './controller-service.ts'

/** What the image check found: refusals, images proven runnable (journaled), and images it could not prove. */
export interface ImageReading {
  missing: string[]
  proven: Partial<Record<LiveComponentName, ImageProof>>
  unproven: string[]
}

const DEPLOY_KEYS: Record<LiveComponentName, 'systemController' | 'ingest' | 'pipeline' | 'controlPanel'> = {
  'system-controller': 'systemController',
  ingest: 'ingest',
  pipeline: 'pipeline',
  'control-panel': 'controlPanel',
}

/** The image the stack file names for `c` at release `version` (what the rollback's `pulumi up` asks for). */
export function stackImageOf(env: Environment, c: LiveComponentName, version: string): string | undefined {
  const repository = env.deploy?.live[DEPLOY_KEYS[c]].image
  return repository ? `${repository}:${version}` : undefined
}

/**
 * Reads, for each component in `previous` (each with its release before the run), whether its image
 * is runnable; `earlier` holds what an earlier check of the run proved.
 */
export async function readPreviousImages(
  cluster: LiveCluster,
  env: Environment,
  previous: Partial<Record<LiveComponentName, string>>,
  earlier: Partial<Record<LiveComponentName, ImageProof>>,
): Promise<ImageReading> {
  const reading: ImageReading = { missing: [], proven: {}, unproven: [] }
  for (const [c, v] of Object.entries(previous) as [LiveComponentName, string][]) {
    const reference = stackImageOf(env, c, v)
    if (!reference) {
      reading.missing.push(`the stack file names no image for ${c} (svcops:deploy.live.${DEPLOY_KEYS[c]}.image)`)
      continue
    }
    let running: string | undefined
    let pods: PodFacts[]
    try {
      running = (await cluster.kube(c).readDeployment()).image
      pods = await livePods(cluster, c)
    } catch (error) {
      reading.missing.push(`the Deployment of ${c} cannot be read: ${errorMessage(error).replace(/\.$/, '')}`)
      continue
    }
    // The Deployment on V from another repository: the rollback's `pulumi up` would ask for an image nobody ran.
    const found = judgeImage(reference, v, running, pods, earlier[c])
    if (found.verdict === 'other-repository')
      reading.missing.push(`the Deployment of ${c} runs ${found.running}, not the stack file's ${reference}`)
    else if (found.verdict === 'cannot-pull') reading.missing.push(`the image ${reference} of ${c} cannot be pulled: ${found.why}`)
    else if (found.verdict === 'proven') reading.proven[c] = found.proof
    else reading.unproven.push(`${reference} (${c}): no pod was seen running it during this run`)
  }
  return reading
}
