/**
 * Whether an image is proven pulled, read from a Deployment's pods as the API reports them (no call
 * here: the callers read the pods). A pod running the image with an `imageID` in its container
 * status is the proof: the kubelet pulled it and runs it, so the registry served it and the pull
 * secret worked. A pod of that image waiting in ErrImagePull, ImagePullBackOff, InvalidImageName or
 * ErrImageNeverPull refuses it: a node cannot pull it now. What the API cannot show (that the
 * registry still holds the tag, that every node can pull it) stays unproven. The recording
 * service's and the live system's rollback checks on Kubernetes both judge by this module.
 */
import type { PodFacts } from './kubernetes-facts.ts'

/** A pull the kubelet gave up on: the image cannot run on that node now. */
const PULL_FAILURES = new Set(['ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'ErrImageNeverPull'])

/** A pod seen running an image: its reference and the content the kubelet runs. */
export interface ImageProof {
  image: string
  imageID: string
  pod: string
}

/** What the pods say of an image: proven, refused (and why), or neither. */
export type ImageFinding =
  | { verdict: 'proven'; proof: ImageProof }
  /** A pod of the image waits for a pull the kubelet gave up on. */
  | { verdict: 'cannot-pull'; why: string }
  /** The Deployment runs the image's tag from another repository: nobody ran the reference. */
  | { verdict: 'other-repository'; running: string }
  | { verdict: 'unproven' }

/** True when `image` (`repo:tag[@digest]`) is `reference` (`repo:tag`). */
export function isImage(image: string | undefined, reference: string): boolean {
  return !!image && (image === reference || image.startsWith(`${reference}@`))
}

/**
 * Judges `reference` (`repo:tag`, the tag being `version`) by the Deployment's image `running` and
 * its `pods`; `earlier` is what an earlier check of the same run proved (the pods may have moved on
 * to another version since). A pull failure outweighs any proof: the rollback may land on that node.
 */
export function judgeImage(
  reference: string,
  version: string,
  running: string | undefined,
  pods: PodFacts[],
  earlier?: ImageProof,
): ImageFinding {
  if (running && running.split('@')[0]?.endsWith(`:${version}`) && !isImage(running, reference))
    return { verdict: 'other-repository', running }
  const of = pods.filter((p) => isImage(p.image, reference))
  const failed = of.find((p) => p.waiting && PULL_FAILURES.has(p.waiting))
  if (failed) return { verdict: 'cannot-pull', why: `pod ${failed.name} shows ${failed.waiting ?? ''}` }
  const ran = of.find((p) => p.phase === 'Running' && p.imageID)
  if (ran) return { verdict: 'proven', proof: { image: ran.image ?? reference, imageID: ran.imageID ?? '', pod: ran.name } }
  if (earlier && isImage(earlier.image, reference)) return { verdict: 'proven', proof: earlier }
  return { verdict: 'unproven' }
}

/** The proof a journal entry's data holds at `value` (anything else: undefined). */
export function proofOf(value: unknown): ImageProof | undefined {
  const p = value as Partial<ImageProof> | undefined
  return typeof p?.image === 'string' && typeof p.imageID === 'string' && typeof p.pod === 'string'
    ? { image: p.image, imageID: p.imageID, pod: p.pod }
    : undefined
}
