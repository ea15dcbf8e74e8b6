/**
 * Stops the benchmark database that generate.ts left running and removes its files and the info file.
 *
 *   node bench/backup/stop.ts --info /tmp/svcops-bench-1g.json
 */
import { readFileSync, rmSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { stopPostgres, type PostgresInfo } from '../../src/lab/lab-postgres.ts'
import { requireTools, TOOLS } from '../require-tools.ts'

requireTools('bench/backup/stop.ts', TOOLS.postgresServer)

const { values } = parseArgs({ options: { info: { type: 'string', default: '/tmp/svcops-bench-1g.json' } } })
let info: PostgresInfo
try {
  info = JSON.parse(readFileSync(values.info, 'utf8')) as PostgresInfo
} catch (error) {
  process.stderr.write(
    `--info: '${values.info}' cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)}); expected the file generate.ts wrote.\n`,
  )
  process.exit(2)
}
await stopPostgres(info)
rmSync(values.info, { force: true })
process.stderr.write(`Stopped the benchmark database on port ${info.port} and removed ${info.dir} and ${values.info}.\n`)
