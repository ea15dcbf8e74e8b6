/**
 * `npm run demo`: the embedded lab end to end, as a user would type it.
 *
 *   1. start the lab (PostgreSQL and the manager emulator) and write stacks/Pulumi.lab.yaml
 *   2. check the operator's credentials and recording scopes at the lab manager
 *   3. show that a scope the operator lacks is refused with the missing scope named
 *   4. stop the lab (also when step 2 or 3 failed)
 *
 * Later parts of the lab add their steps to this list, in the order a person would run them.
 */
import { fileURLToPath } from 'node:url'
import { $ } from 'zx'
import { consoleSink, events } from '../src/ops/events.ts'

const root = fileURLToPath(new URL('..', import.meta.url))
const svcops = ['node', fileURLToPath(new URL('../bin/svcops.js', import.meta.url))]
const run = $({ cwd: root, stdio: 'inherit', verbose: false })
events.subscribe(consoleSink())

// A failed lab up stops what it started itself; only a lab this demo brought up is stopped in step 4
// (never one that was already running when the demo began).
await events.step('1. start the lab', () => run`${svcops} lab up`)
try {
  await events.step('2. check the operator credentials and scopes at the lab manager', () => run`${svcops} auth check --env lab`)
  await events.step('3. ask for a scope the operator lacks (expected to be refused)', async () => {
    const refused = await run`${svcops} auth check --env lab --scope urn:svc:recorder:admin:write`.nothrow()
    if (refused.exitCode !== 1) throw new Error(`auth check with a missing scope exited ${refused.exitCode}; expected 1.`)
  })
} finally {
  await events.step('4. stop the lab', () => run`${svcops} lab down`)
}
