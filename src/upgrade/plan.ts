/**
 * `--dry-run`: every step of an upgrade, per host, with the exact commands it would run — built
 * from the same drivers the run uses. Only reads: the installed versions (dpkg-query / rpm), the
 * package files, and who holds the lock. Nothing is locked, staged, stopped or written.
 */
import { requireSection } from '../config/load.ts'
import type { Environment } from '../config/schema.ts'
import { events } from '../core/events.ts'
import { parseMaxFail, planBatches } from '../runs/rollout.ts'
import { transportFor } from '../drivers/transports.ts'
import { readEnvironmentLock } from '../runs/lock.ts'
import { findDebFile, packageDriver, readInstalledVersion, type PlannedCommand } from '../drivers/packages.ts'
import { shellJoin } from '../core/runner.ts'
import { serviceDriver } from '../drivers/services.ts'
import { selectHosts } from './preflight.ts'
import { settingsFor } from '../runs/steps.ts'

/** One planned step: its name, host, and the commands or calls it makes. */
export interface PlannedStep {
  step: string
  host?: string
  actions: string[]
}

export interface UpgradePlan {
  environment: string
  target: string
  currentVersions: Record<string, string | null>
  lock: string
  batches: string[][]
  /** The maintenance window and what it means for the rollout. */
  window: string
  steps: PlannedStep[]
}

/** A planned command as a person would type it (environment first). */
export function showCommand(c: PlannedCommand): string {
  return `${
    c.env
      ? `${Object.entries(c.env)
          .map(([k, v]) => `${k}=${v}`)
          .join(' ')} `
      : ''
  }${shellJoin(c.argv)}${c.input ? ` <<< ${c.input.shown}` : ''}`
}

/** The installed version of the recording package on every host (null where it is not installed). */
export async function readInstalledVersions(env: Environment): Promise<Record<string, string | null>> {
  const rec = requireSection(env, 'recording')
  const pkg = packageDriver(rec.packageDriver)
  const current: Record<string, string | null> = {}
  await Promise.all(
    rec.hosts.map(async (h) => {
      const t = transportFor(h)
      try {
        current[h.name] = (await readInstalledVersion(pkg, t, h, rec.package)) ?? null
      } finally {
        await t.close()
      }
    }),
  )
  return current
}

/** Builds the plan of `svcops upgrade recording --to target` without changing anything. */
export async function planUpgrade(
  env: Environment,
  options: { to: string; hosts?: string[]; batch?: number; maxFail?: string; autoRollback?: boolean; windowMs?: number },
): Promise<UpgradePlan> {
  const rec = requireSection(env, 'recording')
  const settings = settingsFor(env, rec)
  const pkg = packageDriver(rec.packageDriver)
  const svc = serviceDriver(rec.serviceDriver)
  const hosts = selectHosts(rec.hosts, options.hosts, env.file)
  const batches = planBatches(hosts, options.batch ?? 1)
  const maxFail = parseMaxFail(options.maxFail ?? '0', hosts.length)
  const current = await readInstalledVersions(env)
  const holder = await readEnvironmentLock(rec.database, env.name).catch((error: unknown) => {
    events.warn(`The lock could not be read: ${(error as Error).message}`)
    return undefined
  })
  const file = (v: string) => (rec.packageDriver === 'dpkg' ? findDebFile(rec.packageDir, rec.package, v) : undefined)
  const steps: PlannedStep[] = []
  steps.push({
    step: 'preflight',
    actions: [
      `take the run lock of environment '${env.name}' in ${rec.database.host}:${rec.database.port}/${rec.database.name} (advisory lock + row in svcops.run_lock) and the host lock ${settings.hostLockPath} on ${rec.hosts.map((h) => h.name).join(', ')}`,
      `log in to the manager and check the scopes ${rec.scopes.read} ${rec.scopes.write}`,
      `check the database role may change the schema (CREATE on database and schema public); check the backup store has room for the database`,
      `read the installed version on every host: ${showCommand(pkg.queryVersionCommand(hosts[0] ?? rec.hosts[0]!, rec.package))}`,
    ],
  })
  for (const h of hosts) {
    const versions = [...new Set([options.to, current[h.name]].filter((v): v is string => !!v))]
    steps.push({
      step: 'stage',
      host: h.name,
      actions: [...new Set(versions.flatMap((v) => pkg.stageCommands(h, rec.package, v, file(v)).map(showCommand)))],
    })
  }
  steps.push({
    step: 'snapshot',
    actions: [
      `GET ${hosts[0]?.url ?? '?'}/api/v1/content?limit=${settings.contentLimit} (every recording's id)`,
      'count the rows of every table of the database',
    ],
  })
  steps.push({
    step: 'backup',
    actions: [
      'pg_dump --format=custom of the database, encrypted (OpenPGP) into the backup store, manifest with schema fingerprint and row counts',
      'verify the backup: checksum, decrypt, test restore into a scratch database, compare fingerprint and row counts',
    ],
  })
  for (const [i, batch] of batches.entries()) {
    for (const h of batch) {
      const label = i === 0 ? 'canary' : `batch ${i}`
      const f = file(options.to)
      steps.push({
        step: `upgrade (${label})`,
        host: h.name,
        actions: [
          `stop: ${showCommand(svc.stopCommand(h, settings.service))}`,
          `install ${options.to} over ${current[h.name] ?? 'nothing'}: ${pkg.installCommands(h, rec.package, options.to, f).map(showCommand).join(' && ')}`,
          `review-config: look for ${pkg.newConfigSuffixes.map((s) => settings.configPath + s).join(', ')}; diff -u against ${settings.configPath}; check its JSON syntax; warn on options the new default no longer has`,
          `start: ${showCommand(svc.startCommand(h, settings.service))}${i === 0 ? ' (this host runs the migrations on the shared database)' : ''}`,
          `wait-healthy: GET ${h.url}/ until it answers, at most ${Math.round(settings.healthTimeoutMs / 1000)} s`,
          `check-logs: ${showCommand(svc.statusCommand(h, settings.service))}; ${showCommand(svc.logsCommand(h, settings.service, settings.logLines, settings.logPath))}; fail on ${settings.errorPatterns.join(' | ')}`,
          `verify-host: GET ${h.url}/; GET ${h.url}/api/v1/content?limit=${settings.contentLimit}; every snapshot recording present; POST ${h.url}/api/v1/content (test recording marked with the run id) and see it listed`,
        ],
      })
    }
  }
  steps.push({ step: 'verify', actions: ['record the schema fingerprint after the upgrade; check every host runs the target version'] })
  steps.push({
    step: 'on failure after the first stop',
    actions: [
      options.autoRollback === false
        ? 'leave the hosts as they are (--no-auto-rollback); report the cause'
        : `roll back: stop; reinstall the previous version (${Object.entries(current)
            .map(([h, v]) => `${h} ${v ?? '?'}`)
            .join(
              ', ',
            )}); restore the backup only if the schema fingerprint changed or recordings went missing — after exporting every recording written since the backup, re-created after the restore; start; verify`,
      `a failure on the canary always stops the rollout; later batches tolerate ${maxFail} failed host(s) (--max-fail)`,
    ],
  })
  return {
    environment: env.name,
    target: options.to,
    currentVersions: current,
    lock: holder
      ? `held by run ${holder.runId} (${holder.holder}, pid ${holder.pid}) since ${holder.since}${holder.alive ? '' : ' — that holder died'}`
      : 'free',
    batches: batches.map((b) => b.map((h) => h.name)),
    window: options.windowMs
      ? `${formatWindow(options.windowMs)} from the start: a batch starts only if, judged by the longest batch so far, it ends inside the window; otherwise what changed is rolled back`
      : 'none (--window not given)',
    steps,
  }
}

function formatWindow(ms: number): string {
  const s = Math.round(ms / 1000)
  return [
    s >= 3600 ? `${Math.floor(s / 3600)}h` : '',
    s % 3600 >= 60 ? `${Math.floor((s % 3600) / 60)}m` : '',
    s % 60 ? `${s % 60}s` : '',
  ].join('')
}

/** The plan as text, one step per block. */
export function renderPlan(plan: UpgradePlan): string {
  const lines = [
    `Dry run: upgrade of environment '${plan.environment}' to ${plan.target} (nothing will be changed).`,
    `Current versions: ${Object.entries(plan.currentVersions)
      .map(([h, v]) => `${h} ${v ?? 'not installed'}`)
      .join(', ')}`,
    `Lock: ${plan.lock}`,
    `Window: ${plan.window}`,
    `Rollout: ${plan.batches.map((b, i) => `${i === 0 ? 'canary' : `batch ${i}`} [${b.join(', ')}]`).join(' -> ')}`,
    '',
  ]
  for (const s of plan.steps) {
    lines.push(`${s.host ? `[${s.host}] ` : ''}${s.step}`)
    for (const a of s.actions) lines.push(`    ${a}`)
  }
  return lines.join('\n')
}
