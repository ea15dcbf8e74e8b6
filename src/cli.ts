/** `svcops`: the one entry point. */
import { main } from './commands/program.ts'

process.exitCode = await main(process.argv.slice(2))
