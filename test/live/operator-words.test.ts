/**
 * What an operator sees of a live upgrade before it starts, on a real live lab on 6.0.0: a dry run
 * with an open gate exits 5 as the run would, closing with a summary (what would change, what blocks
 * it, the exact command that would go ahead) and `--json` `ok: false` with the gates' ids; the
 * refusal lists the `--ack` ids once; a version not in the package directory is refused naming the
 * versions there, in order; refusals leave no run folder behind.
 */
import { existsSync, readdirSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { gateIds, startLiveLab, type LiveLab } from '../support/live-lab.ts'

let lab: LiveLab

beforeAll(async () => {
  lab = await startLiveLab({ version: '6.0.0' })
}, 240_000)

afterAll(async () => {
  await lab?.stop()
})

const runFolders = () => (existsSync(lab.runsDir) ? readdirSync(lab.runsDir) : [])

describe('a live upgrade as the operator sees it before it starts', () => {
  it('a dry run with open gates exits 5 and closes with a summary naming the gates and the command that would go ahead', async () => {
    const gates = gateIds(lab.live(), '6.0.0', '7.0.0')
    const dry = await lab.svcops(['upgrade', 'live', '--to', '7.0.0', '--dry-run'])
    expect(dry.code, dry.stderr).toBe(5)
    const tail = dry.stdout.trimEnd().split('\n').slice(-4)
    expect(tail[0]).toBe('Summary of this dry run (nothing was changed):')
    expect(tail[1]).toMatch(/^ {2}would change: system-controller, .* to 7\.0\.0 \(\d+ steps\)$/)
    expect(tail[2]).toMatch(/^ {2}blocks it \(exit 5\) at gates: \d+ gates? blocks? the upgrade from 6\.0\.0 to 7\.0\.0/)
    expect(tail[3]).toBe(
      `  once that is handled, go ahead with: svcops --stack-file ${lab.envFile} upgrade live --to 7.0.0 --ack ${gates.join(',')}`,
    )
    // The plan lists each open gate by its id, and one --ack line for all of them.
    for (const id of gates) expect(dry.stdout).toContain(`open: ${id} — `)
    expect(dry.stdout.match(/once every open gate is handled: --ack /g)).toHaveLength(1)

    const json = await lab.svcops(['upgrade', 'live', '--to', '7.0.0', '--dry-run', '--json'])
    expect(json.code).toBe(5)
    const answer = JSON.parse(json.stdout) as { ok: boolean; summary: { blocking: string[] } }
    expect(answer.ok).toBe(false)
    expect(answer.summary.blocking).toEqual(gates)
    expect(runFolders()).toEqual([])
  })

  it('with every gate acknowledged the dry run exits 0 and names the command that goes ahead', async () => {
    const gates = gateIds(lab.live(), '6.0.0', '7.0.0').join(',')
    const dry = await lab.svcops(['upgrade', 'live', '--to', '7.0.0', '--ack', gates, '--dry-run'])
    expect(dry.code, dry.stderr).toBe(0)
    expect(dry.stdout).toContain('  blocks it: nothing found')
    expect(dry.stdout).toContain(`  to go ahead: svcops --stack-file ${lab.envFile} upgrade live --to 7.0.0 --ack ${gates}`)
    expect(dry.stdout).toContain(`acknowledged with --ack (${gates.split(',').length}): `)
    expect(dry.stdout).not.toContain('acknowledged with --ack;')
  })

  it('the refusal of an open gate lists the --ack ids once and leaves no run folder', async () => {
    const run = await lab.svcops(['upgrade', 'live', '--to', '7.0.0', '--yes'])
    expect(run.code).toBe(5)
    expect(run.stderr.match(/--ack /g)).toHaveLength(1)
    expect(runFolders()).toEqual([])
  })

  it('a version not in the package directory is refused naming the versions there, oldest first, and leaves no run folder', async () => {
    const run = await lab.svcops(['upgrade', 'live', '--to', '7.5.0', '--yes'])
    expect(run.code).toBe(2)
    const listed = /expected one of the versions there: ([\d., ]+)\./.exec(run.stderr)?.[1]?.split(', ') ?? []
    expect(listed.length, run.stderr).toBeGreaterThan(1)
    expect(listed).toContain('7.0.0')
    const sorted = [...listed].sort((a, b) => {
      const [x, y] = [a, b].map((v) => v.split('.').map(Number))
      return (x?.[0] ?? 0) - (y?.[0] ?? 0) || (x?.[1] ?? 0) - (y?.[1] ?? 0) || (x?.[2] ?? 0) - (y?.[2] ?? 0)
    })
    expect(listed).toEqual(sorted)
    expect(run.stderr).not.toContain('List the available versions with: ls')
    expect(runFolders()).toEqual([])
  })
})
