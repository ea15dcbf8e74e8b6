/**
 * `svcops plan live`: the ordered changes of every major crossed between two versions of the
 * live production system, grouped by who acts, with what svcops does itself.
 */
import { expandChange, FIRST_LIVE_RELEASE, LIVE_RELEASES } from './live.ts'
import { DEFAULT_PRODUCT, type Actor, type ChangeKind, type Migrator, type Product } from './types.ts'
import { assertUpgradeRange, compareVersions, majorOf } from './versions.ts'

/** Groups of a plan, in the order people read them. */
export const ACTORS: readonly Actor[] = ['svcops', 'operator', 'api-client', 'sdk']

export const ACTOR_TITLES: Record<Actor, string> = {
  svcops: 'svcops (deploy and environment)',
  operator: 'operator configuration (alerts, dashboards, capacity)',
  'api-client': 'API client code (calls to the system controller)',
  sdk: 'SDK code (C++ against the pipeline SDK)',
}

const MIGRATORS: Record<Migrator, { does: string; command: string }> = {
  'migrate-requests': {
    does: 'translates saved system controller calls',
    command: 'svcops migrate requests --from {from} --to {to} CALLS.yaml',
  },
  'migrate-metrics': {
    does: 'rewrites Prometheus rules, Grafana dashboards and PromQL',
    command: 'svcops migrate metrics --from {from} --to {to} FILES',
  },
  'migrate-env': {
    does: "checks and migrates a component's environment and settings",
    command: 'svcops migrate env --from {from} --to {to} ENV_FILE',
  },
  psk: { does: 'generates and checks the pre-shared key', command: 'svcops psk generate / svcops psk check' },
  'scan-sdk': { does: 'finds the affected SDK usages (file:line:column)', command: 'svcops scan sdk DIR --from {from} --to {to}' },
  deploy: { does: 'sets it in the deployment for the target version', command: 'pulumi up' },
}

export interface PlanItem {
  id: string
  release: string
  area: string
  kind: ChangeKind
  actor: Actor
  summary: string
  action: string
  old?: string
  new?: string
  /** What svcops does about it itself, or null when it stays manual. */
  svcops: string | null
  /** The command that does it, when there is one. */
  command: string | null
}

export interface LivePlan {
  from: string
  to: string
  /** Majors crossed, oldest first. */
  releases: string[]
  /** Every change in release order. */
  items: PlanItem[]
  /** The same items grouped by who acts (empty groups omitted). */
  groups: Array<{ actor: Actor; title: string; items: PlanItem[] }>
  /** Things the catalog cannot answer (versions newer than it knows). */
  notes: string[]
}

/**
 * Plans an upgrade of the live production system from `from` to `to`. Invalid versions,
 * downgrades and versions before the first release are refused with one sentence; equal versions
 * and upgrades within a major give an empty plan that says so.
 */
export function planLive(from: string, to: string, product: Product = DEFAULT_PRODUCT): LivePlan {
  assertUpgradeRange(from, to, FIRST_LIVE_RELEASE, 'svcops plan live')
  const order = compareVersions(from, to)
  const fromMajor = majorOf(from)
  const toMajor = majorOf(to)
  const crossed = LIVE_RELEASES.filter((r) => r.major > fromMajor && r.major <= toMajor)
  const items = crossed.flatMap((r) => r.changes.map((c) => toItem(expandChange(c, product), from, to)))
  const notes: string[] = []
  if (order === 0) notes.push(`--from and --to are both ${from}: there is nothing to upgrade.`)
  else if (fromMajor === toMajor)
    notes.push(`${from} and ${to} are in the same major release: the catalog lists no breaking changes between them.`)
  const last = LIVE_RELEASES.at(-1)
  if (last && toMajor > last.major)
    notes.push(
      `${to} is newer than the last release in the catalog (${last.version}): changes after ${last.version} are not known to svcops.`,
    )
  const groups = ACTORS.map((actor) => ({ actor, title: ACTOR_TITLES[actor], items: items.filter((i) => i.actor === actor) })).filter(
    (g) => g.items.length > 0,
  )
  return { from, to, releases: crossed.map((r) => r.version), items, groups, notes }
}

function toItem(change: ReturnType<typeof expandChange>, from: string, to: string): PlanItem {
  const migrator = change.automatic ? MIGRATORS[change.automatic] : undefined
  return {
    id: change.id,
    release: change.release,
    area: change.area,
    kind: change.kind,
    actor: change.actor,
    summary: change.summary,
    action: change.action,
    ...(change.old !== undefined ? { old: change.old } : {}),
    ...(change.new !== undefined ? { new: change.new } : {}),
    svcops: migrator ? migrator.does : null,
    command: migrator ? migrator.command.replace('{from}', from).replace('{to}', to) : null,
  }
}

/** The plan as text for people: one section per group, each change with what to do. */
export function formatPlan(plan: LivePlan): string {
  const lines = [
    `Live production system: ${plan.from} -> ${plan.to}` + (plan.releases.length ? ` (crosses ${plan.releases.join(', ')})` : ''),
  ]
  for (const note of plan.notes) lines.push(`note: ${note}`)
  for (const group of plan.groups) {
    lines.push('', `== ${group.title}: ${group.items.length} change${group.items.length === 1 ? '' : 's'}`)
    for (const item of group.items) {
      lines.push(`- ${item.id} — ${item.area}: ${item.summary}`, `    do: ${item.action}`)
      if (item.svcops) lines.push(`    svcops: ${item.svcops} -> ${item.command ?? ''}`)
    }
  }
  if (plan.items.length)
    lines.push('', `${plan.items.length} changes; ${plan.items.filter((i) => i.svcops).length} handled or checked by svcops.`)
  // The gates are what people change (every actor but svcops): one --ack for all once they are handled.
  const gates = plan.items.filter((i) => i.actor !== 'svcops').map((i) => i.id)
  if (gates.length) lines.push(`${gates.length} gate(s) for people; once handled, upgrade with: --ack ${gates.join(',')}`)
  return lines.join('\n')
}
