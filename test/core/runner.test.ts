import { describe, expect, it } from 'vitest'
import { CommandError, MissingBinaryError } from '../../src/core/errors.ts'
import { collect, events } from '../../src/core/events.ts'
import { registerSecret } from '../../src/core/redact.ts'
import { findBinary, local, requireBinary, runCommand, shellJoin } from '../../src/core/runner.ts'

describe('command runner', () => {
  it('captures exit code, stdout and stderr and logs a timed command event', async () => {
    const seen = collect(events)
    const result = await runCommand(local, ['sh', '-c', 'echo out; echo err >&2; exit 0'])
    seen.stop()
    expect(result).toMatchObject({ code: 0, stdout: 'out\n', stderr: 'err\n' })
    const event = seen.events.find((e) => e.kind === 'command')
    expect(event).toMatchObject({ kind: 'command', host: 'local', code: 0 })
  })

  it('throws a CommandError naming the command and the last stderr lines on a non-zero exit', async () => {
    await expect(runCommand(local, ['sh', '-c', 'echo broken config >&2; exit 3'])).rejects.toThrow(CommandError)
    await expect(runCommand(local, ['sh', '-c', 'echo broken config >&2; exit 3'])).rejects.toThrow(/exited with code 3: broken config/)
  })

  it('returns the result without throwing when check is false', async () => {
    const result = await runCommand(local, ['sh', '-c', 'exit 7'], { check: false })
    expect(result.code).toBe(7)
  })

  it('feeds secrets through stdin and never shows them in logs or errors', async () => {
    const secret = registerSecret('stdin-secret-value-11')
    const seen = collect(events)
    const error = await runCommand(local, ['sh', '-c', 'read x; echo "bad: $x" >&2; exit 1'], { input: `${secret}\n` }).catch(
      (e: unknown) => e,
    )
    seen.stop()
    expect(error).toBeInstanceOf(CommandError)
    expect((error as Error).message).toContain('[REDACTED]')
    expect((error as Error).message).not.toContain(secret)
    expect(JSON.stringify(seen.events)).not.toContain(secret)
  })

  it('says which program is missing', async () => {
    await expect(runCommand(local, ['svcops-no-such-program'])).rejects.toThrow(
      "The program 'svcops-no-such-program' was not found on local.",
    )
    expect(() => requireBinary('svcops-no-such-program', 'svcops-pkg')).toThrow(MissingBinaryError)
    expect(findBinary('sh')).toMatch(/\/sh$/)
  })

  it('quotes arguments for a POSIX shell', () => {
    expect(shellJoin(['echo', "it's", 'a b', ''])).toBe(`echo 'it'\\''s' 'a b' ''`)
  })
})
