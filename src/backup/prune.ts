/**
 * Listing and retention. A backup is listed only when its manifest exists (written last); the
 * verification record beside it says whether and how it was verified. Pruning keeps the newest N,
 * those younger than D days, and — whatever the numbers say — the newest verified backup and every
 * backup a run can still roll back to (`heldBackups`: restic's and pgBackRest's rule that retention
 * never expires what a restore depends on), read from every run of the environment wherever it was
 * started (held-by-runs.ts); when those runs cannot be read, or one of their records is refused,
 * everything. Removing a held one (or any, while that is unknown) takes its id and `--force`.
 */
import { BadInputError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { isFinished, type RunRecord } from '../runs/run-record.ts'
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

/**
 * The backups runs can still roll back to, by backup id, with the run that holds each: the newest
 * upgrade run of each environment that took a backup (`rollback`, `resume --retry` restore its
 * backup), and every unfinished run (`resume ID --rollback`). `runs` is the engine's run listing.
 */
export function heldBackups(runs: RunRecord[]): Map<string, string> {
  const held = new Map<string, string>()
  const newestSeen = new Set<string>()
  for (const run of runs) {
    const id = typeof run.params.backupId === 'string' ? run.params.backupId : undefined
    // The newest upgrade run that took a backup: one refused or a no-op before it changed nothing.
    const newestUpgrade = !!id && run.kind === 'upgrade' && !newestSeen.has(`${run.system}/${run.environment}`)
    if (newestUpgrade) newestSeen.add(`${run.system}/${run.environment}`)
    // A backup command's run (restore, delete, prune) names the backup it acts on; it holds none.
    const command = run.kind === 'restore' || run.kind === 'delete' || run.kind === 'prune'
    if (id && !command && !held.has(id) && (newestUpgrade || !isFinished(run))) held.set(id, run.id)
  }
  return held
}

export interface PruneOptions {
  /** The environment whose backups are pruned: a store may hold others', which are never touched. */
  environment: string
  keepLast?: number
  keepDays?: number
  dryRun?: boolean
  now?: Date
  /** Backups runs can still roll back to (`heldBackups`): never removed by retention. */
  held?: Map<string, string>
  /** Why the runs that hold backups are unknown (a run store could not be read): then nothing is removed. */
  heldUnknown?: string
}

export interface PrunePlan {
  keep: { id: string; reasons: string[] }[]
  remove: { id: string; completedAt: string }[]
  dryRun: boolean
  /** Why every backup was kept: the runs that hold backups could not be read (`PruneOptions.heldUnknown`). */
  heldUnknown?: string
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
  const plan: PrunePlan = {
    keep: [],
    remove: [],
    dryRun: options.dryRun ?? false,
    ...(options.heldUnknown !== undefined ? { heldUnknown: options.heldUnknown } : {}),
  }
  entries.forEach((entry, index) => {
    const reasons: string[] = []
    if (keepLast !== undefined && index < keepLast) reasons.push(`one of the newest ${keepLast}`)
    const ageDays = (now - Date.parse(entry.manifest.completedAt)) / 86_400_000
    if (keepDays !== undefined && ageDays < keepDays) reasons.push(`younger than ${keepDays} days`)
    if (entry === newestVerified) reasons.push('the newest verified backup')
    const holder = options.held?.get(entry.id)
    if (holder) reasons.push(`held by run ${holder}: its rollback restores it`)
    // Never pruned blind: a run elsewhere may still need any of them.
    if (options.heldUnknown !== undefined) reasons.push('the runs that may hold it could not be read')
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
  for (const { id } of plan.remove) await removeBackup(store, id)
  return plan
}

/** The files of backup `id` in the order removeBackup removes them: the manifest first, so a half-removed backup is never listed. */
function filesToRemove(id: string): string[] {
  const files = backupFiles(id)
  return [files.manifest, files.signature, files.verified, files.dump]
}

/** Removes backup `id`'s files, the manifest first (a backup without one is no longer listed). */
async function removeBackup(store: BackupStore, id: string): Promise<void> {
  await events.step(`remove backup ${id}`, async () => {
    for (const file of filesToRemove(id)) await store.remove(file)
  })
}

/**
 * `svcops backup delete ID`: removes one backup of the environment. A backup a run can still roll
 * back to (`held`) is refused unless `force`, naming the run whose rollback it would break; so is
 * any backup when which backups runs hold is unknown (`heldUnknown`).
 */
export async function deleteBackup(store: BackupStore, id: string, options: DeleteOptions): Promise<{ id: string; heldBy?: string }> {
  const holder = await checkDeletable(store, id, options)
  if (holder) events.warn(`Deleting backup ${id}: run ${holder} can no longer be rolled back with a restore.`)
  await removeBackup(store, id)
  return { id, ...(holder ? { heldBy: holder } : {}) }
}

/**
 * `svcops backup delete ID --dry-run`: the files `deleteBackup` would remove from the store, after
 * the same refusals (no such backup, held by a run without `force`); nothing is removed.
 */
export async function planDeleteBackup(
  store: BackupStore,
  id: string,
  options: DeleteOptions,
): Promise<{ id: string; heldBy?: string; files: string[] }> {
  const holder = await checkDeletable(store, id, options)
  return { id, ...(holder ? { heldBy: holder } : {}), files: filesToRemove(id) }
}

/** What `backup delete` knows of the runs: the backups they hold, or why that is unknown (held-by-runs.ts). */
export interface DeleteOptions {
  environment: string
  held: Map<string, string>
  /** Why which backups runs hold is unknown (a store unread, a record refused): then only `force` deletes. */
  heldUnknown?: string
  force: boolean
}

/** Refuses a backup `deleteBackup` must not remove; returns the run that holds it, when `force` lets it go. */
async function checkDeletable(store: BackupStore, id: string, options: DeleteOptions): Promise<string | undefined> {
  const entry = (await listBackups(store, { environment: options.environment })).find((e) => e.id === id)
  if (!entry)
    throw new BadInputError(`backup delete: there is no backup '${id}' of environment '${options.environment}' in ${store.location}.`)
  if (options.heldUnknown !== undefined && !options.force)
    throw new BadInputError(
      `backup delete: which backups runs still need is unknown (${options.heldUnknown.replace(/\.$/, '')}); backup ${id} was not deleted.`,
      `If no run will be rolled back with it: svcops backup delete ${id} --env ${options.environment} --force`,
    )
  const holder = options.held.get(id)
  if (holder && !options.force)
    throw new BadInputError(
      `backup delete: backup ${id} is held by run ${holder}, whose rollback restores it; it was not deleted.`,
      `If that run will never be rolled back: svcops backup delete ${id} --env ${options.environment} --force`,
    )
  return holder
}
