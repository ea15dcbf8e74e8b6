/** `svcops`: the one entry point. */
import { main } from './commands/program.ts'

// `svcops ... | head` closes stdout early; that is the reader's choice, not a failure to report.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0)
    throw error
  })
}

process.exitCode = await main(process.argv.slice(2))
