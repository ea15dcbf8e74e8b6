import { describe, expect, it } from 'vitest'
import { BadInputError } from '../../src/core/errors.ts'
import { LIVE_CHANGES } from '../../src/releases/live.ts'
import { migrateRequests, parseCalls, parseIdMap, type SavedCall } from '../../src/releases/requests.ts'

const ids = { streams: { c7: '5d1c0a9e-stream-7', c9: '9f00aa01-stream-9' } }

interface Translation {
  name: string
  from: string
  to: string
  call: SavedCall
  out: Partial<SavedCall>
  rules: string[]
  review?: RegExp
}

const translations: Translation[] = [
  {
    name: 'prefix /api/v1 -> /api/v2',
    from: '2.0.0',
    to: '3.0.0',
    call: { method: 'GET', path: '/api/v1/ingests' },
    out: { path: '/api/v2/ingests' },
    rules: ['3.0.0/api-v2'],
  },
  {
    name: 'prefix /api/v2 -> /api/v3 keeps the query',
    from: '6.2.0',
    to: '7.0.0',
    call: { method: 'GET', path: '/api/v2/pipelines/p1?expand=true' },
    out: { path: '/api/v3/pipelines/p1?expand=true' },
    rules: ['7.0.0/api-v3'],
  },
  {
    name: 'full URLs keep their origin',
    from: '2.0.0',
    to: '3.0.0',
    call: { method: 'GET', path: 'https://sc.example:8443/api/v1/ingests' },
    out: { path: 'https://sc.example:8443/api/v2/ingests' },
    rules: ['3.0.0/api-v2'],
  },
  {
    name: 'ingest stream information by stream UUID',
    from: '2.0.0',
    to: '3.0.0',
    call: { method: 'GET', path: '/api/v1/ingests/i1/streamconnections/c7' },
    out: { path: '/api/v2/ingests/i1/streams/5d1c0a9e-stream-7' },
    rules: ['3.0.0/api-v2', '3.0.0/stream-info-paths'],
  },
  {
    name: 'pipeline stream information, flagged for the /pipeline vs /pipelines wording',
    from: '2.0.0',
    to: '3.0.0',
    call: { method: 'GET', path: '/api/v1/pipelines/p1/streamconnections/c9' },
    out: { path: '/api/v2/pipelines/p1/streams/9f00aa01-stream-9' },
    rules: ['3.0.0/stream-info-paths'],
    review: /\/pipeline\/\{uuid\}\/streams/,
  },
  {
    name: 'closing a stream is one DELETE /streams/{uuid}',
    from: '2.0.0',
    to: '3.0.0',
    call: { method: 'DELETE', path: '/api/v1/ingests/i1/streamconnections/c7' },
    out: { method: 'DELETE', path: '/api/v2/streams/5d1c0a9e-stream-7' },
    rules: ['3.0.0/delete-streams'],
  },
  {
    name: 'alignment PATCH',
    from: '2.0.0',
    to: '3.0.0',
    call: { method: 'PATCH', path: '/api/v1/pipelines/p1/streamconnections/c9', body: { alignment_ms: 40 } },
    out: { path: '/api/v2/streams/9f00aa01-stream-9', body: { alignment_ms: 40 } },
    rules: ['3.0.0/alignment-patch'],
  },
  {
    name: 'id -> source_id in POST /streams, nested ids untouched',
    from: '2.0.0',
    to: '3.0.0',
    call: { method: 'POST', path: '/api/v1/streams', body: { id: 'cam-1', pipeline: { id: 'p1' } } },
    out: { body: { source_id: 'cam-1', pipeline: { id: 'p1' } } },
    rules: ['3.0.0/source-id'],
  },
  {
    name: 'id -> source_id in what clients read from ingest sources',
    from: '2.0.0',
    to: '3.0.0',
    call: { method: 'GET', path: '/api/v1/ingests/i1/sources', reads: ['[0].id', '[0].name', '[0].pipeline.id'] },
    out: { reads: ['[0].source_id', '[0].name', '[0].pipeline.id'] },
    rules: ['3.0.0/source-id'],
  },
  {
    name: 'resolution_x/resoulution_y -> width/height in bodies and reads',
    from: '2.0.0',
    to: '3.0.0',
    call: {
      method: 'POST',
      path: '/api/v1/ingests/i1/sources',
      body: { video: { resolution_x: 1920, resoulution_y: 1080 } },
      reads: ['resolution_x'],
    },
    out: { body: { video: { width: 1920, height: 1080 } }, reads: ['width'] },
    rules: ['3.0.0/width-height'],
  },
  {
    name: 'thumbnail: source_id into the path, encoder auto',
    from: '2.0.0',
    to: '3.0.0',
    call: { method: 'POST', path: '/api/v1/ingests/i1/thumbnail', body: { source_id: 's 1', size: 320 } },
    out: { path: '/api/v2/ingests/i1/sources/s%201/thumbnail', body: { size: 320, encoder: 'auto' } },
    rules: ['3.0.0/thumbnail-path', '3.0.0/thumbnail-encoder'],
  },
  {
    name: 'thumbnail keeps an explicit encoder',
    from: '2.0.0',
    to: '3.0.0',
    call: { method: 'POST', path: '/api/v1/ingests/i1/thumbnail', body: { source_id: 's1', encoder: 'nvenc' } },
    out: { body: { encoder: 'nvenc' } },
    rules: ['3.0.0/thumbnail-path'],
  },
  {
    name: 'POST /streams gets the previous audio behaviour',
    from: '3.1.0',
    to: '4.0.0',
    call: { method: 'POST', path: '/api/v2/streams', body: { source_id: 's1' } },
    out: { body: { source_id: 's1', audio_format: 'AAC-LC', audio_mapping: [[0, 1]] } },
    rules: ['4.0.0/audio-format', '4.0.0/audio-mapping'],
  },
  {
    name: 'POST /streams keeps a chosen audio format',
    from: '3.1.0',
    to: '4.0.0',
    call: { method: 'POST', path: '/api/v2/streams', body: { source_id: 's1', audio_format: 'Opus' } },
    out: { body: { source_id: 's1', audio_format: 'Opus', audio_mapping: [[0, 1]] } },
    rules: ['4.0.0/audio-mapping'],
  },
  {
    name: 'SRT listener: ip/port become the listen address',
    from: '3.0.0',
    to: '4.0.0',
    call: {
      method: 'POST',
      path: '/api/v2/pipelines/p1/outputs/o1/stream',
      body: { format: 'mpegts-srt', srt_mode: 'listener', ip: '0.0.0.0', port: 9000, latency_ms: 120 },
    },
    out: { body: { format: 'mpegts-srt', srt_mode: 'listener', local_ip: '0.0.0.0', local_port: 9000, latency_ms: 120 } },
    rules: ['4.0.0/local-remote-address', '4.0.0/srt-listener'],
  },
  {
    name: 'SRT listener with port 0 keeps 0 (the OS picks a port)',
    from: '3.0.0',
    to: '4.0.0',
    call: { method: 'POST', path: '/api/v2/pipelines/p1/multiviews', body: { srt_mode: 'listener', ip: '10.1.2.3', port: 0 } },
    out: { body: { srt_mode: 'listener', local_ip: '10.1.2.3', local_port: 0 } },
    rules: ['4.0.0/srt-listener'],
  },
  {
    name: 'SRT caller: ip/port become the remote address, local is 0.0.0.0:0',
    from: '3.0.0',
    to: '4.0.0',
    call: { method: 'POST', path: '/api/v2/pipelines/p1/outputs/o1/stream', body: { srt_mode: 'caller', ip: '203.0.113.7', port: 7001 } },
    out: { body: { srt_mode: 'caller', local_ip: '0.0.0.0', local_port: 0, remote_ip: '203.0.113.7', remote_port: 7001 } },
    rules: ['4.0.0/srt-caller'],
  },
  {
    name: 'SRT caller on a multiview',
    from: '3.0.0',
    to: '4.0.0',
    call: { method: 'POST', path: '/api/v2/pipelines/p1/multiviews', body: { srt_mode: 'caller', ip: 'mv.example', port: 7002 } },
    out: { body: { srt_mode: 'caller', local_ip: '0.0.0.0', local_port: 0, remote_ip: 'mv.example', remote_port: 7002 } },
    rules: ['4.0.0/srt-caller'],
  },
  {
    name: 'UDP: ip/port become the destination, local is 0.0.0.0:0',
    from: '3.0.0',
    to: '4.0.0',
    call: { method: 'POST', path: '/api/v2/pipelines/p1/outputs/o1/stream', body: { protocol: 'mpegts-udp', ip: '239.1.1.1', port: 5000 } },
    out: { body: { protocol: 'mpegts-udp', local_ip: '0.0.0.0', local_port: 0, remote_ip: '239.1.1.1', remote_port: 5000 } },
    rules: ['4.0.0/udp'],
  },
  {
    name: 'UDP multiview',
    from: '3.0.0',
    to: '4.0.0',
    call: { method: 'POST', path: '/api/v2/pipelines/p1/multiviews', body: { transport: 'UDP', ip: '239.1.1.2', port: 5002 } },
    out: { body: { transport: 'UDP', local_ip: '0.0.0.0', local_port: 0, remote_ip: '239.1.1.2', remote_port: 5002 } },
    rules: ['4.0.0/udp'],
  },
  {
    name: 'output stream -> streams; encoding defaults written out',
    from: '4.0.0',
    to: '5.0.0',
    call: {
      method: 'POST',
      path: '/api/v2/pipelines/p1/outputs/o1/stream',
      body: { srt_mode: 'listener', local_ip: '0.0.0.0', local_port: 9000 },
    },
    out: {
      path: '/api/v2/pipelines/p1/outputs/o1/streams',
      body: { srt_mode: 'listener', local_ip: '0.0.0.0', local_port: 9000, pic_mode: 'pic_mode_ip', speed_quality_balance: 'balanced' },
    },
    rules: ['5.0.0/output-streams-path', '5.0.0/output-streams-post-returns-id', '5.0.0/pic-mode-balance'],
    review: /returns the ID/,
  },
  {
    name: 'multiview keeps a chosen pic_mode',
    from: '4.0.0',
    to: '5.0.0',
    call: { method: 'POST', path: '/api/v2/pipelines/p1/multiviews', body: { pic_mode: 'pic_mode_i' } },
    out: { body: { pic_mode: 'pic_mode_i', speed_quality_balance: 'balanced' } },
    rules: ['5.0.0/pic-mode-balance'],
  },
  {
    name: 'GET output stream -> streams',
    from: '4.0.0',
    to: '5.0.0',
    call: { method: 'GET', path: '/api/v2/pipelines/p1/outputs/o1/stream', reads: ['active_streams'] },
    out: { path: '/api/v2/pipelines/p1/outputs/o1/streams' },
    rules: ['5.0.0/output-streams-path'],
  },
  {
    name: 'split ingest metrics read as both variants',
    from: '5.0.0',
    to: '6.0.0',
    call: { method: 'GET', path: '/api/v2/ingests/i1/sources/s1', reads: ['svc_ingest_source_dropped_frames', 'name'] },
    out: { reads: ['svc_ingest_source_dropped_audio_frames', 'svc_ingest_source_dropped_video_frames', 'name'] },
    rules: ['6.0.0/ingest-metrics-endpoints', '6.0.0/dropped-frames'],
    review: /add both/,
  },
  {
    name: 'ingest expand read of lost frames',
    from: '5.0.0',
    to: '6.0.0',
    call: { method: 'GET', path: '/api/v2/ingests/i1?expand=true', reads: ['sources[0].svc_ingest_source_lost_frames'] },
    out: { reads: ['sources[0].svc_ingest_source_lost_audio_frames', 'sources[0].svc_ingest_source_lost_video_frames'] },
    rules: ['6.0.0/lost-frames'],
    review: /add both/,
  },
  {
    name: 'duplicated frames on /ingest/{uuid}/sources/{source_id}',
    from: '5.0.0',
    to: '6.0.0',
    call: { method: 'GET', path: '/api/v2/ingest/i1/sources/s1', reads: ['svc_ingest_source_duplicated_frames'] },
    out: { reads: ['svc_ingest_source_duplicated_audio_frames', 'svc_ingest_source_duplicated_video_frames'] },
    rules: ['6.0.0/duplicated-frames'],
    review: /add both/,
  },
  {
    name: 'control receiver statistics from the pipeline, status flattened, connected_to renamed',
    from: '6.0.0',
    to: '7.0.0',
    call: { method: 'GET', path: '/api/v2/pipelines/p1/controlreceivers/cr1', reads: ['status.state', 'connected_to[0]'] },
    out: { path: '/api/v3/pipelines/p1?expand=true', reads: ['controlreceiver.state', 'controlreceiver.outgoing_connections[0]'] },
    rules: ['7.0.0/controlreceiver-endpoints-removed', '7.0.0/status-flattened', '7.0.0/controlreceiver-connections'],
    review: /controlreceiver part/,
  },
  {
    name: 'control panel: connected_to -> outgoing_connections, status members one level up',
    from: '6.0.0',
    to: '7.0.0',
    call: { method: 'GET', path: '/api/v2/controlpanels/cp1', reads: ['status.connected', 'connected_to', 'name'] },
    out: { reads: ['connected', 'outgoing_connections', 'name'] },
    rules: ['7.0.0/status-flattened', '7.0.0/outgoing-connections'],
  },
  {
    name: 'outputs in a pipeline response: status flattened, other status fields untouched',
    from: '6.0.0',
    to: '7.0.0',
    call: { method: 'GET', path: '/api/v2/pipelines/p1?expand=true', reads: ['outputs[1].status.bitrate', 'status'] },
    out: { reads: ['outputs[1].bitrate', 'status'] },
    rules: ['7.0.0/status-flattened'],
  },
  {
    name: 'status of an output stream is not an output status',
    from: '6.0.0',
    to: '7.0.0',
    call: { method: 'GET', path: '/api/v2/pipelines/p1/outputs/o1/streams/s1', reads: ['status.state'] },
    out: { reads: ['status.state'] },
    rules: ['7.0.0/api-v3'],
  },
  {
    name: 'output itself: status flattened',
    from: '6.0.0',
    to: '7.0.0',
    call: { method: 'GET', path: '/api/v2/pipelines/p1/outputs/o1', reads: ['status.state'] },
    out: { reads: ['state'] },
    rules: ['7.0.0/status-flattened'],
  },
  {
    name: 'connected_to in a request body',
    from: '6.0.0',
    to: '7.0.0',
    call: { method: 'PUT', path: '/api/v2/controlpanels/cp1', body: { connected_to: ['a'] } },
    out: { body: { outgoing_connections: ['a'] } },
    rules: ['7.0.0/outgoing-connections'],
  },
  {
    name: 'all the way from 2.0 to 7.0',
    from: '2.0.0',
    to: '7.0.0',
    call: { method: 'POST', path: '/api/v1/streams', body: { id: 'cam-1', resolution_x: 1280, resoulution_y: 720 } },
    out: {
      path: '/api/v3/streams',
      body: { source_id: 'cam-1', width: 1280, height: 720, audio_format: 'AAC-LC', audio_mapping: [[0, 1]] },
    },
    rules: ['3.0.0/api-v2', '3.0.0/source-id', '3.0.0/width-height', '4.0.0/audio-format', '4.0.0/audio-mapping', '7.0.0/api-v3'],
  },
]

const refusals: Array<[string, string, string, SavedCall, string, RegExp]> = [
  [
    'SRT without srt_mode',
    '3.0.0',
    '4.0.0',
    { method: 'POST', path: '/api/v2/pipelines/p1/outputs/o1/stream', body: { format: 'mpegts-srt', ip: '1.2.3.4', port: 9 } },
    '4.0.0/local-remote-address',
    /SRT but has no srt_mode/,
  ],
  [
    'unknown SRT mode',
    '3.0.0',
    '4.0.0',
    { method: 'POST', path: '/api/v2/pipelines/p1/multiviews', body: { srt_mode: 'rendezvous', ip: '1.2.3.4', port: 9 } },
    '4.0.0/local-remote-address',
    /"rendezvous" is neither listener nor caller/,
  ],
  [
    'no transport at all',
    '3.0.0',
    '4.0.0',
    { method: 'POST', path: '/api/v2/pipelines/p1/outputs/o1/stream', body: { ip: '1.2.3.4', port: 9 } },
    '4.0.0/local-remote-address',
    /neither srt_mode nor a UDP transport/,
  ],
  [
    'ip next to local_ip',
    '3.0.0',
    '4.0.0',
    { method: 'POST', path: '/api/v2/pipelines/p1/outputs/o1/stream', body: { srt_mode: 'caller', ip: '1.2.3.4', local_ip: '0.0.0.0' } },
    '4.0.0/local-remote-address',
    /both ip\/port and local_ip/,
  ],
  [
    'stream connection missing from the id map',
    '2.0.0',
    '3.0.0',
    { method: 'GET', path: '/api/v1/ingests/i1/streamconnections/c404' },
    '3.0.0/stream-info-paths',
    /connection_id 'c404' has no entry/,
  ],
  [
    'per-control-panel control connection',
    '2.0.0',
    '3.0.0',
    { method: 'POST', path: '/api/v1/controlpanels/cp1/controlconnections', body: { receiver: 'cr1' } },
    '3.0.0/controlconnections-post',
    /rewritten by hand/,
  ],
  [
    'deleting a control connection',
    '2.0.0',
    '3.0.0',
    { method: 'DELETE', path: '/api/v1/controlpanels/cp1/connections/x' },
    '3.0.0/controlreceivers-delete',
    /DELETE \/controlreceivers\/\{uuid\}/,
  ],
  [
    'control receiver outside /pipelines',
    '2.0.0',
    '3.0.0',
    { method: 'GET', path: '/api/v1/controlreceivers/cr1' },
    '3.0.0/under-pipelines',
    /does not name the pipeline/,
  ],
  [
    'thumbnail without source_id',
    '2.0.0',
    '3.0.0',
    { method: 'POST', path: '/api/v1/ingests/i1/thumbnail', body: {} },
    '3.0.0/thumbnail-path',
    /no source_id/,
  ],
  [
    'output layout read',
    '3.0.0',
    '4.0.0',
    { method: 'GET', path: '/api/v2/pipelines/p1/multiviews', reads: ['[0].address'] },
    '4.0.0/output-response-layout',
    /layout of this endpoint changed/,
  ],
  [
    'video_kilobit_rate from the pipeline stream',
    '3.0.0',
    '4.0.0',
    { method: 'GET', path: '/api/v2/pipelines/p1/streams/s1', reads: ['video_kilobit_rate'] },
    '4.0.0/video-kilobit-rate',
    /GET \/ingests\/\{uuid\}\/streams/,
  ],
  [
    'lost_packets from the ingest stream',
    '3.0.0',
    '4.0.0',
    { method: 'GET', path: '/api/v2/ingests/i1/streams/s1', reads: ['lost_packets'] },
    '4.0.0/lost-packets',
    /pipeline stream/,
  ],
  [
    'stopping the single output stream',
    '4.0.0',
    '5.0.0',
    { method: 'DELETE', path: '/api/v2/pipelines/p1/outputs/o1/stream' },
    '5.0.0/output-streams-delete',
    /stream ID/,
  ],
  [
    'reading the single active stream',
    '4.0.0',
    '5.0.0',
    { method: 'GET', path: '/api/v2/pipelines/p1/outputs/o1/stream', reads: ['active_stream.id'] },
    '5.0.0/active-streams',
    /active_streams/,
  ],
  [
    'a split metric under another name',
    '5.0.0',
    '6.0.0',
    { method: 'GET', path: '/api/v2/ingests/i1/sources', reads: ['[0].dropped_frames'] },
    '6.0.0/dropped-frames',
    /does not guess/,
  ],
  [
    'POST /controlconnections in 7.0',
    '6.0.0',
    '7.0.0',
    { method: 'POST', path: '/api/v2/controlconnections', body: { from: 'cp1', to: 'cr1' } },
    '7.0.0/controlconnections-pipeline',
    /pipeline UUID/,
  ],
  [
    'control receiver by UUID in 7.0',
    '6.0.0',
    '7.0.0',
    { method: 'DELETE', path: '/api/v2/controlreceivers/cr1' },
    '7.0.0/controlconnections-pipeline',
    /UUID of control receivers/,
  ],
  [
    'changing a control receiver in 7.0',
    '6.0.0',
    '7.0.0',
    { method: 'PATCH', path: '/api/v2/pipelines/p1/controlreceivers/cr1', body: {} },
    '7.0.0/controlreceiver-endpoints-removed',
    /no replacement for PATCH/,
  ],
  [
    'reading inside listening_interface',
    '6.0.0',
    '7.0.0',
    { method: 'GET', path: '/api/v2/pipelines/p1/controlreceivers/cr1', reads: ['listening_interface.clients'] },
    '7.0.0/controlreceiver-connections',
    /incoming_connections/,
  ],
  [
    'a path with the wrong prefix',
    '3.0.0',
    '4.0.0',
    { method: 'GET', path: '/api/v1/ingests' },
    '3.0.0/api-v2',
    /does not start with \/api\/v2/,
  ],
]

describe('svcops migrate requests', () => {
  it.each(translations.map((t) => [t.name, t] as const))('translates: %s', (_name, t) => {
    const result = migrateRequests([t.call], t.from, t.to, { ids })
    const out = result.calls[0]?.output
    expect(result.calls[0]?.untranslatable).toBeUndefined()
    expect(out).toMatchObject(t.out)
    expect(out?.rules).toEqual(expect.arrayContaining(t.rules))
    if (t.review) expect(out?.review?.join(' ')).toMatch(t.review)
    else expect(out?.review).toBeUndefined()
    // Only catalog changes are ever named.
    for (const rule of out?.rules ?? []) expect(LIVE_CHANGES.map((c) => c.id)).toContain(rule)
  })

  it.each(refusals)('refuses, with the rule and the reason: %s', (_name, from, to, call, rule, reason) => {
    const result = migrateRequests([call], from, to, { ids })
    expect(result.calls[0]?.output).toBeUndefined()
    expect(result.calls[0]?.untranslatable?.rule).toBe(rule)
    expect(result.calls[0]?.untranslatable?.reason).toMatch(reason)
    expect(result.untranslatable).toBe(1)
  })

  it('covers every catalog change that names the request migrator', () => {
    const named = new Set([...translations.flatMap((t) => t.rules), ...refusals.map((r) => r[4])])
    const automatic = LIVE_CHANGES.filter((c) => c.automatic === 'migrate-requests').map((c) => c.id)
    expect(automatic.filter((id) => !named.has(id))).toEqual([])
  })

  it('never changes the input calls', () => {
    const call: SavedCall = { method: 'POST', path: '/api/v1/streams', body: { id: 'x' } }
    const copy = structuredClone(call)
    migrateRequests([call], '2.0.0', '7.0.0')
    expect(call).toEqual(copy)
  })

  it('reads JSON and YAML lists and refuses malformed calls with the field named', () => {
    expect(parseCalls('- method: get\n  path: /api/v1/ingests\n', 'calls.yaml')).toEqual([{ method: 'get', path: '/api/v1/ingests' }])
    expect(parseCalls('{"calls":[{"method":"POST","path":"/api/v1/streams","body":{"id":1}}]}', 'c.json')).toHaveLength(1)
    expect(() => parseCalls('- method: FETCH\n  path: /x\n', 'calls.yaml')).toThrow(
      'calls.yaml: calls[0].method is "FETCH": expected one of GET, POST, PUT, PATCH, DELETE.',
    )
    expect(() => parseCalls('- method: GET\n  path: api/v1\n', 'calls.yaml')).toThrow(
      /calls\[0\]\.path is "api\/v1": expected a path starting with \//,
    )
    expect(() => parseCalls('{}', 'c.json')).toThrow(BadInputError)
    expect(parseIdMap('streams:\n  c1: u1\n', 'ids.yaml')).toEqual({ streams: { c1: 'u1' } })
    expect(() => parseIdMap('streams: [1]\n', 'ids.yaml')).toThrow(/expected \{ streams:/)
  })
})
