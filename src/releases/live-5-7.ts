/**
 * Live production system, majors 5.0.0 to 7.0.0: every row of the seed's tables as data.
 * `seed` holds a verbatim fragment of the row, so the catalog test can prove each row is here.
 */
import { changesOf } from './live-2-4.ts'
import type { LiveChange } from './types.ts'

export const LIVE_5: LiveChange[] = [
  ...changesOf(5, 'Streams of an output', [
    [
      'output-streams-path',
      {
        kind: 'api-path',
        actor: 'api-client',
        old: '/pipelines/{uuid}/outputs/{output_uuid}/stream',
        new: '/pipelines/{uuid}/outputs/{output_uuid}/streams',
        summary: 'The stream of an output moves from `.../stream` to `.../streams`; POST takes the same parameters.',
        action: 'Call `.../outputs/{output_uuid}/streams`.',
        automatic: 'migrate-requests',
        seed: '`/pipelines/{uuid}/outputs/{output_uuid}/stream` moves to `.../streams`. POST takes the same parameters',
      },
    ],
    [
      'output-streams-post-returns-id',
      {
        kind: 'api-response',
        actor: 'api-client',
        new: 'stream id',
        summary: 'POST of an output stream returns the ID of the new stream, globally unique together with the output UUID.',
        action: 'Keep the returned stream ID: stopping that stream needs it.',
        automatic: null,
        seed: 'returns the ID of the new stream, globally unique together with the output UUID.',
      },
    ],
    [
      'output-streams-multiple',
      {
        kind: 'api-path',
        actor: 'operator',
        summary: 'Several streams per output are allowed only if the encoder settings match for all of them.',
        action: 'Give every stream of one output the same encoder settings.',
        automatic: null,
        seed: 'Multiple streams per output are allowed only if encoder settings match for all.',
      },
    ],
    [
      'output-streams-delete',
      {
        kind: 'api-path',
        actor: 'api-client',
        new: 'DELETE /pipelines/{uuid}/outputs/{output_uuid}/streams/{stream_id}',
        summary: 'A new `DELETE .../outputs/{output_uuid}/streams/{stream_id}` stops one stream.',
        action: 'Stop a stream by its ID.',
        automatic: 'migrate-requests',
        seed: 'New `[DELETE] /pipelines/{uuid}/outputs/{output_uuid}/streams/{stream_id}` stops a stream.',
      },
    ],
  ]),
  ...changesOf(5, 'GET streams', [
    [
      'active-streams',
      {
        kind: 'api-response',
        actor: 'api-client',
        old: 'a single active stream',
        new: 'active_streams',
        summary: 'The response lists `active_streams` instead of a single active stream.',
        action: 'Read the list `active_streams`.',
        automatic: 'migrate-requests',
        seed: 'The response lists `active_streams` instead of a single active stream.',
      },
    ],
  ]),
  ...changesOf(5, 'Encoding quality', [
    [
      'pic-mode-balance',
      {
        kind: 'api-field',
        actor: 'api-client',
        new: 'pic_mode: pic_mode_ip, speed_quality_balance: balanced',
        summary:
          'POST of output streams and `POST /pipelines/{uuid}/multiviews` accept `pic_mode` and `speed_quality_balance`, defaulting to `pic_mode_ip` and `balanced`.',
        action: 'Nothing required; svcops writes the defaults out so the behaviour is explicit.',
        automatic: 'migrate-requests',
        seed: 'accept `pic_mode` and `speed_quality_balance`; defaults `pic_mode_ip` and `balanced`.',
      },
    ],
  ]),
  ...changesOf(5, 'Pipeline SDK', [
    [
      'media-receiver-start',
      {
        kind: 'sdk-signature',
        actor: 'sdk',
        old: 'MediaReceiver::start(settings)',
        new: 'MediaReceiver::start(settings, gpuContext)',
        summary: '`MediaReceiver::start` takes a GPU compute context as second parameter.',
        action: 'Pass the GPU compute context.',
        automatic: 'scan-sdk',
        seed: '`MediaReceiver::start` takes a GPU compute context as second parameter',
        effect: {
          type: 'sdk-symbol',
          symbols: ['MediaReceiver::start'],
          replacement: 'MediaReceiver::start(settings, <GPU compute context>)',
        },
      },
    ],
    [
      'aligned-frame-free-stream',
      {
        kind: 'sdk-symbol',
        actor: 'sdk',
        new: 'MediaReceiver::Settings::mAlignedFrameFreeStream',
        summary:
          '`MediaReceiver::Settings` has a new `mAlignedFrameFreeStream`: a stream in the GPU context used for the asynchronous free once all `DeviceMemory` pointers are released.',
        action: 'Set `mAlignedFrameFreeStream` in the receiver settings.',
        automatic: 'scan-sdk',
        seed: '`MediaReceiver::Settings` has new `mAlignedFrameFreeStream`',
        effect: {
          type: 'sdk-symbol',
          symbols: ['MediaReceiver::Settings'],
          replacement: 'MediaReceiver::Settings with mAlignedFrameFreeStream set',
        },
      },
    ],
    [
      'media-streamer-configure',
      {
        kind: 'sdk-signature',
        actor: 'sdk',
        old: 'MediaStreamer::configure(...)',
        new: 'MediaStreamer::configure(..., gpuContext)',
        summary: '`MediaStreamer::configure` takes a GPU compute context as second parameter.',
        action: 'Pass the GPU compute context.',
        automatic: 'scan-sdk',
        seed: '`MediaStreamer::configure` takes a GPU compute context as second parameter',
        effect: {
          type: 'sdk-symbol',
          symbols: ['MediaStreamer::configure'],
          replacement: 'MediaStreamer::configure(<first>, <GPU compute context>)',
        },
      },
    ],
    [
      'factory-ca-cert',
      {
        kind: 'sdk-signature',
        actor: 'sdk',
        old: 'PipelineSystemControllerInterfaceFactory(...)',
        new: 'PipelineSystemControllerInterfaceFactory(..., customCaCertFile)',
        summary:
          'The `PipelineSystemControllerInterfaceFactory` constructor takes an extra `customCaCertFile` parameter (optional CA certificate file for validating system controller certificates).',
        action: 'Pass `customCaCertFile` (empty for the system trust store).',
        automatic: 'scan-sdk',
        seed: 'the `PipelineSystemControllerInterfaceFactory` constructor takes an extra `customCaCertFile` parameter',
        effect: {
          type: 'custom-ca-cert',
          symbols: ['PipelineSystemControllerInterfaceFactory'],
          replacement: 'PipelineSystemControllerInterfaceFactory(..., customCaCertFile)',
        },
      },
    ],
  ]),
]

export const LIVE_6: LiveChange[] = [
  ...changesOf(6, 'Ingest metrics', [
    [
      'dropped-frames',
      {
        kind: 'metric',
        actor: 'operator',
        old: '{prefix}_ingest_source_dropped_frames',
        new: '{prefix}_ingest_source_dropped_audio_frames + {prefix}_ingest_source_dropped_video_frames',
        summary: '`{prefix}_ingest_source_dropped_frames` is split into audio and video variants.',
        action: 'Query both variants (svcops rewrites to their sum and flags it for review).',
        automatic: 'migrate-metrics',
        seed: '`svc_ingest_source_dropped_frames` into `svc_ingest_source_dropped_audio_frames` and `svc_ingest_source_dropped_video_frames`',
        effect: {
          type: 'metric-split',
          component: 'ingest',
          from: '{prefix}_ingest_source_dropped_frames',
          into: ['{prefix}_ingest_source_dropped_audio_frames', '{prefix}_ingest_source_dropped_video_frames'],
        },
      },
    ],
    [
      'duplicated-frames',
      {
        kind: 'metric',
        actor: 'operator',
        old: '{prefix}_ingest_source_duplicated_frames',
        new: '{prefix}_ingest_source_duplicated_audio_frames + {prefix}_ingest_source_duplicated_video_frames',
        summary: '`{prefix}_ingest_source_duplicated_frames` is split into audio and video variants.',
        action: 'Query both variants (svcops rewrites to their sum and flags it for review).',
        automatic: 'migrate-metrics',
        seed: '`svc_ingest_source_duplicated_frames` into `..._duplicated_audio_frames` and `..._duplicated_video_frames`',
        effect: {
          type: 'metric-split',
          component: 'ingest',
          from: '{prefix}_ingest_source_duplicated_frames',
          into: ['{prefix}_ingest_source_duplicated_audio_frames', '{prefix}_ingest_source_duplicated_video_frames'],
        },
      },
    ],
    [
      'lost-frames',
      {
        kind: 'metric',
        actor: 'operator',
        old: '{prefix}_ingest_source_lost_frames',
        new: '{prefix}_ingest_source_lost_audio_frames + {prefix}_ingest_source_lost_video_frames',
        summary: '`{prefix}_ingest_source_lost_frames` is split into audio and video variants.',
        action: 'Query both variants (svcops rewrites to their sum and flags it for review).',
        automatic: 'migrate-metrics',
        seed: '`svc_ingest_source_lost_frames` into `..._lost_audio_frames` and `..._lost_video_frames`',
        effect: {
          type: 'metric-split',
          component: 'ingest',
          from: '{prefix}_ingest_source_lost_frames',
          into: ['{prefix}_ingest_source_lost_audio_frames', '{prefix}_ingest_source_lost_video_frames'],
        },
      },
    ],
    [
      'ingest-metrics-endpoints',
      {
        kind: 'api-response',
        actor: 'api-client',
        summary: 'The split applies in `/ingests/{uuid}?expand=true`, `/ingests/{uuid}/sources` and `/ingest/{uuid}/sources/{source_id}`.',
        action: 'Read the audio and video variants from these responses.',
        automatic: 'migrate-requests',
        seed: 'In `/ingests/{uuid}?expand=true`, `/ingests/{uuid}/sources` and `/ingest/{uuid}/sources/{source_id}`, each metric is split into audio and video variants',
      },
    ],
  ]),
  ...changesOf(6, 'Startup', [
    [
      'psk-entropy',
      {
        kind: 'startup',
        actor: 'svcops',
        summary: 'A PSK with too low entropy prevents the system controller from starting.',
        action: 'Check the PSK (`svcops psk check`) and generate a new one if it is refused.',
        automatic: 'psk',
        seed: 'A PSK with too low entropy prevents the system controller from starting.',
        effect: { type: 'psk-entropy-enforced' },
      },
    ],
  ]),
  ...changesOf(6, 'Settings file', [
    [
      'settings-search-path',
      {
        kind: 'settings-file',
        actor: 'svcops',
        old: 'former fixed application directories',
        new: 'working directory, /etc/opt/{product_dir}, --settings-path <PATH>',
        summary:
          '`{prefix}_sc_settings.json` is no longer searched in the former fixed application directories; it is read from the working directory, from `/etc/opt/{product_dir}`, or from the directory given by `--settings-path <PATH>`.',
        action: 'Move the settings file to one of the new locations, or start with `--settings-path`.',
        automatic: 'migrate-env',
        seed: 'It is read from the current working directory, from `/etc/opt/<product_dir>`, or from the directory given by the flag `--settings-path <PATH>`.',
        effect: { type: 'settings-search-path', directories: ['.', '/etc/opt/{product_dir}'], flag: '--settings-path' },
      },
    ],
  ]),
  ...changesOf(6, 'Rendering engine', [
    [
      'tcp-endpoint',
      {
        kind: 'env-var',
        actor: 'svcops',
        old: '{PREFIX}_TCP_ENDPOINTS',
        new: '{PREFIX}_TCP_ENDPOINT',
        summary:
          'For the TCP control panel `{PREFIX}_TCP_ENDPOINTS` is renamed `{PREFIX}_TCP_ENDPOINT` and takes a single endpoint, which accepts multiple connections.',
        action: 'Rename the variable and keep exactly one endpoint.',
        automatic: 'migrate-env',
        seed: 'the environment variable `SVC_TCP_ENDPOINTS` is renamed `SVC_TCP_ENDPOINT` and accepts a single endpoint',
        effect: { type: 'env-rename', from: '{PREFIX}_TCP_ENDPOINTS', to: '{PREFIX}_TCP_ENDPOINT', singleValue: true },
      },
    ],
  ]),
  ...changesOf(6, 'C++ SDK', [
    [
      'pixel-format-top-level',
      {
        kind: 'sdk-symbol',
        actor: 'sdk',
        old: 'AlignedFrame::PixelFormat',
        new: 'PixelFormat (PixelFormat.h)',
        summary: '`AlignedFrame::PixelFormat` is replaced by a top-level `PixelFormat` type in the header `PixelFormat.h`.',
        action: 'Include `PixelFormat.h` and use `PixelFormat`.',
        automatic: 'scan-sdk',
        seed: '`AlignedFrame::PixelFormat` replaced by a top-level `PixelFormat` type in the header `PixelFormat.h`.',
        effect: { type: 'sdk-symbol', symbols: ['AlignedFrame::PixelFormat'], replacement: 'PixelFormat from PixelFormat.h' },
      },
    ],
    [
      'send-message',
      {
        kind: 'sdk-signature',
        actor: 'sdk',
        old: 'ISystemControllerInterface::sendRequest',
        new: 'ISystemControllerInterface::sendMessage',
        summary:
          '`ISystemControllerInterface::sendRequest` is replaced by `sendMessage`; the system controller no longer answers messages, since the transport is TCP.',
        action: 'Call `sendMessage` and stop waiting for an answer.',
        automatic: 'scan-sdk',
        seed: '`ISystemControllerInterface::sendRequest` replaced by `sendMessage`; the system controller no longer answers messages, since the transport is TCP.',
        effect: { type: 'sdk-symbol', symbols: ['sendRequest'], replacement: 'sendMessage (no answer is sent back)' },
      },
    ],
  ]),
]

export const LIVE_7: LiveChange[] = [
  ...changesOf(7, 'API prefix', [
    [
      'api-v3',
      {
        kind: 'api-prefix',
        actor: 'api-client',
        old: '/api/v2',
        new: '/api/v3',
        summary: 'All REST calls use `/api/v3`.',
        action: 'Call the system controller under `/api/v3`.',
        automatic: 'migrate-requests',
        seed: 'All REST calls use `/api/v3`.',
        effect: { type: 'api-prefix', from: '/api/v2', to: '/api/v3' },
      },
    ],
  ]),
  ...changesOf(7, 'Control receivers', [
    [
      'controlconnections-pipeline',
      {
        kind: 'api-field',
        actor: 'api-client',
        old: 'control receiver UUID',
        new: 'pipeline UUID',
        summary: 'Control receivers have no UUID any more; `POST /controlconnections` takes the pipeline UUID instead.',
        action: 'Name the pipeline instead of the control receiver in `POST /controlconnections`.',
        automatic: 'migrate-requests',
        seed: 'The UUID of control receivers is removed; `[POST] /controlconnections` takes the pipeline UUID instead.',
      },
    ],
    [
      'controlreceiver-endpoints-removed',
      {
        kind: 'removed-endpoint',
        actor: 'api-client',
        old: '/pipelines/{uuid}/controlreceivers...',
        new: 'GET /pipelines/{uuid}?expand=true (controlreceiver)',
        summary:
          'Every endpoint starting `/pipelines/{uuid}/controlreceivers` is removed; control receiver statistics are in the `controlreceiver` part of `GET /pipelines/{uuid}?expand=true`.',
        action: 'Read control receiver statistics from `GET /pipelines/{uuid}?expand=true`.',
        automatic: 'migrate-requests',
        seed: 'All endpoints starting `/pipelines/{uuid}/controlreceivers` are removed; control receiver statistics are in the `controlreceiver` part of the response of `[GET] /pipelines/{uuid}?expand=true`.',
      },
    ],
    [
      'controlreceiver-connections',
      {
        kind: 'api-response',
        actor: 'api-client',
        old: 'connected_to, listening_interface.<incoming list>',
        new: 'outgoing_connections, incoming_connections',
        summary:
          'In the `controlreceiver` part `connected_to` is renamed `outgoing_connections`, and the list of incoming connections moves out of `listening_interface` as `incoming_connections`.',
        action: 'Read `outgoing_connections` and `incoming_connections`.',
        automatic: 'migrate-requests',
        seed: 'In it `connected_to` is renamed `outgoing_connections`, and the list of incoming connections inside `listening_interface` moves out of that object and is named `incoming_connections`.',
      },
    ],
  ]),
  ...changesOf(7, 'Renames', [
    [
      'outgoing-connections',
      {
        kind: 'api-field',
        actor: 'api-client',
        old: 'connected_to',
        new: 'outgoing_connections',
        summary: 'The parameter `connected_to` (for instance in `GET /controlpanels/{uuid}`) is renamed `outgoing_connections`.',
        action: 'Send and read `outgoing_connections`.',
        automatic: 'migrate-requests',
        seed: 'Parameter `connected_to` (for instance in `[GET] /controlpanels/{uuid}`) is renamed `outgoing_connections`.',
      },
    ],
  ]),
  ...changesOf(7, 'Status object', [
    [
      'status-flattened',
      {
        kind: 'api-response',
        actor: 'api-client',
        old: 'status.<member>',
        new: '<member>',
        summary:
          'The `status` object in responses for control receivers, control panels and outputs is removed; its members move up one level.',
        action: 'Read the former `status` members one level up.',
        automatic: 'migrate-requests',
        seed: 'The `status` JSON object in responses for control receivers, control panels and outputs is removed; its members move up one level.',
      },
    ],
  ]),
  ...changesOf(7, 'C++ SDK', [
    [
      'sdk-interfaces',
      {
        kind: 'sdk-symbol',
        actor: 'sdk',
        old: 'ControlDataReceiver, MediaStreamer (classes)',
        new: 'IControlDataReceiver, IMediaStreamer (interfaces)',
        summary:
          'Classes `ControlDataReceiver` and `MediaStreamer` are replaced by interfaces `IControlDataReceiver` and `IMediaStreamer`, obtained with `MediaReceiver::createMediaStreamerOutput` and `MediaReceiver::getControlDataReceiver`.',
        action: 'Use the interfaces, created by `MediaReceiver::createMediaStreamerOutput` and `MediaReceiver::getControlDataReceiver`.',
        automatic: 'scan-sdk',
        seed: 'Classes `ControlDataReceiver` and `MediaStreamer` are replaced by interfaces `IControlDataReceiver` and `IMediaStreamer`; use `MediaReceiver::createMediaStreamerOutput` and `MediaReceiver::getControlDataReceiver`.',
        // ControlDataReceiver::Settings stays: 7.0's MediaReceiver::start takes it.
        effect: {
          type: 'sdk-symbol',
          symbols: ['ControlDataReceiver', 'MediaStreamer'],
          except: ['ControlDataReceiver::Settings'],
          replacement: 'IControlDataReceiver / IMediaStreamer from MediaReceiver::getControlDataReceiver / createMediaStreamerOutput',
        },
      },
    ],
    [
      'get-version',
      {
        kind: 'sdk-symbol',
        actor: 'sdk',
        old: 'getGitRevision(), getBuildInfo()',
        new: 'getVersion()',
        summary: '`getGitRevision()` and `getBuildInfo()` are removed; use `getVersion()`.',
        action: 'Call `getVersion()`.',
        automatic: 'scan-sdk',
        seed: '`getGitRevision()` and `getBuildInfo()` are removed; use `getVersion()`.',
        effect: { type: 'sdk-symbol', symbols: ['getGitRevision', 'getBuildInfo'], replacement: 'getVersion()' },
      },
    ],
    [
      'reset-callback',
      {
        kind: 'sdk-symbol',
        actor: 'sdk',
        new: 'MediaReceiver::Settings::mResetCallback',
        summary: '`MediaReceiver::Settings` has a new function `mResetCallback`, which must be set to a callback.',
        action: 'Set `mResetCallback` in the receiver settings.',
        automatic: 'scan-sdk',
        seed: '`MediaReceiver::Settings` has a new function `mResetCallback` which must be set to a callback.',
        effect: {
          type: 'sdk-symbol',
          symbols: ['MediaReceiver::Settings'],
          replacement: 'MediaReceiver::Settings with mResetCallback set to a callback',
        },
      },
    ],
    [
      'start-receiver-settings',
      {
        kind: 'sdk-signature',
        actor: 'sdk',
        old: 'MediaReceiver::start(...)',
        new: 'MediaReceiver::start(..., const ControlDataReceiver::Settings& receiverSettings)',
        summary: '`MediaReceiver::start` requires a new parameter `const ControlDataReceiver::Settings& receiverSettings`.',
        action: 'Pass the control data receiver settings to `MediaReceiver::start`.',
        automatic: 'scan-sdk',
        seed: '`MediaReceiver::start` requires a new parameter `const ControlDataReceiver::Settings& receiverSettings`.',
        effect: {
          type: 'sdk-symbol',
          symbols: ['MediaReceiver::start'],
          replacement: 'MediaReceiver::start(..., const ControlDataReceiver::Settings& receiverSettings)',
        },
      },
    ],
  ]),
]
