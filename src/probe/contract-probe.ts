/**
 * `svcops probe --env E`: a read-only first contact with an environment. Every interface of
 * docs/contract.md that the stack makes svcops use is tried once — the manager's auth API, each
 * recording host (its transport, `GET /`, `GET /api/v1/content`, its configuration file), the
 * database, each live host and every check of each live instance on its running release — and
 * each answer becomes a row: it holds, it does not (with the evidence and the stack key to set),
 * or it was not tried (and why). Nothing is written, no lock is taken, no service is touched; the
 * manager's session it opens is closed again.
 */
import { checkAuth } from '../clients/manager-check.ts'
import type { Environment, LiveConfig, RecordingHostConfig } from '../config/schema.ts'
import { errorMessage } from '../core/errors.ts'
import { runCommand, type Transport } from '../core/runner.ts'
import { databaseTarget, withDatabase } from '../drivers/postgres.ts'
import { hostPath, transportFor } from '../drivers/transports.ts'
import { checkPlanOf, hostCheckReader } from '../live/hosts/live-host-checks.ts'
import { openHost, unitUrlOf } from '../live/hosts/live-hosts-platform.ts'
import { envFileOf, productOf } from '../live/layout.ts'
import { declaredFor, runDeclaredCheck, runUnitChecks, seedEndpointOf } from '../live/live-checks.ts'
import { liveUnits, placedHosts, type LiveUnit } from '../live/live-placement.ts'
import { settingsFor } from '../recording/recording-settings.ts'
import { row, type ProbeReport, type ProbeRow } from './probe-row.ts'
import { probeRecordingService } from './probe-recording.ts'
import { probeLiveCluster, probeRecordingCluster } from './cluster-probe.ts'

export type { ProbeReport, ProbeRow } from './probe-row.ts'

/** The manager: login, token with the recording scopes, logout. */
async function probeManager(env: Environment): Promise<ProbeRow[]> {
  if (!env.manager) return []
  const where = env.manager.url
  try {
    const report = await checkAuth(env)
    const missing = report.requested.filter((s) => !report.granted.includes(s))
    return [
      row({
        part: 'manager',
        where,
        interface: 'POST /api/v1/auth/login, /token, /logout',
        source: 'seed',
        holds: true,
        evidence: `logged in as ${report.email}, token for ${report.expiresIn} s, logged out`,
      }),
      row({
        part: 'manager',
        where,
        interface: `scopes ${report.requested.join(' ')}`,
        source: 'assumed',
        holds: missing.length === 0,
        evidence: missing.length ? `not granted: ${missing.join(' ')}` : 'granted',
        key: 'recording.scopes',
      }),
    ]
  } catch (error) {
    return [
      row({
        part: 'manager',
        where,
        interface: 'POST /api/v1/auth/login, /token, /logout',
        source: 'seed',
        holds: false,
        evidence: errorMessage(error),
        key: 'manager.url, manager.email, manager.password',
      }),
    ]
  }
}

/** A command on a host, its exit and first line of output; a transport that fails is exit -1. */
async function tryCommand(t: Transport, argv: string[]): Promise<{ code: number; output: string }> {
  try {
    const r = await runCommand(t, argv, { check: false })
    return { code: r.code ?? -1, output: (r.stderr.trim() || r.stdout.trim()).split('\n')[0] ?? '' }
  } catch (error) {
    return { code: -1, output: errorMessage(error) }
  }
}

/** One recording host: reached, `GET /`, the content list, the configuration file. */
async function probeRecordingHost(env: Environment, host: RecordingHostConfig, index: number, t: Transport): Promise<ProbeRow[]> {
  const rec = env.recording
  if (!rec) return []
  const where = host.name
  const rows: ProbeRow[] = []
  const reached = await tryCommand(t, ['true'])
  rows.push(
    row({
      part: 'recording',
      where,
      interface: host.ssh ? `ssh ${host.ssh.user}@${host.ssh.host}:${host.ssh.port}` : 'this machine',
      source: 'assumed',
      holds: reached.code === 0,
      evidence: reached.code === 0 ? 'reached' : reached.output,
      key: `recording.hosts[${index}].ssh`,
    }),
  )
  rows.push(
    ...(await probeRecordingService(
      env,
      where,
      host.url,
      `recording.hosts[${index}].url`,
      reached.code === 0 ? { transport: t, root: host.root ?? '' } : undefined,
    )),
  )
  const { configPath } = settingsFor(env, rec)
  if (reached.code === 0) {
    const config = await tryCommand(t, ['test', '-r', hostPath(host, configPath)])
    rows.push(
      row({
        part: 'recording',
        where,
        interface: configPath,
        source: 'assumed',
        holds: config.code === 0,
        evidence: config.code === 0 ? 'readable' : 'not readable or absent',
        key: 'recording.configPath',
      }),
    )
  }
  return rows
}

/** The recording service: each host, or its Deployment and Service on Kubernetes; then the database. */
async function probeRecording(env: Environment): Promise<ProbeRow[]> {
  const rec = env.recording
  if (!rec) return []
  const rows: ProbeRow[] = []
  if (rec.platform === 'kubernetes') rows.push(...(await probeRecordingCluster(env)))
  for (const [i, host] of rec.hosts.entries()) {
    const t = transportFor(host)
    try {
      rows.push(...(await probeRecordingHost(env, host, i, t)))
    } finally {
      await t.close()
    }
  }
  try {
    const version = await withDatabase(
      databaseTarget(rec.database),
      async (c) => (await c.query<{ v: string }>('select version() as v')).rows[0]?.v ?? '',
    )
    rows.push(
      row({
        part: 'database',
        where: `${rec.database.host}:${rec.database.port}/${rec.database.name}`,
        interface: 'PostgreSQL',
        source: 'assumed',
        holds: true,
        evidence: version.split(',')[0] ?? version,
      }),
    )
  } catch (error) {
    rows.push(
      row({
        part: 'database',
        where: `${rec.database.host}:${rec.database.port}/${rec.database.name}`,
        interface: 'PostgreSQL',
        source: 'assumed',
        holds: false,
        evidence: errorMessage(error),
        key: 'recording.database',
      }),
    )
  }
  return rows
}

/** The live section on hosts, whichever shape the loader gives it. */
function liveOnHosts(env: Environment): LiveConfig | undefined {
  const live = env.live as unknown as LiveConfig | undefined
  const platform: unknown = (live as { platform?: unknown } | undefined)?.platform
  return live && platform !== 'kubernetes' ? live : undefined
}

/** The live system on hosts: each host reached, each unit's environment file, the seed's and the declared checks on the running release. */
async function probeLive(env: Environment): Promise<ProbeRow[]> {
  if (env.live?.platform === 'kubernetes') return probeLiveCluster(env, env.live)
  const live = liveOnHosts(env)
  if (!live) return []
  const product = productOf(live)
  const hosts = new Map(placedHosts(live).map((p) => [p.config.name, openHost(live, p.config)]))
  const hostOf = (u: LiveUnit) => hosts.get(u.host) ?? [...hosts.values()][0]!
  const rows: ProbeRow[] = []
  try {
    const reachedHosts = new Set<string>()
    for (const p of placedHosts(live)) {
      const name = p.config.name
      const h = hosts.get(name)!
      const r = await tryCommand(h.transport, ['true'])
      if (r.code === 0) reachedHosts.add(name)
      rows.push(
        row({
          part: 'live',
          where: name,
          interface: p.config.ssh ? `ssh ${p.config.ssh.user}@${p.config.ssh.host}:${p.config.ssh.port}` : 'this machine',
          source: 'assumed',
          holds: r.code === 0,
          evidence: r.code === 0 ? 'reached' : r.output,
          key: 'live.host.ssh or live.hosts[].ssh',
        }),
      )
    }
    const ctx = { live, product, unitUrl: unitUrlOf(live), hostOf }
    const reader = hostCheckReader(ctx)
    const plan = checkPlanOf(ctx)
    const version = live.version
    for (const unit of liveUnits(live)) {
      if (reachedHosts.has(unit.host)) {
        const file = envFileOf(live, unit.component)
        const r = await tryCommand(hostOf(unit).transport, ['test', '-e', hostPath(hostOf(unit).config, file)])
        rows.push(
          row({
            part: 'live',
            where: unit.name,
            interface: file,
            source: 'assumed',
            holds: r.code === 0,
            evidence: r.code === 0 ? 'present' : 'absent',
            key: `live.envFiles.${unit.component}`,
          }),
        )
      }
      const endpoint = seedEndpointOf(unit.component)
      if (endpoint && !plan.uuids[unit.name])
        rows.push(
          row({
            part: 'live',
            where: unit.name,
            interface: `GET <prefix>${endpoint.path.replace('{api}', '')}`,
            source: 'seed',
            holds: undefined,
            evidence: `not tried: no UUID for ${unit.name}`,
            key: `live.uuids.${unit.name}`,
          }),
        )
      else if (endpoint) {
        const [seed] = await runUnitChecks(reader, { ...plan, checks: [] }, unit, version)
        if (seed)
          rows.push(
            row({
              part: 'live',
              where: unit.name,
              interface: seed.check.replace(/ answers \(seed\)$/, ''),
              source: 'seed',
              holds: seed.ok,
              evidence: seed.detail ?? 'answers',
              key: `live.uuids.${unit.name}`,
            }),
          )
      }
      const declared = declaredFor(plan, unit.component)
      if (!endpoint && !declared.length)
        rows.push(
          row({
            part: 'live',
            where: unit.name,
            interface: 'a check of the controller itself',
            source: 'assumed',
            holds: undefined,
            evidence: 'none: the seed names no endpoint of the controller alone, and the stack declares none',
            key: 'live.checks',
          }),
        )
      for (const c of declared) {
        const r = await runDeclaredCheck(reader, plan, c, unit, version)
        rows.push(
          row({
            part: 'live',
            where: unit.name,
            interface: c.name,
            source: 'assumed',
            holds: r.ok,
            evidence: r.detail ?? 'passes',
            key: `live.checks[${plan.checks.indexOf(c)}] (${c.name})`,
          }),
        )
      }
    }
  } finally {
    for (const h of hosts.values()) await h.transport.close()
  }
  return rows
}

/** Tries every interface the stack makes svcops use; changes nothing. */
export async function probeEnvironment(env: Environment): Promise<ProbeReport> {
  const rows = [...(await probeManager(env)), ...(await probeRecording(env)), ...(await probeLive(env))]
  return { environment: env.name, rows, ok: rows.every((r) => r.holds !== false) }
}

/** The report as lines: one per interface, then what to set. */
export function formatProbe(report: ProbeReport): string {
  const mark = (r: ProbeRow): string => (r.holds === true ? 'holds' : r.holds === false ? 'FAILS' : 'not tried')
  const lines = report.rows.map(
    (r) =>
      `${mark(r).padEnd(9)} ${r.part.padEnd(9)} ${r.where}: ${r.interface} (${r.source}) — ${r.evidence}${r.holds === false && r.key ? `; set ${r.key}` : ''}`,
  )
  const failed = report.rows.filter((r) => r.holds === false)
  lines.push(
    failed.length
      ? `${failed.length} interface(s) do not hold in ${report.environment}: an upgrade would fail where it uses them (docs/contract.md).`
      : `Every interface tried in ${report.environment} holds.`,
  )
  return lines.join('\n')
}
