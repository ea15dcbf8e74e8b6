/**
 * The lock policy a run carries from `--break-lock` and `--force` to the lock code: each pair of
 * flags gives one value, and `--force` alone (which breaks nothing by itself) is refused in one
 * sentence as bad input (exit 2) before anything is read.
 */
import { describe, expect, it } from 'vitest'
import { BadInputError } from '../../src/core/errors.ts'
import { lockPolicyOf } from '../../src/runs/lock-policy.ts'
import { runSvcopsInProcess } from '../support/cli.ts'

describe('lockPolicyOf', () => {
  it('reads the flags a user types as one policy', () => {
    expect(lockPolicyOf({})).toBe('respect')
    expect(lockPolicyOf({ breakLock: false, force: false })).toBe('respect')
    expect(lockPolicyOf({ breakLock: true })).toBe('break-finished')
    expect(lockPolicyOf({ breakLock: true, force: false })).toBe('break-finished')
    expect(lockPolicyOf({ breakLock: true, force: true })).toBe('break-any')
  })

  it('refuses --force without --break-lock, naming both flags', () => {
    const refused = (() => {
      try {
        return lockPolicyOf({ force: true })
      } catch (error) {
        return error
      }
    })()
    expect(refused).toBeInstanceOf(BadInputError)
    expect((refused as BadInputError).exitCode).toBe(2)
    expect((refused as Error).message).toBe(
      "--force: given without --break-lock; expected --break-lock --force (--force only lets --break-lock take an unfinished run's lock).",
    )
  })

  it('svcops resume ID --force: refused (exit 2) before the run is read', async () => {
    const run = await runSvcopsInProcess(['resume', '20261122T031500Z-3fa9c1', '--force'])
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('--force: given without --break-lock')
    expect(run.stderr).not.toContain('20261122T031500Z-3fa9c1')
  })
})
