/**
 * The releases of the live production system that the lab builds, one or two of each major, as
 * data. Each release is a package per component (src/lab/live/package.ts); the program bundled
 * into it reads its entry (version, fault) and asks the catalog's version helpers
 * (src/releases/versions.ts) what a release of that version does — never a version compared here.
 *
 * `7.0.1` is the lab's own fault release: its components start, serve their metrics and never
 * connect to the system controller, so an upgrade into it must fail its check and roll back.
 * `7.0.2` passes every start-up check, and its ingest's `svc_ingest_source_dropped_video_frames`
 * (6.0's split of the dropped frames) climbs from 10 s after it starts: only a soak catches it.
 */
import { LIVE_COMPONENTS, type LiveComponentName } from '../../releases/types.ts'

/** For `drops-video-frames`: how long after its start the ingest begins dropping video frames. */
export const DROPS_AFTER_MS = 10_000

/** How a release misbehaves (the lab's faults); `none` for an ordinary release. */
export type LiveLabFault = 'none' | 'never-connects' | 'drops-video-frames'

export interface LiveLabRelease {
  version: string
  fault: LiveLabFault
  summary: string
}

/** Every live release the lab can build, oldest first. */
export const LIVE_LAB_RELEASES: readonly LiveLabRelease[] = [
  {
    version: '1.0.0',
    fault: 'none',
    summary: 'REST prefix /api/v1; no pre-shared key; settings in the former fixed application directory',
  },
  {
    version: '2.0.0',
    fault: 'none',
    summary: 'every connecting component needs the PSK of the settings file in SVC_SYSTEM_CONTROLLER_PSK',
  },
  { version: '3.0.0', fault: 'none', summary: 'REST prefix /api/v2' },
  { version: '4.0.0', fault: 'none', summary: 'metric queueing_video_frames renamed video_frames_in_queue' },
  { version: '5.0.0', fault: 'none', summary: 'no change the lab emulates' },
  { version: '5.2.0', fault: 'none', summary: 'a minor release of 5.x' },
  {
    version: '6.0.0',
    fault: 'none',
    summary:
      'low-entropy PSK refused; settings from the working directory, /etc/opt/<product_dir> or --settings-path; SVC_TCP_ENDPOINT (one endpoint); ingest metrics split into audio and video',
  },
  { version: '7.0.0', fault: 'none', summary: 'REST prefix /api/v3' },
  { version: '7.0.1', fault: 'never-connects', summary: 'the lab fault: components start but never connect to the system controller' },
  {
    version: '7.0.2',
    fault: 'drops-video-frames',
    summary: `the lab fault: starts, connects and passes its checks; ${DROPS_AFTER_MS / 1000} s after start the ingest's dropped video frames counter climbs`,
  },
]

/** The components of a live host, in dependency order (the controller first): the catalog's. */
export { LIVE_COMPONENTS }
export type LiveComponent = LiveComponentName

/** The components that connect to the system controller. */
export const CONNECTING_COMPONENTS: readonly LiveComponent[] = ['ingest', 'pipeline', 'control-panel']

/** The lab release `version`, or undefined. */
export function findLiveLabRelease(version: string): LiveLabRelease | undefined {
  return LIVE_LAB_RELEASES.find((r) => r.version === version)
}
