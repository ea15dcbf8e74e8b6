/**
 * Blocking gates of a live upgrade: every change of the majors crossed that only people can make
 * (API clients, SDK code, dashboards and alerts; the catalog's actors other than svcops). Each gate
 * is either checked by svcops on the inputs the live section lists — C++ source directories with
 * `scan sdk`, saved controller calls with `migrate requests`, dashboards and rules with `migrate
 * metrics` — or acknowledged by its id with `--ack`. A gate that is neither stops the run before
 * anything changes, with the way to clear it.
 */
import { readFileSync, statSync } from 'node:fs'
import type { LiveConfig } from '../config/schema.ts'
import { BadInputError, BlockedError, withFacts } from '../core/errors.ts'
import { changeById } from '../releases/live.ts'
import { migrateMetricFiles } from '../releases/metrics.ts'
import { planLive, type PlanItem } from '../releases/plan.ts'
import { parseCalls, migrateRequests } from '../releases/requests.ts'
import { scanSdk } from '../releases/sdk-scan.ts'
import type { Migrator } from '../releases/types.ts'
import { apiPrefix } from '../releases/versions.ts'
import { productOf } from './layout.ts'

export type GateState = 'checked' | 'acknowledged' | 'blocked'

/** One gate and where it stands. */
export interface Gate {
  id: string
  release: string
  area: string
  summary: string
  /** What people must do. */
  action: string
  state: GateState
  /** Why it is in that state: the check's result, or that it needs a person. */
  detail: string
  /** How to clear it while blocked. */
  clear: string
}

const CHECKERS: Partial<
  Record<Migrator, { input: keyof Pick<LiveConfig, 'sdkSourceDirs' | 'savedRequests' | 'metricFiles'>; name: string }>
> = {
  'scan-sdk': { input: 'sdkSourceDirs', name: 'live.sdkSourceDirs' },
  'migrate-requests': { input: 'savedRequests', name: 'live.savedRequests' },
  'migrate-metrics': { input: 'metricFiles', name: 'live.metricFiles' },
}

/** A gate id as `--ack` takes it: `6.0.0/send-message`. */
export const GATE_ID = /^\d+\.\d+\.\d+\/[a-z0-9][a-z0-9-]*$/

/** Checks `--ack` values: the form of a gate id; one sentence naming the bad one. */
export function assertAckIds(acks: string[]): void {
  for (const a of acks)
    if (!GATE_ID.test(a)) throw new BadInputError(`--ack: '${a}' is not a gate id; expected a catalog change id like 6.0.0/send-message.`)
}

/** Uses of each catalog change found in one kind of input: change id -> where. */
type Uses = Map<string, string[]>

function add(uses: Uses, id: string, where: string): void {
  uses.set(id, [...(uses.get(id) ?? []), where])
}

function sdkUses(dirs: string[], from: string, to: string): Uses {
  const uses: Uses = new Map()
  for (const dir of dirs) for (const f of scanSdk(dir, from, to).findings) add(uses, f.rule, `${dir}/${f.file}:${f.line}: ${f.symbol}`)
  return uses
}

const MAX_INPUT_BYTES = 16 << 20

function readInput(file: string, field: string): string {
  let size: number
  try {
    size = statSync(file).size
  } catch (error) {
    throw new BadInputError(`${field}: the file '${file}' cannot be read: ${(error as NodeJS.ErrnoException).code ?? String(error)}.`)
  }
  if (size > MAX_INPUT_BYTES) throw new BadInputError(`${field}: '${file}' has ${size} bytes; expected at most ${MAX_INPUT_BYTES}.`)
  return readFileSync(file, 'utf8')
}

function requestUses(files: string[], from: string, to: string, live: LiveConfig): Uses {
  const uses: Uses = new Map()
  const target = apiPrefix(to)
  for (const file of files) {
    // A call already written for the target's prefix was ported: it is not the old release's.
    const calls = parseCalls(readInput(file, 'live.savedRequests'), file).filter((c) => !c.path.startsWith(`${target}/`))
    const result = migrateRequests(calls, from, to, { product: productOf(live) })
    for (const c of result.calls) {
      const where = `${file}: ${c.input.method} ${c.input.path}`
      for (const rule of c.output?.rules ?? []) add(uses, rule, where)
      if (c.untranslatable) add(uses, c.untranslatable.rule, `${where} (${c.untranslatable.reason})`)
    }
  }
  return uses
}

function metricUses(files: string[], from: string, to: string, live: LiveConfig): Uses {
  const uses: Uses = new Map()
  for (const f of files) readInput(f, 'live.metricFiles')
  for (const r of migrateMetricFiles(files, from, to, { product: productOf(live) })) {
    for (const c of r.changes) add(uses, c.rule, `${r.file}:${c.line}: ${c.from}`)
    for (const c of r.notRewritten) add(uses, c.rule, `${r.file}:${c.line}: ${c.from}`)
  }
  return uses
}

/** The plan's changes that people must make: the gates, before they are evaluated. */
export function gateItems(from: string, to: string, live: LiveConfig): PlanItem[] {
  return planLive(from, to, productOf(live)).items.filter((i) => i.actor !== 'svcops')
}

/** Evaluates every gate of the upgrade from `from` to `to` with the live section's inputs and the acknowledged ids. */
export function evaluateGates(live: LiveConfig, from: string, to: string, acks: readonly string[]): Gate[] {
  const items = gateItems(from, to, live)
  const known = new Set(items.map((i) => i.id))
  const unknown = acks.filter((a) => !known.has(a))
  if (unknown.length)
    throw new BadInputError(
      `--ack: ${unknown.map((a) => `'${a}'`).join(', ')} ${unknown.length > 1 ? 'are not gates' : 'is not a gate'} of the upgrade from ${from} to ${to}; expected ids that 'svcops upgrade live --dry-run' lists.`,
    )
  const found: Partial<Record<Migrator, Uses>> = {}
  const usesOf = (migrator: Migrator): Uses | undefined => {
    const checker = CHECKERS[migrator]
    if (!checker || live[checker.input].length === 0) return undefined
    if (!found[migrator]) {
      const inputs = live[checker.input]
      found[migrator] =
        migrator === 'scan-sdk'
          ? sdkUses(inputs, from, to)
          : migrator === 'migrate-requests'
            ? requestUses(inputs, from, to, live)
            : metricUses(inputs, from, to, live)
    }
    return found[migrator]
  }
  return items.map((item) => {
    const base = { id: item.id, release: item.release, area: item.area, summary: item.summary, action: item.action }
    const migrator = migratorOf(item)
    const checker = migrator ? CHECKERS[migrator] : undefined
    const uses = migrator && checker ? usesOf(migrator) : undefined
    const acked = acks.includes(item.id)
    if (uses) {
      const here = uses.get(item.id) ?? []
      if (!here.length) return { ...base, state: 'checked' as const, detail: `no use in ${checker?.name ?? 'the inputs'}`, clear: '' }
      const shown = `${here.slice(0, 3).join('; ')}${here.length > 3 ? `; and ${here.length - 3} more` : ''}`
      return {
        ...base,
        state: acked ? ('acknowledged' as const) : ('blocked' as const),
        detail: `${here.length} use${here.length > 1 ? 's' : ''} in ${checker?.name ?? 'the inputs'}: ${shown}`,
        clear: `change them (${item.command ?? item.action}), then run again; or --ack ${item.id} once they are handled elsewhere`,
      }
    }
    if (acked) return { ...base, state: 'acknowledged' as const, detail: 'acknowledged with --ack', clear: '' }
    const how = checker ? `list them in ${checker.name} for svcops to check, or ` : ''
    return {
      ...base,
      state: 'blocked' as const,
      detail: `needs a person: ${item.action.replace(/\.$/, '')}`,
      clear: `${how}--ack ${item.id} once done`,
    }
  })
}

function migratorOf(item: PlanItem): Migrator | null {
  return changeById(item.id).automatic
}

/** Throws when a gate is blocked: each id with why and how to clear it; nothing has changed. */
export function assertGatesClear(gates: Gate[], from: string, to: string): void {
  const blocked = gates.filter((g) => g.state === 'blocked')
  if (!blocked.length) return
  throw withFacts(
    new BlockedError(
      `${blocked.length} gate${blocked.length > 1 ? 's block' : ' blocks'} the upgrade from ${from} to ${to}, and nothing was changed: ${blocked.map((g) => g.id).join(', ')}.`,
      [
        ...blocked.map((g) => `  ${g.id} (${g.detail})${clearing(g)}`),
        `Once every one is handled: --ack ${blocked.map((g) => g.id).join(',')}`,
      ].join('\n'),
    ),
    { gates: blocked.map((g) => ({ id: g.id, detail: g.detail, clear: g.clear })) },
  )
}

/**
 * The gates as lines for the dry run and the plan: each open gate with its id, why and how to clear
 * it, then one `--ack` line for all of them; the checked ones with what was checked; the
 * acknowledged ones summed up in one line.
 */
export function describeGates(gates: Gate[]): string[] {
  if (!gates.length) return ['no change of the majors crossed needs a person']
  const blocked = gates.filter((g) => g.state === 'blocked')
  const acked = gates.filter((g) => g.state === 'acknowledged')
  const lines = blocked.map((g) => `open: ${g.id} — ${g.detail}${clearing(g)}`)
  if (blocked.length) lines.push(`once every open gate is handled: --ack ${blocked.map((g) => g.id).join(',')}`)
  lines.push(...gates.filter((g) => g.state === 'checked').map((g) => `checked: ${g.id} — ${g.detail}`))
  if (acked.length) lines.push(`acknowledged with --ack (${acked.length}): ${acked.map((g) => g.id).join(', ')}`)
  return lines
}

/** "; to clear: ..." without the gate's own `--ack` (one `--ack` line gives it for all), or nothing when that was the only way. */
function clearing(g: Gate): string {
  const rest = g.clear
    .replace(`; or --ack ${g.id} once they are handled elsewhere`, '')
    .replace(`, or --ack ${g.id} once done`, '')
    .replace(`--ack ${g.id} once done`, '')
  return rest ? `; to clear: ${rest}` : ''
}
