/** `svcops`: the one entry point. `bin/svcops` calls `run`; `node src/cli.ts ...` runs it too. */
import { realpathSync } from 'node:fs'
import { main } from './commands/program.ts'

export { main }

/** Runs the CLI with the process's arguments and sets its exit code. */
export async function run(argv: string[] = process.argv.slice(2)): Promise<void> {
  // `svcops ... | head` closes stdout early; that is the reader's choice, not a failure to report.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0)
      throw error
    })
  }
  process.exitCode = await main(argv)
  // What is left is Node tearing down its heap, ~15 ms after a large scan: exit now, but only when
  // nothing but the standard streams (written synchronously on Linux) is open. A child, a socket, a
  // timer or a file still being written gets the natural exit instead.
  const open = process.getActiveResourcesInfo()
  if (open.length <= 3 && open.every((r) => r === 'TTYWrap' || r === 'PipeWrap')) process.exit()
}

// `node src/cli.ts ...` runs the CLI too (the check import.meta.main makes on Node 24, also on 22.18).
if (process.argv[1] !== undefined && realpathSync(process.argv[1]) === import.meta.filename) await run()
