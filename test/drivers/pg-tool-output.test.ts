/**
 * pg_dump writing a backup's archive runs under coreutils' `stdbuf -o1M` where the machine has it: stdio would write a pipe in 4 KiB pieces,
 * 180 000 writes for a 700 MB archive (docs/benchmarks.md). The wrapper must change nothing a
 * caller sees: the output, the exit code and the message of a failing tool are the tool's own.
 */
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buffer } from 'node:stream/consumers'
import { afterEach, describe, expect, it } from 'vitest'
import { collect } from '../../src/core/events.ts'
import { findBinary, requireBinary } from '../../src/core/runner.ts'
import { spawnPgTool } from '../../src/drivers/postgres.ts'

const pgRestore = requireBinary('pg_restore', 'postgresql-client')

/** Runs `argv` as backup create runs pg_dump; its stdout, exit and logged command. */
async function run(argv: string[]): Promise<{ stdout: string; code: number | null; stderr: string; command: string }> {
  const log = collect()
  try {
    const tool = spawnPgTool(argv, undefined, { stdin: false, stdout: true, wideOutput: true })
    const [stdout, exit] = await Promise.all([buffer(tool.child.stdout!), tool.exited])
    const event = log.events.find((e) => e.kind === 'command')
    return { stdout: stdout.toString(), code: exit.code, stderr: exit.stderr, command: event && 'command' in event ? event.command : '' }
  } finally {
    log.stop()
  }
}

describe('a PostgreSQL tool whose output svcops reads in wide writes', () => {
  const path = process.env.PATH
  afterEach(() => {
    process.env.PATH = path
  })

  it('runs under stdbuf -o1M, with its own output, exit code and message', async () => {
    const stdbuf = findBinary('stdbuf')
    if (!stdbuf) throw new Error('stdbuf is not installed: apt-get install -y coreutils')
    const version = await run([pgRestore, '--version'])
    expect(version.command).toBe(`${stdbuf} -o1M ${pgRestore} --version`)
    expect(version.stdout).toMatch(/^pg_restore \(PostgreSQL\) \d+/)
    expect(version.code).toBe(0)
    const missing = await run([pgRestore, '--list', '/nonexistent/archive'])
    expect(missing.code).toBe(1)
    expect(missing.stderr).toMatch(/^pg_restore: error: could not open input file "\/nonexistent\/archive"/)
  })

  it('runs as it is where the machine has no stdbuf', async () => {
    const bin = mkdtempSync(join(tmpdir(), 'svcops-no-stdbuf-'))
    try {
      symlinkSync(pgRestore, join(bin, 'pg_restore'))
      process.env.PATH = bin
      const version = await run([pgRestore, '--version'])
      expect(version.command).toBe(`${pgRestore} --version`)
      expect(version.stdout).toMatch(/^pg_restore \(PostgreSQL\) \d+/)
    } finally {
      rmSync(bin, { recursive: true, force: true })
    }
  })
})
