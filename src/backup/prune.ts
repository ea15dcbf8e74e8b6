/**
 * Listing and retention. A backup is listed only when its manifest exists (written last); the
 * verification record beside it says whether and how it was verified. Pruning keeps the newest N,
 * those younger than D days, and — whatever the numbers say — the newest verified backup.
 */
import { BadInputError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { backupFiles, parseManifest, verifyRecordSchema, type Manifest, type VerifyRecord } from './manifest.ts'
import { checkManifestSignature, type Signer } from './signing.ts'
import type { BackupStore } from './store.ts'

export interface BackupEntry {
  id: string
  manifest: Manifest
  /**
   * `trusted`: signed by one of the signers given to `listBackups`; `untrusted`: signed, but not
   * verifiably by one of them; `unsigned`: no signature (made before svcops signed backups, or
   * planted — restorable only with --allow-unsigned); `unchecked`: signed, no signers were given.
   */
  signature: 'trusted' | 'untrusted' | 'unsigned' | 'unchecked'
  /** The last verification, if any. */
  verified?: VerifyRecord
}

const MANIFEST_SUFFIX = '.manifest.json'

/**
 * Every complete backup in the store, newest first — with `environment`, only the ones whose
 * manifest names it. Unreadable manifests are reported as warnings.
 */
export async function listBackups(store: BackupStore, options: { signers?: Signer[]; environment?: string } = {}): Promise<BackupEntry[]> {
  const names = new Set(await store.names())
  const entries: BackupEntry[] = []
  for (const name of names) {
    if (!name.endsWith(MANIFEST_SUFFIX)) continue
    const id = name.slice(0, -MANIFEST_SUFFIX.length)
    let manifest: Manifest
    let text: string
    try {
      text = await store.readText(name)
      manifest = parseManifest(text, `${store.location}/${name}`, id)
    } catch (error) {
      events.warn(`skipping ${name}: ${(error as Error).message}`)
      continue
    }
    if (options.environment !== undefined && manifest.environment !== options.environment) continue
    if (!names.has(manifest.file)) {
      events.warn(`skipping backup ${id}: its file ${manifest.file} is missing from ${store.location}`)
      continue
    }
    const files = backupFiles(id)
    let verified: VerifyRecord | undefined
    if (names.has(files.verified)) verified = await readVerifyRecord(store, id)
    let signature: BackupEntry['signature'] = 'unsigned'
    if (names.has(files.signature)) {
      if (!options.signers) signature = 'unchecked'
      else {
        const check = await store
          .readText(files.signature)
          .then((armored) => checkManifestSignature(Buffer.from(text, 'utf8'), armored, options.signers ?? []))
          .catch(() => ({ signed: false }))
        signature = check.signed ? 'trusted' : 'untrusted'
      }
    }
    entries.push({ id, manifest, signature, ...(verified ? { verified } : {}) })
  }
  return entries.sort((a, b) => b.manifest.completedAt.localeCompare(a.manifest.completedAt))
}

/**
 * The verification record of `id`, or undefined (with a warning naming the file) when it is not
 * valid JSON, not a record, or about another backup: a broken record makes a backup count as not
 * verified, never breaks the listing.
 */
async function readVerifyRecord(store: BackupStore, id: string): Promise<VerifyRecord | undefined> {
  const name = backupFiles(id).verified
  let raw: unknown
  try {
    raw = JSON.parse(await store.readText(name))
  } catch (error) {
    events.warn(
      `ignoring ${store.location}/${name}: ${error instanceof SyntaxError ? 'not valid JSON' : (error as Error).message}; backup ${id} counts as not verified`,
    )
    return undefined
  }
  const parsed = verifyRecordSchema.safeParse(raw)
  if (!parsed.success || parsed.data.id !== id) {
    const issue = parsed.success
      ? `id: '${parsed.data.id}' is not ${id}`
      : `${parsed.error.issues[0]?.path.join('.') || '(root)'}: ${parsed.error.issues[0]?.message ?? 'invalid'}`
    events.warn(`ignoring ${store.location}/${name}: ${issue}; backup ${id} counts as not verified`)
    return undefined
  }
  return parsed.data
}

export interface PruneOptions {
  /** The environment whose backups are pruned: a store may hold others', which are never touched. */
  environment: string
  keepLast?: number
  keepDays?: number
  dryRun?: boolean
  now?: Date
}

export interface PrunePlan {
  keep: { id: string; reasons: string[] }[]
  remove: { id: string; completedAt: string }[]
  dryRun: boolean
}

/** Decides what to keep and why; pure, so the dry run shows exactly what a real run removes. */
export function planPrune(entries: BackupEntry[], options: PruneOptions): PrunePlan {
  const { keepLast, keepDays } = options
  if (keepLast === undefined && keepDays === undefined)
    throw new BadInputError('prune: neither --keep-last nor --keep-days was given; expected at least one retention rule.')
  if (keepLast !== undefined && (!Number.isInteger(keepLast) || keepLast < 0))
    throw new BadInputError(`--keep-last: '${keepLast}' is not valid; expected a whole number of backups, 0 or more.`)
  if (keepDays !== undefined && (!Number.isFinite(keepDays) || keepDays < 0))
    throw new BadInputError(`--keep-days: '${keepDays}' is not valid; expected a number of days, 0 or more.`)
  const now = (options.now ?? new Date()).getTime()
  const newestVerified = entries.find((e) => e.verified?.ok)
  const plan: PrunePlan = { keep: [], remove: [], dryRun: options.dryRun ?? false }
  entries.forEach((entry, index) => {
    const reasons: string[] = []
    if (keepLast !== undefined && index < keepLast) reasons.push(`one of the newest ${keepLast}`)
    const ageDays = (now - Date.parse(entry.manifest.completedAt)) / 86_400_000
    if (keepDays !== undefined && ageDays < keepDays) reasons.push(`younger than ${keepDays} days`)
    if (entry === newestVerified) reasons.push('the newest verified backup')
    if (reasons.length > 0) plan.keep.push({ id: entry.id, reasons })
    else plan.remove.push({ id: entry.id, completedAt: entry.manifest.completedAt })
  })
  return plan
}

/**
 * Applies the retention rules to the environment's own backups (or only shows them, with `dryRun`).
 * The manifest goes first: a backup without one is no longer listed.
 */
export async function pruneBackups(store: BackupStore, options: PruneOptions): Promise<PrunePlan> {
  const plan = planPrune(await listBackups(store, { environment: options.environment }), options)
  if (plan.dryRun) return plan
  for (const { id } of plan.remove) {
    const files = backupFiles(id)
    await events.step(`remove backup ${id}`, async () => {
      await store.remove(files.manifest)
      await store.remove(files.signature)
      await store.remove(files.verified)
      await store.remove(files.dump)
    })
  }
  return plan
}
