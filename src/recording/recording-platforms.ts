/**
 * The platforms the recording service runs on, by the name `recording.platform` gives in the stack
 * file: the one place a platform is chosen. A platform is a folder implementing RecordingPlatform
 * (recording-platform.ts); adding one (plain containers, say) is that folder and a row here.
 */
import { requireSection } from '../config/load.ts'
import type { Environment, RecordingConfig } from '../config/schema.ts'
import { openHostsPlatform } from './hosts/recording-hosts-platform.ts'
import { openKubernetesPlatform } from './kubernetes/recording-kubernetes-platform.ts'
import { deploymentName } from './kubernetes/recording-deployment.ts'
import type { RecordingPlatform } from './recording-platform.ts'
import { settingsFor, type RecordingSettings } from './recording-settings.ts'

interface PlatformEntry {
  /** The names of its targets in the environment's order, read from the stack file alone (a new run's record). */
  targets(env: Environment, rec: RecordingConfig): Array<{ name: string; canary?: boolean }>
  open(env: Environment, rec: RecordingConfig, settings: RecordingSettings): RecordingPlatform
}

const PLATFORMS: Readonly<Record<RecordingConfig['platform'], PlatformEntry>> = {
  hosts: { targets: (_env, rec) => rec.hosts, open: openHostsPlatform },
  kubernetes: {
    targets: (env) => [{ name: deploymentName(env), canary: true }],
    open: (env, _rec, settings) => openKubernetesPlatform(env, settings),
  },
}

/** The targets of the environment's recording service (hosts, or the Deployment), without opening anything. */
export function recordingTargets(env: Environment): Array<{ name: string; canary?: boolean }> {
  const rec = requireSection(env, 'recording')
  return PLATFORMS[rec.platform].targets(env, rec)
}

/** The platform of the environment's recording service. Nothing connects until used. */
export function openRecordingPlatform(env: Environment, settings?: RecordingSettings): RecordingPlatform {
  const rec = requireSection(env, 'recording')
  return PLATFORMS[rec.platform].open(env, rec, settings ?? settingsFor(env, rec))
}
