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
}

// `node src/cli.ts ...` runs the CLI too (the check import.meta.main makes on Node 24, also on 22.18).
if (process.argv[1] !== undefined && realpathSync(process.argv[1]) === import.meta.filename) await run()
