/**
 * The request migrator's rules, one function per major release. Each rewrites a WorkingCall by
 * the catalog change it names, or refuses it with the reason when the release notes do not give
 * enough to translate it without guessing.
 */
import { mapReads, renameKeys, type ReadSegment, type WorkingCall } from './calls.ts'
import { expandName } from './live.ts'
import type { Product } from './types.ts'

const SEG = '([^/]+)'
const matchRel = (call: WorkingCall, re: string): RegExpExecArray | null => new RegExp(`^${re}$`).exec(call.rel)
const isGet = (call: WorkingCall): boolean => call.method === 'GET'

/** 2.0 -> 3.0: paths by stream UUID, thumbnails, renames, control connections, /pipelines. */
export function migrateTo3(call: WorkingCall): void {
  const ingestConn = matchRel(call, `/ingests/${SEG}/streamconnections/${SEG}`)
  const pipelineConn = matchRel(call, `/pipelines?/${SEG}/streamconnections/${SEG}`)
  const conn = ingestConn ?? pipelineConn
  if (conn) {
    const [, owner = '', connectionId = ''] = conn
    if (call.method === 'DELETE') {
      call.rel = `/streams/${call.streamUuid(connectionId, '3.0.0/delete-streams')}`
      call.apply('3.0.0/delete-streams')
    } else if (call.method === 'PATCH' && pipelineConn) {
      call.rel = `/streams/${call.streamUuid(connectionId, '3.0.0/alignment-patch')}`
      call.apply('3.0.0/alignment-patch')
    } else if (isGet(call)) {
      const uuid = call.streamUuid(connectionId, '3.0.0/stream-info-paths')
      call.rel = `${ingestConn ? '/ingests' : '/pipelines'}/${owner}/streams/${uuid}`
      call.apply('3.0.0/stream-info-paths')
      if (pipelineConn)
        call.flag(
          '3.0.0/stream-info-paths',
          'the 3.0 notes write the pipeline path as /pipeline/{uuid}/streams/{stream_uuid} and the 4.0 notes as /pipelines/{uuid}/streams/{stream_uuid}; svcops wrote /pipelines/, check it against the controller',
        )
    } else {
      call.refuse('3.0.0/stream-info-paths', `the release notes give no ${call.method} on stream connections after 3.0`)
    }
  }
  if (/^\/(controlpanels|controlreceivers)\/[^/]+\/[^/]*connection/i.test(call.rel)) {
    const rule = call.method === 'DELETE' ? '3.0.0/controlreceivers-delete' : '3.0.0/controlconnections-post'
    call.refuse(
      rule,
      '3.0 replaced the per-control-panel control-connection endpoints with POST /controlconnections and DELETE /controlreceivers/{uuid}, and the release notes do not give the fields of the old calls, so this call must be rewritten by hand',
    )
  }
  if (/^\/(controlreceivers|outputs)(\/|$)/.test(call.rel)) {
    call.refuse(
      '3.0.0/under-pipelines',
      '3.0 moved control receivers and outputs under /pipelines/{uuid}, and this call does not name the pipeline that owns them',
    )
  }
  const thumb = matchRel(call, `/ingests/${SEG}/thumbnail`)
  if (thumb && call.method === 'POST') {
    const body = call.objectBody('3.0.0/thumbnail-path') ?? {}
    const source = body.source_id
    if (typeof source !== 'string' && typeof source !== 'number')
      call.refuse('3.0.0/thumbnail-path', 'the thumbnail body has no source_id to move into the path')
    delete body.source_id
    call.rel = `/ingests/${thumb[1] ?? ''}/sources/${encodeURIComponent(String(source))}/thumbnail`
    call.apply('3.0.0/thumbnail-path')
    if (body.encoder === undefined) {
      body.encoder = 'auto'
      call.apply('3.0.0/thumbnail-encoder')
    }
    call.body = body
  }
  if (call.rel === '/streams' && call.method === 'POST') {
    const body = call.objectBody('3.0.0/source-id')
    if (body && Object.hasOwn(body, 'id')) {
      // Only the top-level source id is renamed; nested objects keep their own ids.
      if (Object.hasOwn(body, 'source_id')) call.refuse('3.0.0/source-id', "the body has both 'id' and 'source_id'")
      call.body = Object.fromEntries(Object.entries(body).map(([k, v]) => [k === 'id' ? 'source_id' : k, v]))
      call.apply('3.0.0/source-id')
    }
  }
  if (
    renameKeys(call.body, 'resolution_x', 'width', call, '3.0.0/width-height') +
      renameKeys(call.body, 'resoulution_y', 'height', call, '3.0.0/width-height') >
    0
  ) {
    call.apply('3.0.0/width-height')
  }
  const ingestRead = isGet(call) && /^\/ingests\/[^/]+\/(sources|streams)(\/|$)/.test(call.rel)
  mapReads(call, (segs) => {
    let out = segs.map((s) => {
      if (s.name === 'resolution_x' || s.name === 'resoulution_y') {
        call.apply('3.0.0/width-height')
        return { ...s, name: s.name === 'resolution_x' ? 'width' : 'height' }
      }
      return s
    })
    const last = out.at(-1)
    // Only the id of a source or stream itself: `id`, `[0].id`, `sources[2].id`, not `pipeline.id`.
    const owner = out.length > 1 ? out[out.length - 2]?.name : ''
    if (ingestRead && last?.name === 'id' && (owner === '' || owner === 'sources' || owner === 'streams' || owner === 'source')) {
      out = [...out.slice(0, -1), { ...last, name: 'source_id' }]
      call.apply('3.0.0/source-id')
    }
    return out
  })
}

const TRANSPORT_FIELDS = ['protocol', 'transport', 'type', 'format', 'mode', 'output_type', 'stream_type', 'container']

/** The 4.0 address rules: SRT listener, SRT caller, UDP; anything else is refused. */
function splitAddress(call: WorkingCall, body: Record<string, unknown>): void {
  const rule = '4.0.0/local-remote-address'
  if (!Object.hasOwn(body, 'ip') && !Object.hasOwn(body, 'port')) return
  const present = ['local_ip', 'local_port', 'remote_ip', 'remote_port'].filter((k) => Object.hasOwn(body, k))
  if (present.length) call.refuse(rule, `the body has both ip/port and ${present.join(', ')}`)
  const { ip, port } = body
  const mode = body.srt_mode
  const hints = TRANSPORT_FIELDS.map((k) => body[k]).filter((v): v is string => typeof v === 'string')
  let address: Record<string, unknown>
  let variant: string
  if (mode === 'listener') {
    variant = '4.0.0/srt-listener'
    address = { ...(ip !== undefined ? { local_ip: ip } : {}), ...(port !== undefined ? { local_port: port } : {}) }
  } else if (mode === 'caller') {
    variant = '4.0.0/srt-caller'
    address = {
      local_ip: '0.0.0.0',
      local_port: 0,
      ...(ip !== undefined ? { remote_ip: ip } : {}),
      ...(port !== undefined ? { remote_port: port } : {}),
    }
  } else if (mode !== undefined) {
    call.refuse(rule, `srt_mode ${JSON.stringify(mode)} is neither listener nor caller, the two SRT modes the 4.0 notes define`)
  } else if (hints.some((h) => /udp/i.test(h)) && !hints.some((h) => /srt/i.test(h))) {
    variant = '4.0.0/udp'
    address = {
      local_ip: '0.0.0.0',
      local_port: 0,
      ...(ip !== undefined ? { remote_ip: ip } : {}),
      ...(port !== undefined ? { remote_port: port } : {}),
    }
  } else if (hints.some((h) => /srt/i.test(h))) {
    call.refuse(
      rule,
      'the output is SRT but has no srt_mode, so it cannot be told whether ip/port is the listen address (listener) or the address to connect to (caller)',
    )
  } else {
    call.refuse(
      rule,
      `the body says neither srt_mode nor a UDP transport (fields ${TRANSPORT_FIELDS.join(', ')}), so it cannot be told which of the SRT listener, SRT caller or UDP rules applies`,
    )
  }
  // Put the new fields where ip/port were, so the diff reads naturally.
  const entries: Array<[string, unknown]> = []
  for (const [k, v] of Object.entries(body)) {
    if (k === 'ip' || k === 'port') {
      if (k === (Object.hasOwn(body, 'ip') ? 'ip' : 'port')) entries.push(...Object.entries(address))
      continue
    }
    entries.push([k, v])
  }
  for (const k of Object.keys(body)) delete body[k]
  Object.assign(body, Object.fromEntries(entries))
  call.apply(rule)
  call.apply(variant)
}

/** 3.0 -> 4.0: audio parameters of POST /streams, output addresses, removed fields. */
export function migrateTo4(call: WorkingCall): void {
  if (call.rel === '/streams' && call.method === 'POST') {
    const body = call.objectBody('4.0.0/audio-format') ?? {}
    if (body.audio_format === undefined) {
      body.audio_format = 'AAC-LC'
      call.apply('4.0.0/audio-format')
    }
    if (body.audio_mapping === undefined) {
      body.audio_mapping = [[0, 1]]
      call.apply('4.0.0/audio-mapping')
    }
    call.body = body
  }
  const outputStream = matchRel(call, `/pipelines/${SEG}/outputs/${SEG}/stream`)
  const multiviews = matchRel(call, `/pipelines/${SEG}/multiviews`)
  if ((outputStream || multiviews) && call.method === 'POST') {
    const body = call.objectBody('4.0.0/local-remote-address')
    if (body) splitAddress(call, body)
  }
  if ((outputStream || multiviews) && isGet(call)) {
    if (call.reads.length)
      call.refuse(
        '4.0.0/output-response-layout',
        'the response layout of this endpoint changed in 4.0 and the release notes do not give the new layout, so the fields read cannot be mapped',
      )
    call.flag('4.0.0/output-response-layout', 'the response layout changed in 4.0; check what the client reads')
  }
  if (
    isGet(call) &&
    matchRel(call, `/pipelines/${SEG}/streams/${SEG}`) &&
    call.reads.some((r) => r.split('.').at(-1) === 'video_kilobit_rate')
  ) {
    call.refuse(
      '4.0.0/video-kilobit-rate',
      'video_kilobit_rate is removed from the pipeline stream in 4.0; read it from GET /ingests/{uuid}/streams/{stream_uuid}, whose ingest UUID this call does not name',
    )
  }
  if (isGet(call) && matchRel(call, `/ingests/${SEG}/streams/${SEG}`) && call.reads.some((r) => r.split('.').at(-1) === 'lost_packets')) {
    call.refuse(
      '4.0.0/lost-packets',
      'lost_packets is removed from the ingest stream in 4.0; read lost_packets and dropped_packets of the pipeline stream, whose pipeline this call does not name',
    )
  }
}

/** 4.0 -> 5.0: output streams become a collection; encoding quality defaults written out. */
export function migrateTo5(call: WorkingCall): void {
  const outputStream = matchRel(call, `/pipelines/${SEG}/outputs/${SEG}/stream`)
  if (outputStream) {
    if (call.method === 'DELETE') {
      call.refuse(
        '5.0.0/output-streams-delete',
        '5.0 stops one stream with DELETE .../outputs/{output_uuid}/streams/{stream_id}, and the stream ID (returned by POST since 5.0) is not in this call',
      )
    }
    call.rel = `${call.rel}s`
    call.apply('5.0.0/output-streams-path')
    if (call.method === 'POST')
      call.flag('5.0.0/output-streams-post-returns-id', 'POST now returns the ID of the new stream; keep it to stop the stream later')
    if (isGet(call)) {
      mapReads(call, (segs, read) => {
        if (segs[0]?.name === 'active_stream')
          call.refuse(
            '5.0.0/active-streams',
            `the response lists active_streams instead of one active stream, so '${read}' must choose a stream by hand`,
          )
        return segs
      })
    }
  }
  const multiviews = matchRel(call, `/pipelines/${SEG}/multiviews`)
  if ((outputStream || multiviews) && call.method === 'POST') {
    const body = call.objectBody('5.0.0/pic-mode-balance') ?? {}
    if (body.pic_mode === undefined || body.speed_quality_balance === undefined) {
      body.pic_mode ??= 'pic_mode_ip'
      body.speed_quality_balance ??= 'balanced'
      call.apply('5.0.0/pic-mode-balance')
    }
    call.body = body
  }
}

const SPLIT_METRICS = ['dropped', 'duplicated', 'lost'] as const

/** 5.0 -> 6.0: ingest source metrics split into audio and video variants. */
export function migrateTo6(call: WorkingCall, product: Product): void {
  const ingestMetrics = isGet(call) && (/^\/ingests\/[^/]+$/.test(call.rel) || /^\/ingests?\/[^/]+\/sources(\/[^/]+)?$/.test(call.rel))
  if (!ingestMetrics) return
  mapReads(call, (segs, read) => {
    const last = segs.at(-1)
    if (!last) return segs
    for (const kind of SPLIT_METRICS) {
      const rule = `6.0.0/${kind}-frames`
      const full = expandName(`{prefix}_ingest_source_${kind}_frames`, product)
      if (last.name === full) {
        call.apply('6.0.0/ingest-metrics-endpoints')
        call.flag(rule, `'${read}' is split into audio and video variants; the client must add both to keep the old total`)
        return ['audio', 'video'].map((media) => [
          ...segs.slice(0, -1),
          { ...last, name: expandName(`{prefix}_ingest_source_${kind}_${media}_frames`, product) },
        ])
      }
      if (last.name.endsWith(`${kind}_frames`)) {
        call.refuse(
          rule,
          `'${read}' looks like the ${kind} frames metric that 6.0 splits into audio and video variants, but its name is not ${full}, so svcops does not guess the new names`,
        )
      }
    }
    return segs
  })
}

const FLATTENED_OWNERS = new Set(['controlreceiver', 'controlreceivers', 'controlpanel', 'controlpanels', 'output', 'outputs'])

/** 6.0 -> 7.0: control receivers folded into the pipeline, renames, status objects flattened. */
export function migrateTo7(call: WorkingCall): void {
  const receiver = matchRel(call, `/pipelines/${SEG}/controlreceivers(/.*)?`)
  let readsUnderReceiver = false
  if (receiver) {
    if (!isGet(call))
      call.refuse(
        '7.0.0/controlreceiver-endpoints-removed',
        `7.0 removes every endpoint under /pipelines/{uuid}/controlreceivers and gives no replacement for ${call.method}`,
      )
    call.rel = `/pipelines/${receiver[1] ?? ''}`
    call.query = 'expand=true'
    readsUnderReceiver = true
    call.flag(
      '7.0.0/controlreceiver-endpoints-removed',
      'control receiver statistics now come from the controlreceiver part of GET /pipelines/{uuid}?expand=true; check the fields read',
    )
    mapReads(call, (segs) => [{ name: 'controlreceiver', index: '' }, ...segs])
  }
  if (/^\/controlreceivers\/[^/]+$/.test(call.rel)) {
    call.refuse(
      '7.0.0/controlconnections-pipeline',
      '7.0 removes the UUID of control receivers, so a call addressed by it has no 7.0 form in the release notes',
    )
  }
  if (call.rel === '/controlconnections' && call.method === 'POST') {
    call.refuse(
      '7.0.0/controlconnections-pipeline',
      '7.0 makes POST /controlconnections take the pipeline UUID instead of the control receiver UUID, and the release notes do not name the body fields, so the body must be rewritten by hand',
    )
  }
  if (renameKeys(call.body, 'connected_to', 'outgoing_connections', call, '7.0.0/outgoing-connections') > 0)
    call.apply('7.0.0/outgoing-connections')
  // Responses of a control panel, a control receiver or an output themselves (not of sub-resources such as an output's streams).
  const flattenWholeResponse =
    isGet(call) && /^\/(controlpanels|controlreceivers)(\/[^/]+)?$|^\/pipelines\/[^/]+\/outputs(\/[^/]+)?$/.test(call.rel)
  mapReads(call, (segs, read) => {
    const out: ReadSegment[] = []
    segs.forEach((s, i) => {
      const owner = i === 0 ? undefined : segs[i - 1]?.name
      const inReceiver = segs[0]?.name === 'controlreceiver'
      if (
        s.name === 'status' &&
        s.index === '' &&
        i < segs.length - 1 &&
        ((i === 0 && flattenWholeResponse) || (owner !== undefined && FLATTENED_OWNERS.has(owner)))
      ) {
        call.apply('7.0.0/status-flattened')
        return
      }
      if (s.name === 'connected_to') {
        call.apply(inReceiver || readsUnderReceiver ? '7.0.0/controlreceiver-connections' : '7.0.0/outgoing-connections')
        out.push({ ...s, name: 'outgoing_connections' })
        return
      }
      if (s.name === 'listening_interface' && (inReceiver || readsUnderReceiver) && i < segs.length - 1) {
        call.refuse(
          '7.0.0/controlreceiver-connections',
          `'${read}' reads inside listening_interface, whose list of incoming connections moves out as incoming_connections in 7.0, and the notes do not name the old list`,
        )
      }
      out.push(s)
    })
    return out
  })
}
