/**
 * The live production system's release history: every major from 2.0.0 to 7.0.0 with its
 * breaking changes (the seed's "Live production system: changes per major release"), plus the
 * lookups the planners, migrators and version helpers share.
 */
import { LIVE_2, LIVE_3, LIVE_4 } from './live-2-4.ts'
import { LIVE_5, LIVE_6, LIVE_7 } from './live-5-7.ts'
import { DEFAULT_PRODUCT, type Effect, type LiveChange, type LiveRelease, type Product } from './types.ts'

/** The first release of the live production system; majors before 2.0.0 are not described. */
export const FIRST_LIVE_RELEASE = '1.0.0'

const byMajor: Array<[LiveRelease['major'], LiveChange[]]> = [
  [2, LIVE_2],
  [3, LIVE_3],
  [4, LIVE_4],
  [5, LIVE_5],
  [6, LIVE_6],
  [7, LIVE_7],
]

/** Every major release, oldest first. */
export const LIVE_RELEASES: readonly LiveRelease[] = byMajor.map(([major, changes]) => ({
  version: `${major}.0.0`,
  from: `${major - 1}.0.0`,
  major,
  changes,
}))

/** Every change of every major, oldest first. */
export const LIVE_CHANGES: readonly LiveChange[] = LIVE_RELEASES.flatMap((r) => r.changes)

/** The changes whose effect has the given type, oldest first. */
export function changesWithEffect<T extends Effect['type']>(type: T): Array<LiveChange & { effect: Extract<Effect, { type: T }> }> {
  return LIVE_CHANGES.filter((c): c is LiveChange & { effect: Extract<Effect, { type: T }> } => c.effect?.type === type)
}

/** The one change with this id (a programming error if it does not exist). */
export function changeById(id: string): LiveChange {
  const found = LIVE_CHANGES.find((c) => c.id === id)
  if (!found) throw new Error(`No catalog change has the id '${id}'.`)
  return found
}

/** Fills the product prefix and folder into a catalog name template. */
export function expandName(template: string, product: Product = DEFAULT_PRODUCT): string {
  return template
    .replaceAll('{PREFIX}', product.prefix.toUpperCase())
    .replaceAll('{prefix}', product.prefix)
    .replaceAll('{product_dir}', product.dir)
}

/** A change with every template in its text filled in for `product`. */
export function expandChange(change: LiveChange, product: Product = DEFAULT_PRODUCT): LiveChange {
  const fill = (s: string | undefined): string | undefined => (s === undefined ? undefined : expandName(s, product))
  return {
    ...change,
    summary: expandName(change.summary, product),
    action: expandName(change.action, product),
    ...(change.old !== undefined ? { old: fill(change.old) } : {}),
    ...(change.new !== undefined ? { new: fill(change.new) } : {}),
  }
}
