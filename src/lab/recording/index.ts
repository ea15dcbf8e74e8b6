/** The lab's recording service: releases as data, the package builder, and a local starter for tests. */
export {
  RECORDING_RELEASES,
  LATEST_RECORDING_SCHEMA,
  findRecordingRelease,
  type RecordingRelease,
  type RecordingFault,
} from './releases.ts'
export {
  buildRecordingPackages,
  bundleRecordingService,
  recordingPackageName,
  recordingPackagePaths,
  recordingServiceUser,
  type PackageOptions,
} from './package.ts'
export { defaultServiceConfig, type RecordingServiceConfig } from './config.ts'
