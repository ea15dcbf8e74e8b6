/**
 * Every cause the doctor checks, in the seed's order: one list, read by `svcops doctor`, the
 * upgrade's preflight (the causes knowable before a stop) and the diagnosis of a host that failed
 * during a run. The seed's rows are src/releases/recording-rules.ts's "common upgrade problems"; each
 * cause names its row, and its quote comes from there.
 */
import { RECORDING_RULES } from '../../releases/recording-rules.ts'
import { schemaChangePermission, migrationHistory } from './migration.ts'
import { contentInfoCache, diskIo, listQuery, writeRateLimit } from './performance.ts'
import { mediaApi, storageLocationNames, storagePaths } from './recordings.ts'
import { diskSpace, serviceStart } from './service-manager.ts'
import { configOptions, configSyntax, databaseAccess, filePermissions } from './startup.ts'
import type { Cause, ProblemId } from './cause-types.ts'

export const CAUSES: readonly Cause[] = [
  configSyntax,
  configOptions,
  filePermissions,
  databaseAccess,
  serviceStart,
  diskSpace,
  schemaChangePermission,
  migrationHistory,
  storagePaths,
  storageLocationNames,
  mediaApi,
  contentInfoCache,
  writeRateLimit,
  listQuery,
  diskIo,
]

/** The seed's words for a problem (the catalog's rule). */
export function seedOf(problem: ProblemId): string {
  return RECORDING_RULES.find((r) => r.id === problem)?.seed ?? problem
}

/** The causes a preflight can know before anything stops. */
export const PREFLIGHT_CAUSES = CAUSES.filter((c) => c.beforeStop)
