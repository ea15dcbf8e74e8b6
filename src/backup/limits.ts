/** Size caps of what backups read from a store: a store is written by others, so nothing read from it is trusted to be small. */
import { OperationError } from '../core/errors.ts'

/** Manifests, signatures and verification records are a few KB; anything bigger is not one. */
export const MAX_TEXT_BYTES = 1 << 20

/** Raised when a small store file (manifest, record) is larger than any real one. */
export function tooLargeInStore(location: string, name: string, size: number): OperationError {
  return new OperationError(
    `${location}/${name} has ${size} bytes; a manifest, signature or verification record has at most ${MAX_TEXT_BYTES}, so it was not read.`,
  )
}
