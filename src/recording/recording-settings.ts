/**
 * The recording service's settings for a run, derived from the environment file with the defaults
 * of the product's package layout: what its package and service are called, where its
 * configuration and log are, how long a start may take, what counts as an error line.
 */
import type { Environment, RecordingConfig } from '../config/schema.ts'
import { ERROR_LEVELS } from '../drivers/services.ts'

/** Settings derived from the environment file, with the defaults of the lab's package layout. */
export interface RecordingSettings {
  package: string
  service: string
  /** How the service is started and read (`recording.serviceDriver`); the doctor reads its state through it. */
  serviceDriver?: 'systemd' | 'supervisor'
  configPath: string
  logPath: string
  errorPatterns: string[]
  healthTimeoutMs: number
  contentLimit: number
  /** The post-upgrade check's limit on the list's and the test write's answer, in ms. */
  slowResponseMs: number
  hostLockPath: string
  logLines: number
}

/** Default settings for an environment's recording section. */
export function settingsFor(env: Environment, rec: RecordingConfig): RecordingSettings {
  const dir = env.product.dir
  return {
    package: rec.package,
    service: rec.service,
    serviceDriver: rec.serviceDriver,
    configPath: rec.configPath ?? `/etc/opt/${dir}/recording.json`,
    logPath: rec.logPath ?? `/var/log/${dir}/recording.log`,
    // Matched against each log record's level field only, never its message (drivers/services.ts).
    errorPatterns: rec.errorPatterns ?? ERROR_LEVELS,
    healthTimeoutMs: (rec.healthTimeoutSeconds ?? 60) * 1000,
    contentLimit: rec.contentLimit ?? 10_000,
    slowResponseMs: rec.slowResponseMs ?? 5_000,
    hostLockPath: '/var/lib/svcops/upgrade.lock',
    logLines: 50,
  }
}
