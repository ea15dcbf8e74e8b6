/**
 * `npm run demo`: the embedded lab end to end, as a user would type it.
 *
 *   1. start the lab: PostgreSQL, the manager emulator, an sshd and 3 recording hosts on 1.5.0
 *      with 6 recordings; writes stacks/Pulumi.lab.yaml
 *   2. check the operator's credentials and recording scopes at the lab manager
 *   3. show that a scope the operator lacks is refused with the missing scope named
 *   4. verify the recording service: every host answers health and content through the client
 *   5. back up the database (encrypted, checksummed) and verify it with a test restore
 *   6. plan the upgrade to 2.0.0 (a schema change) with --dry-run: nothing changes
 *   7. upgrade to 2.0.0: canary first, then the other hosts; verified
 *   8. record on the upgraded service: a recording the pre-upgrade backup does not hold
 *   9. roll the run back: 1.5.0 again, database restored, that recording re-created and listed
 *  10. list the runs (each has a journal and a report under .svcops/runs/)
 *  11. stop the lab (also when a step failed)
 */
import { fileURLToPath } from 'node:url'
import { $ } from 'zx'
import { managerClientFor } from '../src/clients/manager.ts'
import { RecordingClient } from '../src/clients/recording.ts'
import { loadEnvironment } from '../src/config/load.ts'
import { consoleSink, events } from '../src/core/events.ts'
import { svcopsCommand } from '../src/core/paths.ts'

const root = fileURLToPath(new URL('..', import.meta.url))
const svcops = svcopsCommand()
const shell = $({ cwd: root, stdio: 'inherit', verbose: false, nothrow: true })
events.subscribe(consoleSink())

/** Runs `svcops ARGS` with its output shown; a non-zero exit fails the step with one sentence. */
async function run(pieces: TemplateStringsArray, ...args: unknown[]): Promise<void> {
  const result = await shell(pieces, ...args)
  if (result.exitCode !== 0) {
    const words = pieces.map((piece, i) => piece + (i < args.length ? (args[i] === svcops ? 'svcops' : String(args[i])) : '')).join('')
    throw new Error(`'${words.trim()}' exited ${result.exitCode}.`)
  }
}

// A failed lab up stops what it started itself; only a lab this demo brought up is stopped in the
// last step (never one that was already running when the demo began).
try {
  await demo()
} catch {
  // The failed step was shown with its reason; the exit code tells a script.
  process.exitCode = 1
}

async function demo(): Promise<void> {
  await events.step(
    '1. start the lab with 3 recording hosts on 1.5.0',
    () => run`${svcops} lab up --hosts 3 --version 1.5.0 --recordings 6`,
  )
  try {
    await events.step('2. check the operator credentials and scopes at the lab manager', () => run`${svcops} auth check --env lab`)
    await events.step('3. ask for a scope the operator lacks (expected to be refused)', async () => {
      const refused = await shell`${svcops} auth check --env lab --scope urn:svc:recorder:admin:write`
      if (refused.exitCode !== 1) throw new Error(`auth check with a missing scope exited ${refused.exitCode}; expected 1.`)
    })
    await events.step(
      '4. verify the recording service on every host (health, content, a test recording)',
      () => run`${svcops} verify recording --env lab`,
    )
    await events.step('5. back up the database and verify the backup with a test restore', async () => {
      await run`${svcops} backup create --env lab`
      const list = await $({ cwd: root, verbose: false })`${svcops} backup list --env lab --json`
      const backups = (JSON.parse(list.stdout) as { backups: Array<{ id: string }> }).backups
      const newest = backups[0]?.id // newest first
      if (!newest) throw new Error('backup list shows no backup after backup create.')
      await run`${svcops} backup verify ${newest} --env lab --restore-test`
    })
    await events.step(
      '6. plan the upgrade to 2.0.0 without changing anything',
      () => run`${svcops} upgrade recording --env lab --to 2.0.0 --dry-run`,
    )
    await events.step(
      '7. upgrade the recording service to 2.0.0 (schema change)',
      () => run`${svcops} upgrade recording --env lab --to 2.0.0 --yes`,
    )
    const title = `Evening news, recorded on 2.0.0 at ${new Date().toISOString()}`
    await events.step('8. record on the upgraded service (after the backup the rollback restores)', async () => {
      const made = await withRecordings((hosts) => {
        if (!hosts[0]) throw new Error('the lab environment lists no recording host.')
        return hosts[0].create({ channelName: 'studio-a', title, startTime: 1_800_000_000, stopTime: 1_800_003_600 })
      })
      events.info(`Created recording ${made.id}: ${title}`)
    })
    await events.step('9. roll the upgrade back (database restored, the later recording kept)', async () => {
      await run`${svcops} rollback recording --env lab --yes`
      const seen = await withRecordings((hosts) =>
        Promise.all(hosts.map(async (h) => (await h.list(10_000)).some((r) => r.title === title))),
      )
      if (!seen.every(Boolean))
        throw new Error(`the recording made after the backup is missing on ${seen.filter((s) => !s).length} host(s) after the rollback.`)
      events.info(`Every host lists "${title}" on 1.5.0 again.`)
    })
    await events.step('10. show the runs and their reports', () => run`${svcops} runs list --env lab`)
  } finally {
    await events.step('11. stop the lab', () => run`${svcops} lab down`)
  }
}

/** Runs `fn` with a recording-service client per lab host, logged in as the lab's operator. */
async function withRecordings<T>(fn: (hosts: RecordingClient[]) => Promise<T>): Promise<T> {
  const env = loadEnvironment({ env: 'lab' })
  const auth = managerClientFor(env)
  try {
    return await fn((env.recording?.hosts ?? []).map((h) => new RecordingClient({ url: h.url, auth })))
  } finally {
    await auth.logout()
  }
}
