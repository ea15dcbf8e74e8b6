#!/usr/bin/env node
/**
 * Playbook: the seed's post-upgrade check alone, on every host of an environment:
 *
 *   GET /                      health
 *   GET /api/v1/content?limit  the content lists
 *   POST /api/v1/content       a test recording (channel svcops-verify, marked with a check id), seen in the list
 *   status + logs              the service runs; no error lines in its last log lines of the past 10 minutes
 *   fingerprint                the database schema fingerprint, recorded for comparison
 *
 *   node playbooks/verify.ts --env lab
 */
import { requireSection } from '../src/config/load.ts'
import type { Environment } from '../src/config/schema.ts'
import { transportFor } from '../src/drivers/transports.ts'
import { findLogErrors, linesSince, readServiceLogs, readServiceStatus, serviceDriver } from '../src/drivers/services.ts'
import { packageDriver, readInstalledVersion } from '../src/drivers/packages.ts'
import { settingsFor } from '../src/upgrade/context.ts'
import { openUpgradeDeps } from '../src/upgrade/wiring.ts'
import { verifyHost, type HostVerification } from '../src/upgrade/verify-host.ts'
import { runAsCommand } from '../src/runs/script.ts'

export interface ServiceVerification {
  ok: boolean
  environment: string
  fingerprint?: string
  hosts: Array<HostVerification & { version?: string; status: string; lastLines: string[] }>
}

/** Verifies every host; never throws for a failed check (see `ok`). */
export async function verifyRecordingService(env: Environment, options: { testRecording?: boolean } = {}): Promise<ServiceVerification> {
  const rec = requireSection(env, 'recording')
  const settings = settingsFor(env, rec)
  const deps = await openUpgradeDeps(env)
  const svc = serviceDriver(rec.serviceDriver)
  const checkId = `verify-${new Date().toISOString()}`
  try {
    const hosts = await Promise.all(
      rec.hosts.map(async (h) => {
        const t = transportFor(h)
        try {
          const v = await verifyHost(deps.content, h.url, {
            host: h.name,
            limit: settings.contentLimit,
            ...(options.testRecording === false ? {} : { runId: checkId }),
          })
          const status = await readServiceStatus(svc, t, h, settings.service)
          const lines = await readServiceLogs(svc, t, h, settings.service, settings.logLines, settings.logPath)
          const errors = findLogErrors(linesSince(lines, new Date(Date.now() - 600_000).toISOString()), settings.errorPatterns)
          v.checks.push(
            { check: 'service status', ok: status.running, detail: status.status },
            {
              check: 'no error lines in the last 10 minutes of the log',
              ok: errors.length === 0,
              ...(errors.length ? { detail: errors.at(-1) } : {}),
            },
          )
          v.ok = v.checks.every((c) => c.ok)
          const version = await readInstalledVersion(packageDriver(rec.packageDriver), t, h, rec.package)
          return { ...v, ...(version ? { version } : {}), status: status.status, lastLines: lines.slice(-10) }
        } finally {
          await t.close()
        }
      }),
    )
    const fingerprint = await deps.database.fingerprint()
    return { ok: hosts.every((h) => h.ok), environment: env.name, fingerprint, hosts }
  } finally {
    await deps.close()
  }
}

/** The verification as text: one block per host, each check on a line. */
export function renderVerification(v: ServiceVerification): string {
  const lines = [
    `Recording service of '${v.environment}': ${v.ok ? 'every check passed' : 'CHECKS FAILED'}; schema fingerprint ${v.fingerprint?.slice(0, 16) ?? '?'}`,
  ]
  for (const h of v.hosts) {
    lines.push(`[${h.host}] ${h.version ?? 'version unknown'}: ${h.ok ? 'ok' : 'FAILED'}`)
    for (const c of h.checks) lines.push(`    ${c.ok ? 'ok  ' : 'FAIL'} ${c.check}${c.detail ? `: ${c.detail}` : ''}`)
  }
  return lines.join('\n')
}

if (import.meta.main) await runAsCommand(['verify', 'recording'])
