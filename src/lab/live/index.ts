/**
 * The lab's live production system, for the live playbook and the tests:
 *
 *   import { liveComponentPaths, liveSettingsFile, controllerSettingsDirs, parseEnvFile, formatEnvFile,
 *            liveMetricNames, LIVE_COMPONENTS, LIVE_LAB_RELEASES } from '../src/lab/live/index.ts'
 *
 *   const { envFile, log } = liveComponentPaths({ prefix: 'svc', dir: 'svc' }, 'ingest')
 *   // envFile '/etc/default/svc-ingest', log '/var/log/svc/ingest.log' (under the host root on a lab host)
 *   liveSettingsFile('5.2.0', product)   // '/opt/svc/system-controller/etc/svc_sc_settings.json'
 *   liveSettingsFile('6.0.0', product)   // '/etc/opt/svc/svc_sc_settings.json'
 *   liveMetricNames('6.0.0', 'ingest', 'svc')   // the six audio/video frame counters
 *
 * The contract between the lab and the playbook is /work/notes/live-contract.md; docs/lab.md tells
 * what each emulator does.
 */
export {
  LIVE_LAB_RELEASES,
  LIVE_COMPONENTS,
  CONNECTING_COMPONENTS,
  findLiveLabRelease,
  type LiveComponent,
  type LiveLabRelease,
} from './releases.ts'
export {
  DEFAULT_LIVE_PRODUCT,
  controllerArgsVariable,
  controllerSettingsDirs,
  controllerUrlVariable,
  controllerWorkingDir,
  legacySettingsDir,
  liveComponentPaths,
  livePackageFile,
  livePackageName,
  liveSettingsFile,
  liveSettingsPathFlag,
  metricsPortVariable,
  pskHeader,
  type LiveComponentPaths,
  type LiveProduct,
} from './paths.ts'
// The metric names are the release catalog's, the same the live playbook checks.
export { connectedMetricName, liveMetricNames } from '../../releases/versions.ts'
export { formatEnvFile, parseEnvFile } from './env-file.ts'
export { buildLivePackages } from './package.ts'
export { CONNECTION_TIMEOUT_MS } from './controller.ts'
