/**
 * A demo in miniature for test/lab/demo-session.test.ts: one command running in a DemoSession, and
 * a stop. Both append what they do to the log file named by the first argument. The command, a real
 * process, behaves as svcops does on a signal: it takes a moment to stop what it started, then exits
 * 130; the stop takes a moment too.
 */
import { appendFileSync } from 'node:fs'
import { DemoSession } from '../../src/lab/demo-session.ts'

const log = process.argv[2] ?? ''
const note = (line: string): void => appendFileSync(log, `${line}\n`)

const command = `
const { appendFileSync } = require('node:fs')
const log = process.argv[1]
let stopping = false
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => {
  appendFileSync(log, 'command got ' + signal + '\\n')
  if (stopping) return
  stopping = true
  setTimeout(() => { appendFileSync(log, 'command stopped\\n'); process.exit(130) }, 300)
})
appendFileSync(log, 'command running\\n')
setInterval(() => undefined, 1000)
`
const session = new DemoSession({
  cwd: process.cwd(),
  // In this process, as the demo's lab down: it takes a while, during which a second Ctrl-C may come.
  stop: async () => {
    note('stop')
    await new Promise((resolve) => setTimeout(resolve, 500))
    note('stop done')
    return 'Stopped the lab, as svcops lab down does: lab files.'
  },
})
const result = await session.run([process.execPath, '-e', command, log])
note(`the demo went on after exit ${result.exitCode}`)
