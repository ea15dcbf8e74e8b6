/**
 * Live production system, majors 2.0.0 to 4.0.0: every row of the seed's tables as data.
 * `seed` holds a verbatim fragment of the row, so the catalog test can prove each row is here.
 */
import type { LiveChange, LiveMajor } from './types.ts'

type Fields = Omit<LiveChange, 'id' | 'release' | 'major' | 'area'>

/** Builds the changes of one area of one release. */
export function changesOf(major: LiveMajor, area: string, list: Array<[slug: string, fields: Fields]>): LiveChange[] {
  const release = `${major}.0.0`
  return list.map(([slug, fields]) => ({ id: `${release}/${slug}`, release, major, area, ...fields }))
}

export const LIVE_2: LiveChange[] = [
  ...changesOf(2, 'System controller', [
    [
      'psk-settings-file',
      {
        kind: 'secret',
        actor: 'svcops',
        new: '{prefix}_sc_settings.json',
        summary: 'A new pre-shared key must be generated and set in the system controller settings file.',
        action: 'Generate a PSK (`svcops psk generate`) and write it into the system controller settings file.',
        automatic: 'psk',
        seed: 'A new PSK must be generated in the settings file `svc_sc_settings.json`.',
        effect: { type: 'psk-settings-file', file: '{prefix}_sc_settings.json' },
      },
    ],
    [
      'psk-env',
      {
        kind: 'env-var',
        actor: 'svcops',
        new: '{PREFIX}_SYSTEM_CONTROLLER_PSK',
        summary:
          'Every component connecting to the system controller needs the same PSK in its environment; without it the component logs an error and stops.',
        action: 'Set the PSK variable, with the same value, for every component that connects to the system controller.',
        automatic: 'migrate-env',
        seed: 'All components connecting must use the same PSK from `SVC_SYSTEM_CONTROLLER_PSK`; without it a component logs an error and stops.',
        effect: { type: 'psk-required', variable: '{PREFIX}_SYSTEM_CONTROLLER_PSK' },
      },
    ],
  ]),
  ...changesOf(2, 'Pipeline SDK', [
    [
      'aligned-frame',
      {
        kind: 'sdk-symbol',
        actor: 'sdk',
        old: 'AlignedData::DataFrame',
        new: 'AlignedFrame',
        summary: '`AlignedData::DataFrame` becomes `AlignedFrame`.',
        action: 'Rename `AlignedData::DataFrame` to `AlignedFrame`.',
        automatic: 'scan-sdk',
        seed: '`AlignedData::DataFrame` becomes `AlignedFrame`',
        effect: { type: 'sdk-symbol', symbols: ['AlignedData::DataFrame'], replacement: 'AlignedFrame' },
      },
    ],
    [
      'aligned-data-namespace',
      {
        kind: 'sdk-symbol',
        actor: 'sdk',
        old: 'namespace AlignedData',
        summary: 'The namespace `AlignedData` is removed.',
        action: 'Replace every other use of the `AlignedData` namespace with the members of `AlignedFrame`.',
        automatic: 'scan-sdk',
        seed: 'namespace `AlignedData` removed',
        effect: { type: 'sdk-symbol', symbols: ['AlignedData'], replacement: 'AlignedFrame (the namespace is removed)' },
      },
    ],
    [
      'compressed-video-format',
      {
        kind: 'sdk-symbol',
        actor: 'sdk',
        old: 'AlignedData::CompressedVideoFormat',
        new: 'AlignedFrame::CompressedVideoFormat',
        summary: 'The enum `CompressedVideoFormat` moves inside the `AlignedFrame` struct.',
        action: 'Use `AlignedFrame::CompressedVideoFormat`.',
        automatic: 'scan-sdk',
        seed: 'enums `CompressedVideoFormat`, `PixelFormat` and typedef `AudioSampleRow` move inside the struct',
        effect: { type: 'sdk-symbol', symbols: ['AlignedData::CompressedVideoFormat'], replacement: 'AlignedFrame::CompressedVideoFormat' },
      },
    ],
    [
      'pixel-format-in-struct',
      {
        kind: 'sdk-symbol',
        actor: 'sdk',
        old: 'AlignedData::PixelFormat',
        new: 'AlignedFrame::PixelFormat',
        summary: 'The enum `PixelFormat` moves inside the `AlignedFrame` struct.',
        action: 'Use `AlignedFrame::PixelFormat` (until 6.0, which moves it to the top level).',
        automatic: 'scan-sdk',
        seed: 'enums `CompressedVideoFormat`, `PixelFormat` and typedef `AudioSampleRow` move inside the struct',
        effect: { type: 'sdk-symbol', symbols: ['AlignedData::PixelFormat'], replacement: 'AlignedFrame::PixelFormat' },
      },
    ],
    [
      'audio-sample-row',
      {
        kind: 'sdk-symbol',
        actor: 'sdk',
        old: 'AlignedData::AudioSampleRow',
        new: 'AlignedFrame::AudioSampleRow',
        summary: 'The typedef `AudioSampleRow` moves inside the `AlignedFrame` struct.',
        action: 'Use `AlignedFrame::AudioSampleRow`.',
        automatic: 'scan-sdk',
        seed: 'typedef `AudioSampleRow` move inside the struct',
        effect: { type: 'sdk-symbol', symbols: ['AlignedData::AudioSampleRow'], replacement: 'AlignedFrame::AudioSampleRow' },
      },
    ],
    [
      'mpts',
      {
        kind: 'sdk-symbol',
        actor: 'sdk',
        old: 'mPTS',
        new: 'mCaptureTimestamp / mRenderingTimestamp',
        summary:
          'Field `mPTS` is replaced by `mCaptureTimestamp` (TAI microseconds since the UNIX epoch when the ingest captured the frame) and `mRenderingTimestamp` (time the frame was delivered to the rendering engine by `MediaReceiver`); both are rounded to the nearest even frame step since the epoch.',
        action: 'Replace `mPTS` with `mCaptureTimestamp` or `mRenderingTimestamp`, whichever the code meant.',
        automatic: 'scan-sdk',
        seed: 'Field `mPTS` is replaced by `mCaptureTimestamp` (TAI microseconds since the UNIX epoch when the ingest captured the frame) and `mRenderingTimestamp`',
        effect: { type: 'sdk-symbol', symbols: ['mPTS'], replacement: 'mCaptureTimestamp or mRenderingTimestamp' },
      },
    ],
    [
      'rendering-timestamp-increment',
      {
        kind: 'sdk-semantics',
        actor: 'sdk',
        new: 'mRenderingTimestamp',
        summary:
          '`OutputStreamer` uses `mRenderingTimestamp` for outgoing timestamps; both timestamps are rounded to the nearest even frame step since the epoch.',
        action: 'Make frames created by the rendering engine increment `mRenderingTimestamp` correctly for each frame.',
        automatic: null,
        seed: 'frames created by the rendering engine must increment it correctly for each frame',
      },
    ],
    [
      'device-memory',
      {
        kind: 'sdk-symbol',
        actor: 'sdk',
        old: 'mVideoDataCudaPtr',
        new: 'std::shared_ptr<DeviceMemory>',
        summary:
          '`mVideoDataCudaPtr` is replaced by a shared pointer to `DeviceMemory`, which releases the GPU memory when no longer used.',
        action: 'Replace `mVideoDataCudaPtr` with the `DeviceMemory` shared pointer.',
        automatic: 'scan-sdk',
        seed: '`mVideoDataCudaPtr` is replaced by a shared pointer to `DeviceMemory`, which releases the GPU memory when no longer used.',
        effect: { type: 'sdk-symbol', symbols: ['mVideoDataCudaPtr'], replacement: 'a std::shared_ptr<DeviceMemory>' },
      },
    ],
    [
      'device-memory-read-only',
      {
        kind: 'sdk-semantics',
        actor: 'sdk',
        new: 'DeviceMemory',
        summary:
          '`DeviceMemory` of frames delivered by `MediaReceiver` is read-only; the shared pointer may be copied and kept; frames and `DeviceMemory` created by the rendering engine can be changed freely.',
        action: 'Never write into `DeviceMemory` of received frames; copy first if the data must change.',
        automatic: null,
        seed: '`DeviceMemory` of frames delivered by `MediaReceiver` is read-only and never written',
      },
    ],
  ]),
]

export const LIVE_3: LiveChange[] = [
  ...changesOf(3, 'API prefix', [
    [
      'api-v2',
      {
        kind: 'api-prefix',
        actor: 'api-client',
        old: '/api/v1',
        new: '/api/v2',
        summary: '`/api/v2` is the new prefix; `/api/v1` is removed.',
        action: 'Call the system controller under `/api/v2`.',
        automatic: 'migrate-requests',
        seed: '`/api/v2` is the new prefix; `/api/v1` is removed.',
        effect: { type: 'api-prefix', from: '/api/v1', to: '/api/v2' },
      },
    ],
  ]),
  ...changesOf(3, 'Control receivers and outputs', [
    [
      'under-pipelines',
      {
        kind: 'api-path',
        actor: 'api-client',
        new: '/pipelines/{uuid}/controlreceivers, /pipelines/{uuid}/outputs',
        summary: 'Control receiver and output endpoints moved under `/pipelines`.',
        action: 'Call control receivers and outputs under `/pipelines/{uuid}`; the owning pipeline must be known.',
        automatic: 'migrate-requests',
        seed: 'Moved under `/pipelines`.',
      },
    ],
  ]),
  ...changesOf(3, 'Control connections', [
    [
      'controlconnections-post',
      {
        kind: 'api-path',
        actor: 'api-client',
        new: 'POST /controlconnections',
        summary:
          'The two per-control-panel POST endpoints for control connections are replaced by one `POST /controlconnections`; the sending side is a parameter in the JSON body.',
        action:
          'Create control connections with `POST /controlconnections`, naming the sending side (control panel or control receiver) in the body.',
        automatic: 'migrate-requests',
        seed: 'The two per-control-panel POST endpoints for control connections are replaced by one `[POST] /controlconnections`',
      },
    ],
    [
      'controlreceivers-delete',
      {
        kind: 'api-path',
        actor: 'api-client',
        new: 'DELETE /controlreceivers/{uuid}',
        summary:
          'The delete endpoints of control connections are replaced by one `DELETE /controlreceivers/{uuid}`, which closes both sides.',
        action: 'Close control connections with `DELETE /controlreceivers/{uuid}`; one call closes both sides.',
        automatic: 'migrate-requests',
        seed: 'The delete endpoints are replaced by one `[DELETE] /controlreceivers/{uuid}`, which closes both sides.',
      },
    ],
  ]),
  ...changesOf(3, 'Closing streams', [
    [
      'delete-streams',
      {
        kind: 'api-path',
        actor: 'api-client',
        new: 'DELETE /streams/{uuid}',
        summary: 'Closing a stream is one `DELETE /streams/{uuid}`, closing both sides.',
        action: 'Close streams with `DELETE /streams/{stream_uuid}`; one call closes both sides.',
        automatic: 'migrate-requests',
        seed: 'Replaced by one `[DELETE] /streams/{uuid}`, closing both sides.',
      },
    ],
  ]),
  ...changesOf(3, 'Stream information', [
    [
      'stream-info-paths',
      {
        kind: 'api-path',
        actor: 'api-client',
        old: 'GET /ingests/{uuid}/streamconnections/{connection_id}',
        new: 'GET /ingests/{uuid}/streams/{stream_uuid}',
        summary:
          'Stream information moves from `.../streamconnections/{connection_id}` to `.../streams/{stream_uuid}` on ingests and pipelines; `stream_uuid` is system-wide unique and equal on both sides.',
        action: 'Read stream information by `stream_uuid` (look it up once per connection).',
        automatic: 'migrate-requests',
        seed: '`[GET] /ingests/{uuid}/streamconnections/{connection_id}` and the pipeline equivalent become `[GET] /ingests/{uuid}/streams/{stream_uuid}` and `[GET] /pipeline/{uuid}/streams/{stream_uuid}`',
      },
    ],
  ]),
  ...changesOf(3, 'Alignment', [
    [
      'alignment-patch',
      {
        kind: 'api-path',
        actor: 'api-client',
        old: 'PATCH /pipelines/{uuid}/streamconnections/{connection_id}',
        new: 'PATCH /streams/{uuid}',
        summary: 'Alignment is set with `PATCH /streams/{uuid}`.',
        action: 'Send alignment changes to `PATCH /streams/{stream_uuid}`.',
        automatic: 'migrate-requests',
        seed: '`[PATCH] /pipelines/{uuid}/streamconnections/{connection_id}` becomes `[PATCH] /streams/{uuid}`.',
      },
    ],
  ]),
  ...changesOf(3, 'Renames', [
    [
      'source-id',
      {
        kind: 'api-field',
        actor: 'api-client',
        old: 'id',
        new: 'source_id',
        summary: 'The source `id` becomes `source_id` in `POST /streams` and in ingest responses on sources and streams.',
        action: 'Send and read `source_id` instead of `id`.',
        automatic: 'migrate-requests',
        seed: '`id` (source) becomes `source_id` in `[POST] /streams` and in ingest responses on sources and streams',
      },
    ],
    [
      'width-height',
      {
        kind: 'api-field',
        actor: 'api-client',
        old: 'resolution_x, resoulution_y',
        new: 'width, height',
        summary: '`resolution_x` and `resoulution_y` become `width` and `height`.',
        action: 'Send and read `width` and `height`.',
        automatic: 'migrate-requests',
        seed: '`resolution_x` and `resoulution_y` become `width` and `height`.',
      },
    ],
  ]),
  ...changesOf(3, 'Thumbnails', [
    [
      'thumbnail-path',
      {
        kind: 'api-path',
        actor: 'api-client',
        old: 'POST /ingests/{uuid}/thumbnail',
        new: 'POST /ingests/{uuid}/sources/{source_id}/thumbnail',
        summary: 'The thumbnail endpoint takes `source_id` in the path instead of the body.',
        action: 'Move `source_id` from the body into the path.',
        automatic: 'migrate-requests',
        seed: '`[POST] /ingests/{uuid}/thumbnail` becomes `[POST] /ingests/{uuid}/sources/{source_id}/thumbnail`; `source_id` moves from the body to the path.',
      },
    ],
    [
      'thumbnail-encoder',
      {
        kind: 'api-required-field',
        actor: 'api-client',
        new: 'encoder: auto',
        summary: 'The thumbnail endpoint has a new required parameter `encoder`.',
        action: 'Send `encoder: auto` unless a specific implementation is needed.',
        automatic: 'migrate-requests',
        seed: 'New required parameter `encoder`; use `auto` unless a specific implementation is needed.',
      },
    ],
  ]),
]

export const LIVE_4: LiveChange[] = [
  ...changesOf(4, 'POST /streams', [
    [
      'audio-format',
      {
        kind: 'api-required-field',
        actor: 'api-client',
        new: 'audio_format',
        summary:
          '`POST /streams` requires `audio_format` (`AAC-LC` or `Opus`); AAC-LC has slightly higher quality but slower encoding, Opus lower latency and better quality at low bitrates.',
        action: 'Send `audio_format`; `AAC-LC` keeps the previous behaviour.',
        automatic: 'migrate-requests',
        seed: 'Two new required parameters: `audio_format` (`AAC-LC` or `Opus`) and `audio_mapping`.',
      },
    ],
    [
      'audio-mapping',
      {
        kind: 'api-required-field',
        actor: 'api-client',
        new: 'audio_mapping',
        summary:
          '`POST /streams` requires `audio_mapping`: entries are one input channel (mono) or two (stereo), in output channel order; unlisted input channels are ignored.',
        action: 'Send `audio_mapping`; `[[0,1]]` keeps the previous behaviour.',
        automatic: 'migrate-requests',
        seed: 'Previous behavior: `AAC-LC` and `[[0,1]]`.',
      },
    ],
  ]),
  ...changesOf(4, 'Metric', [
    [
      'video-frames-in-queue',
      {
        kind: 'metric',
        actor: 'operator',
        old: 'queueing_video_frames',
        new: 'video_frames_in_queue',
        summary: 'The metric `queueing_video_frames` is renamed `video_frames_in_queue`.',
        action: 'Rename the metric in alert rules and dashboards.',
        automatic: 'migrate-metrics',
        seed: '`queueing_video_frames` renamed `video_frames_in_queue`.',
        effect: { type: 'metric-rename', component: 'pipeline', from: 'queueing_video_frames', to: 'video_frames_in_queue' },
      },
    ],
  ]),
  ...changesOf(4, 'Outputs and multiviews', [
    [
      'local-remote-address',
      {
        kind: 'api-field',
        actor: 'api-client',
        old: 'ip, port',
        new: 'local_ip, local_port, remote_ip, remote_port',
        summary:
          'In `POST /pipelines/{uuid}/outputs/{output_uuid}/stream` and `POST /pipelines/{uuid}/multiviews` the parameters `ip` and `port` are replaced by `local_ip`, `local_port`, `remote_ip`, `remote_port`.',
        action: 'Replace `ip`/`port` by the SRT listener, SRT caller or UDP rule.',
        automatic: 'migrate-requests',
        seed: 'the parameters `ip` and `port` are replaced by `local_ip`, `local_port`, `remote_ip`, `remote_port`',
      },
    ],
    [
      'srt-listener',
      {
        kind: 'api-field',
        actor: 'api-client',
        old: 'ip, port',
        new: 'local_ip, local_port',
        summary:
          'MPEG-TS over SRT in listener mode (`srt_mode == listener`): only `local_ip` and `local_port` are used, as the listen address; `local_port` 0 lets the OS pick a port.',
        action: 'Send the listen address as `local_ip` and `local_port`.',
        automatic: 'migrate-requests',
        seed: 'MPEG-TS over SRT, listener mode (`srt_mode == listener`): only `local_ip` and `local_port` are used as the listen address; `local_port` 0 lets the OS pick a port.',
      },
    ],
    [
      'srt-caller',
      {
        kind: 'api-field',
        actor: 'api-client',
        old: 'ip, port',
        new: 'remote_ip, remote_port, local_ip 0.0.0.0, local_port 0',
        summary:
          'SRT caller mode: `remote_*` is the address to connect to, `local_*` the address to bind to; the old behaviour is `local_ip` 0.0.0.0 and `local_port` 0.',
        action: 'Send the address to connect to as `remote_*`, and `local_ip` 0.0.0.0, `local_port` 0 to keep the old behaviour.',
        automatic: 'migrate-requests',
        seed: 'SRT caller mode: `remote_*` is the address to connect to, `local_*` the address to bind to. Old behavior: `local_ip` 0.0.0.0 and `local_port` 0.',
      },
    ],
    [
      'udp',
      {
        kind: 'api-field',
        actor: 'api-client',
        old: 'ip, port',
        new: 'remote_ip, remote_port, local_ip 0.0.0.0, local_port 0',
        summary: 'MPEG-TS over UDP: the destination is given by `remote_*`; `local_*` must be present and set to 0.0.0.0 and 0.',
        action: 'Send the destination as `remote_*` with `local_ip` 0.0.0.0 and `local_port` 0.',
        automatic: 'migrate-requests',
        seed: 'MPEG-TS over UDP: the destination is given by `remote_*`; `local_*` must be present and set to 0.0.0.0 and 0.',
      },
    ],
  ]),
  ...changesOf(4, 'Output layout', [
    [
      'output-response-layout',
      {
        kind: 'api-response',
        actor: 'api-client',
        summary:
          'The response layout of `GET /pipelines/{uuid}/outputs/{output_uuid}/stream` and `GET /pipelines/{uuid}/multiviews` changed.',
        action: 'Review every field the client reads from these responses.',
        automatic: null,
        seed: 'The response layout of `GET /pipelines/{uuid}/outputs/{output_uuid}/stream` and `GET /pipelines/{uuid}/multiviews` changed.',
      },
    ],
  ]),
  ...changesOf(4, 'Removed fields', [
    [
      'video-kilobit-rate',
      {
        kind: 'removed-field',
        actor: 'api-client',
        old: 'video_kilobit_rate (GET /pipelines/{uuid}/streams/{stream_uuid})',
        new: 'video_kilobit_rate (GET /ingests/{uuid}/streams/{stream_uuid})',
        summary: '`video_kilobit_rate` is removed from the pipeline stream endpoint.',
        action: 'Read `video_kilobit_rate` from `GET /ingests/{uuid}/streams/{stream_uuid}`.',
        automatic: 'migrate-requests',
        seed: '`video_kilobit_rate` in `GET /pipelines/{uuid}/streams/{stream_uuid}` (use the same field in `GET /ingests/{uuid}/streams/{stream_uuid}`)',
      },
    ],
    [
      'lost-packets',
      {
        kind: 'removed-field',
        actor: 'api-client',
        old: 'lost_packets (ingest stream)',
        new: 'lost_packets, dropped_packets (pipeline stream)',
        summary: 'The counter `lost_packets` is removed from the ingest stream endpoint.',
        action: 'Read `lost_packets` and `dropped_packets` of the pipeline stream.',
        automatic: 'migrate-requests',
        seed: 'counter `lost_packets` in the ingest stream endpoint (use `lost_packets` and `dropped_packets` of the pipeline)',
      },
    ],
  ]),
  ...changesOf(4, 'Pipeline SDK', [
    [
      'incoming-request',
      {
        kind: 'sdk-signature',
        actor: 'sdk',
        old: 'ControlDataReceiver::IncomingRequest (one message)',
        new: 'ControlDataReceiver::IncomingRequest (vector of messages)',
        summary:
          '`ControlDataReceiver::IncomingRequest` delivers a vector of messages (each a vector of bytes), so several messages can arrive at the same time point.',
        action: 'Handle every message of the vector.',
        automatic: 'scan-sdk',
        seed: '`ControlDataReceiver::IncomingRequest` delivers a vector of messages (each a vector of bytes)',
        effect: {
          type: 'sdk-symbol',
          symbols: ['IncomingRequest'],
          replacement: 'IncomingRequest now delivers a vector of messages (each a vector of bytes)',
        },
      },
    ],
    [
      'debug-video-audio',
      {
        kind: 'sdk-symbol',
        actor: 'sdk',
        old: 'MediaReceiver::Settings::mDebugVideo, mDebugAudio',
        summary: '`mDebugVideo` and `mDebugAudio` are removed from `MediaReceiver::Settings`.',
        action: 'Remove the uses of `mDebugVideo` and `mDebugAudio`.',
        automatic: 'scan-sdk',
        seed: '`mDebugVideo` and `mDebugAudio` removed from `MediaReceiver::Settings`.',
        effect: {
          type: 'sdk-symbol',
          symbols: ['mDebugVideo', 'mDebugAudio'],
          replacement: 'nothing (removed from MediaReceiver::Settings)',
        },
      },
    ],
  ]),
]
