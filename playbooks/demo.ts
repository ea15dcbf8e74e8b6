/**
 * `npm run demo`: the embedded lab end to end, as a user would type it.
 *
 *   1. start the lab: PostgreSQL, the manager emulator, an sshd, 3 recording hosts on 1.5.0
 *      with 6 recordings, and a live production system host on 5.2.0; writes stacks/Pulumi.lab.yaml
 *   2. check the operator's credentials and recording scopes at the lab manager
 *   3. show that a scope the operator lacks is refused with the missing scope named
 *   4. verify the recording service: every host answers health and content through the client
 *   5. back up the database (encrypted, checksummed) and verify it with a test restore
 *   6. plan the upgrade to 2.0.0 (a schema change) with --dry-run: nothing changes
 *   7. upgrade to 2.0.0: canary first, then the other hosts; verified
 *   8. record on the upgraded service: a recording the pre-upgrade backup does not hold
 *   9. roll the run back: 1.5.0 again, database restored, that recording re-created and listed
 *  10. list the runs (each has a journal and a report under .svcops/runs/)
 *  11. plan the live production system's upgrade 5.2.0 -> 7.0.0 from the catalog: what breaks, who acts
 *  12. try it: the blocking gates stop it before anything changes (code, calls, dashboards unchecked)
 *  13. list the studio's ported SDK code, saved calls and dashboards in the stack file: the gates are
 *      checked by svcops; the dry run shows every command and every file diff (PSK masked)
 *  14. upgrade the live system to 7.0.0: settings file moved, TCP endpoint renamed, each component
 *      installed, started and checked in dependency order; then verify it
 *  15. roll the live upgrade back: 5.2.0 with its old settings, environments and PSK; verify again
 *  16. stop the lab (also when a step failed)
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parse as parseYaml, stringify } from 'yaml'
import { $ } from 'zx'
import { managerClientFor } from '../src/clients/manager-client.ts'
import { RecordingClient } from '../src/clients/recording-client.ts'
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
    '1. start the lab with 3 recording hosts on 1.5.0 and the live production system on 5.2.0',
    () => run`${svcops} lab up --hosts 3 --version 1.5.0 --recordings 6 --live 5.2.0`,
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
    await liveDemo()
  } finally {
    await events.step('16. stop the lab', () => run`${svcops} lab down`)
  }
}

/** Steps 11-15: the live production system across two majors and back. */
async function liveDemo(): Promise<void> {
  await events.step(
    '11. plan the live upgrade 5.2.0 -> 7.0.0: what breaks, by who acts',
    () => run`${svcops} plan live --from 5.2.0 --to 7.0.0`,
  )
  await events.step('12. upgrade live without the studio having checked its code (expected to stop at the gates)', async () => {
    const blocked = await shell`${svcops} upgrade live --env lab --to 7.0.0 --yes`
    if (blocked.exitCode !== 5) throw new Error(`upgrade live with open gates exited ${blocked.exitCode}; expected 5.`)
  })
  await events.step('13. list the ported code, saved calls and dashboards for svcops to check; dry run', async () => {
    listStudioInputs()
    await run`${svcops} upgrade live --env lab --to 7.0.0 --dry-run`
  })
  await events.step('14. upgrade the live production system to 7.0.0, then verify it', async () => {
    await run`${svcops} upgrade live --env lab --to 7.0.0 --yes`
    await run`${svcops} verify live --env lab`
  })
  await events.step('15. roll the live upgrade back to 5.2.0 (settings, environments, PSK restored), then verify', async () => {
    await run`${svcops} rollback live --env lab --yes`
    await run`${svcops} verify live --env lab`
  })
}

/**
 * What a studio has ported before the upgrade, as files, listed in the stack file's live section:
 * C++ code on the 7.0 SDK, controller calls on /api/v3, a rule on the 6.0 ingest metrics.
 */
function listStudioInputs(): void {
  const dir = mkdtempSync(join(tmpdir(), 'svcops-demo-studio-'))
  mkdirSync(join(dir, 'sdk'))
  writeFileSync(
    join(dir, 'sdk', 'render.cpp'),
    '#include "MediaReceiver.h"\n#include "PixelFormat.h"\nvoid onFrame(const AlignedFrame& f, PixelFormat format) { (void)f.mRenderingTimestamp; (void)format; }\n',
  )
  writeFileSync(
    join(dir, 'calls.yaml'),
    'calls:\n  - { name: status, method: GET, path: /api/v3/status }\n  - { name: components, method: GET, path: /api/v3/components }\n',
  )
  writeFileSync(
    join(dir, 'rules.yaml'),
    'groups:\n  - name: ingest\n    rules:\n      - alert: IngestDroppingVideo\n        expr: rate(svc_ingest_source_dropped_video_frames[5m]) > 0\n',
  )
  const file = join(process.env.SVCOPS_STACKS_DIR ?? join(root, 'stacks'), 'Pulumi.lab.yaml')
  const doc = parseYaml(readFileSync(file, 'utf8')) as { config: Record<string, Record<string, unknown>> }
  doc.config['svcops:live'] = {
    ...doc.config['svcops:live'],
    sdkSourceDirs: [join(dir, 'sdk')],
    savedRequests: [join(dir, 'calls.yaml')],
    metricFiles: [join(dir, 'rules.yaml')],
  }
  writeFileSync(file, stringify(doc))
  events.info(`Listed ${dir}/sdk, calls.yaml and rules.yaml in svcops:live of ${file}.`)
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
