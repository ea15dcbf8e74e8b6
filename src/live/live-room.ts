/**
 * Room for what a live upgrade writes where the system runs before its first stop — the packages it
 * stages and the copies of the settings and environment files — judged once for every platform:
 * each filesystem the platform reads (`readRoom`, live-platform.ts) must have more free than what
 * the run writes there plus 20%, the margin the recording service's preflight keeps for its backup.
 * Short of it, the preflight refuses before anything is staged: nothing changed (exit 5), naming the
 * host, the folder, the bytes needed and the bytes free. A full disk would otherwise fail the
 * staging half-way, or the backup, with nothing said of why.
 */
import { BlockedError } from '../core/errors.ts'
import { events } from '../core/events.ts'
import { formatBytes } from '../core/units.ts'
import type { LiveContext } from './live-context.ts'
import type { RoomReading } from './live-platform.ts'

/** What is kept free beyond what the run writes: 20%. */
export const ROOM_MARGIN = 1.2

/** One filesystem judged: enough room or not, the bytes wanted with the margin, and the sentence. */
export interface RoomVerdict {
  reading: RoomReading
  ok: boolean
  /** What the run writes there plus the margin: the free bytes must exceed it. */
  wanted: number
  detail: string
}

function bytes(n: number): string {
  return `${n} bytes (${formatBytes(n)})`
}

/** Judges each filesystem: enough room when more is free than what the run writes there plus 20%. */
export function judgeRoom(readings: RoomReading[]): RoomVerdict[] {
  return readings.map((reading) => {
    const wanted = Math.ceil(reading.needed * ROOM_MARGIN)
    const ok = reading.free > wanted
    const where = `the filesystem ${reading.mount} of ${reading.paths.join(' and ')} on ${reading.host}`
    const what = reading.what.join(' and ')
    const detail = ok
      ? `${where}: ${bytes(reading.free)} free; ${what} need ${bytes(reading.needed)}, plus 20%`
      : `${where} has ${bytes(reading.free)} free, and ${what} need ${bytes(reading.needed)}, ${bytes(wanted)} with the 20% margin`
    return { reading, ok, wanted, detail }
  })
}

/**
 * Reads the room on every filesystem the upgrade to `to` from `from` writes to before its first
 * stop, shows each as a check, and refuses (BlockedError, exit 5) when one is short. Returns the
 * readings, for the journal.
 */
export async function checkRoom(ctx: LiveContext, from: string, to: string): Promise<RoomReading[]> {
  const verdicts = judgeRoom(await ctx.platform.readRoom([to, from]))
  for (const v of verdicts)
    events.emit({ kind: 'check', check: `room for ${v.reading.what.join(' and ')}`, ok: v.ok, host: v.reading.host, detail: v.detail })
  const short = verdicts.filter((v) => !v.ok)
  if (short.length)
    throw new BlockedError(
      `Nothing changed: the upgrade to ${to} was refused before anything was staged, because ${short.map((v) => v.detail).join('; ')}.`,
      `Free space on ${[...new Set(short.map((v) => `${v.reading.host}:${v.reading.mount}`))].join(', ')}, then run the upgrade again: svcops upgrade live --env ${ctx.env.name} --to ${to}`,
    )
  return verdicts.map((v) => v.reading)
}
