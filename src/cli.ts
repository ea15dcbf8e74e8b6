/** `svcops`: the one entry point. bin/svcops.cjs calls `run`, from the build in dist/ or from here. */
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
