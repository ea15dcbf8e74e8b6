/**
 * How a run treats a lock another run holds: one value, carried from the CLI's `--break-lock` and
 * `--force` to the lock code (lock.ts) in one field.
 *
 * - `respect` (neither flag): a held lock refuses the run, naming its holder and how to finish its run;
 * - `break-finished` (`--break-lock`): a lock whose holder left nothing unfinished is taken (logged);
 *   one held by a running or unfinished run is still refused, saying what breaking it would risk;
 * - `break-any` (`--break-lock --force`): any lock is taken (a live holder's session ended, logged),
 *   and the holder's run is left as it is.
 */
import { BadInputError } from '../core/errors.ts'

export type LockPolicy = 'respect' | 'break-finished' | 'break-any'

/** The policy the flags ask for; `--force` alone is refused (it only widens `--break-lock`). */
export function lockPolicyOf(flags: { breakLock?: boolean | undefined; force?: boolean | undefined }): LockPolicy {
  if (flags.force && !flags.breakLock)
    throw new BadInputError(
      "--force: given without --break-lock; expected --break-lock --force (--force only lets --break-lock take an unfinished run's lock).",
    )
  if (!flags.breakLock) return 'respect'
  return flags.force ? 'break-any' : 'break-finished'
}
