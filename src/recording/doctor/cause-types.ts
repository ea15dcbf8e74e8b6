/**
 * The recording service's doctor: its causes (one row of the seed's "common upgrade problems",
 * split into the things to check) and the host as the service sees it. The findings and outcomes
 * are the doctor's (src/doctor/doctor-types.ts).
 */
import type pg from 'pg'
import type { DoctorCause } from '../../doctor/doctor-types.ts'
import type { RecordingHost } from '../recording-platform.ts'

/** The seed's problems (rule ids of src/releases/recording-rules.ts). */
export type ProblemId = 'problem-no-start' | 'problem-migration' | 'problem-recordings' | 'problem-slow'

/** A cause on a host: data the CLI, the preflight and the in-run diagnosis all read. */
export interface Cause extends DoctorCause<HostView, ProblemId> {
  /** Knowable before a stop: the preflight runs it and stops the run on an error. */
  beforeStop: boolean
}

/** Why every check that needs the configuration is skipped when there is none. */
export const NO_CONFIG = 'the configuration file cannot be read or parsed (see config-syntax)'

/** The service's configuration as far as the doctor reads it (the documented options). */
export interface ServiceConfig {
  database?: { host?: string; port?: number; name?: string; user?: string; password?: string; passwordFile?: string }
  storage?: { path?: string; locations?: { name: string; path: string }[]; defaultLocation?: string }
  mediaApi?: { baseUrl?: string; timeoutMs?: number }
  contentInfoCacheSize?: number
  writeRateLimit?: number
  [key: string]: unknown
}

/** A host as its service sees it: its config file, files through its user, its database credentials. */
export interface HostView {
  host: RecordingHost
  configPath: string
  logPath: string
  /** The config's text, or why it could not be read. */
  configText: { ok: true; text: string } | { ok: false; error: string }
  /** The parsed config (undefined when the text is not valid JSON). */
  config: ServiceConfig | undefined
  /** Last lines of the service's log since its last start. */
  logLines: string[]
  /** A path of the host (under its sandbox root), as the transport sees it. */
  path(path: string): string
  /** Runs a shell snippet on the host as the service's user; never throws on a non-zero exit. */
  sh(script: string, ...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }>
  /**
   * Runs `script` once per argument list, all in one command on the host (one round trip): each
   * run's exit code (null when it did not finish) and output, as `sh` gives them; never throws on a
   * non-zero exit.
   */
  shEach(script: string, runs: string[][]): Promise<{ code: number | null; stdout: string }[]>
  /**
   * The service as its service manager sees it (the stack's service driver: `systemctl show`,
   * supervisord's process info) and the manager's last log lines of it (`journalctl -u`, the log
   * file); absent where the doctor was not told the service and its driver.
   */
  service?: {
    name: string
    status(): Promise<{ running: boolean; status: string }>
    logs(lines: number): Promise<string[]>
  }
  /** A connection with the service's own credentials, or why there is none (memoised). */
  database(): Promise<{ client: pg.Client } | { error: string; cause: 'no-config' | 'no-password' | 'connect' }>
}
