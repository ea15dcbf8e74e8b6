/**
 * `npm run demo`: the embedded lab end to end, as a user would type it.
 *
 *   1. start the lab: PostgreSQL, the manager emulator, an sshd, 3 recording hosts on 1.5.0
 *      with 6 recordings, a rehearsal host, and a live production system host on 5.2.0; writes
 *      stacks/Pulumi.lab.yaml
 *   2. check the operator's credentials and recording scopes at the lab manager
 *   3. show that a scope the operator lacks is refused with the missing scope named
 *   4. verify the recording service: every host answers health and content through the client
 *   5. back up the database (encrypted, checksummed) and verify it with a test restore
 *   6. refresh the rehearsal host's copy of the recordings storage (a site's rsync), rehearse the
 *      upgrade to 2.0.0 (a schema change) on a copy of the database on the rehearsal host: its verdict and prediction (migration, downtime per host and for the rollout beside a
 *      30 min window); then plan it with --dry-run, which shows that rehearsal: nothing changes
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
 *  16. stop the lab (also when a step failed), then show the commands to try next: each one the
 *      demo itself ran
 *
 * Interrupted (Ctrl-C, SIGTERM, a closed terminal: src/lab/demo-session.ts), it stops the command
 * running, then the lab it brought up, as `svcops lab down` does, says so and exits 130. A lab that
 * was already up when the demo began is never stopped: `lab up` refuses it, and the demo ends there.
 * Lab-only, in src/lab with the lab it drives: neither npm pack nor the image ships it.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parse as parseYaml, stringify } from 'yaml'
import { managerClientFor } from '../clients/manager-client.ts'
import { RecordingClient } from '../clients/recording-client.ts'
import { loadEnvironment } from '../config/load.ts'
import { consoleSink, events } from '../core/events.ts'
import { svcopsCommand } from '../core/paths.ts'
import { DemoSession } from './demo-session.ts'
import { labDown } from './lab.ts'
import { refreshLabRehearsalStorage } from './lab-rehearsal-host.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))
events.subscribe(consoleSink())

/** Whether this demo brought the lab up: only then does it stop it. */
let lab: 'not started' | 'starting' | 'up' = 'not started'
const session = new DemoSession({ cwd: root, stop: stopLab })

/** Commands the demo runs that a newcomer can type next, in this order (shown at the end). */
const LAB_UP = ['lab', 'up', '--hosts', '3', '--version', '1.5.0', '--recordings', '6', '--rehearsal-host', '--live', '5.2.0']
const AUTH_CHECK = ['auth', 'check', '--env', 'lab']
const VERIFY = ['verify', 'recording', '--env', 'lab']
const REHEARSE = ['rehearse', 'recording', '--env', 'lab', '--to', '2.0.0', '--window', '30m']
const UPGRADE_PLAN = ['upgrade', 'recording', '--env', 'lab', '--to', '2.0.0', '--dry-run']
const UPGRADE = ['upgrade', 'recording', '--env', 'lab', '--to', '2.0.0', '--yes']
const ROLLBACK = ['rollback', 'recording', '--env', 'lab', '--yes']
const RUNS = ['runs', 'list', '--env', 'lab']
const PLAN_LIVE = ['plan', 'live', '--from', '5.2.0', '--to', '7.0.0']
const LAB_DOWN = ['lab', 'down']
const TRY_NEXT = [LAB_UP, AUTH_CHECK, VERIFY, REHEARSE, UPGRADE_PLAN, UPGRADE, ROLLBACK, RUNS, PLAN_LIVE, LAB_DOWN]

/** Runs `svcops ARGS` with its output shown, after the line a user would type. */
async function svcops(args: string[], options: { capture?: boolean } = {}): Promise<{ exitCode: number; stdout: string }> {
  events.info(`$ svcops ${args.join(' ')}`)
  return session.run([...svcopsCommand(), ...args], options)
}

/** Runs `svcops ARGS`; a non-zero exit fails the step with one sentence. */
async function run(args: string[]): Promise<void> {
  const { exitCode } = await svcops(args)
  if (exitCode !== 0) throw new Error(`'svcops ${args.join(' ')}' exited ${exitCode}.`)
}

/** Runs `svcops ARGS` that must exit `expected` (a refusal the demo shows on purpose). */
async function refused(args: string[], expected: number): Promise<void> {
  const { exitCode } = await svcops(args)
  if (exitCode !== expected) throw new Error(`'svcops ${args.join(' ')}' exited ${exitCode}; expected ${expected}.`)
}

/**
 * After an interruption: the lab this demo brought up is stopped by what `svcops lab down` runs,
 * in this process, so that a second Ctrl-C cannot kill it half-way.
 */
async function stopLab(): Promise<string> {
  if (lab === 'not started') return 'The demo had not started the lab; nothing of it runs.'
  const { stopped } = await labDown()
  return [
    stopped.length > 0
      ? `Stopped the lab, as svcops lab down does: ${stopped.join(', ')}.`
      : 'lab up had stopped what it started itself; nothing of the lab runs.',
    'Nothing the demo started is running. Start it again with: npm run demo',
  ].join('\n')
}

try {
  await demo()
  tryNext()
} catch {
  // The failed step was shown with its reason; the exit code tells a script.
  process.exitCode = 1
}

async function demo(): Promise<void> {
  // A failed lab up stops what it started itself; a lab already up is someone's, never touched.
  await events.step(
    '1. start the lab with 3 recording hosts on 1.5.0, a rehearsal host and the live production system on 5.2.0',
    async () => {
      const status = await session.run([...svcopsCommand(), 'lab', 'status', '--json'], { capture: true })
      if ((JSON.parse(status.stdout) as { up: boolean }).up)
        throw new Error('a lab is already up in this checkout; the demo leaves it alone (stop it with: npx svcops lab down).')
      lab = 'starting'
      const { exitCode } = await svcops(LAB_UP)
      if (exitCode !== 0) {
        lab = 'not started'
        throw new Error(`'svcops ${LAB_UP.join(' ')}' exited ${exitCode}.`)
      }
    },
  )
  lab = 'up'
  try {
    await events.step('2. check the operator credentials and scopes at the lab manager', () => run(AUTH_CHECK))
    await events.step('3. ask for a scope the operator lacks (expected to be refused)', () =>
      refused(['auth', 'check', '--env', 'lab', '--scope', 'urn:svc:recorder:admin:write'], 1),
    )
    await events.step('4. verify the recording service on every host (health, content, a test recording)', () => run(VERIFY))
    await events.step('5. back up the database and verify the backup with a test restore', async () => {
      await run(['backup', 'create', '--env', 'lab'])
      const list = await svcops(['backup', 'list', '--env', 'lab', '--json'], { capture: true })
      const backups = (JSON.parse(list.stdout) as { backups: Array<{ id: string }> }).backups
      const newest = backups[0]?.id // newest first
      if (!newest) throw new Error('backup list shows no backup after backup create.')
      await run(['backup', 'verify', newest, '--env', 'lab', '--restore-test'])
    })
    await events.step(
      '6. rehearse the upgrade to 2.0.0 on a copy (verdict and prediction), then plan it; production unchanged',
      async () => {
        // A site keeps the rehearsal host's copy of the recordings storage fresh (rsync); step 4's test recording is newer than the lab's copy.
        events.info(
          `Refreshed the rehearsal host's copy of the recordings storage: ${refreshLabRehearsalStorage(loadEnvironment({ env: 'lab' }))}`,
        )
        await run(REHEARSE)
        await run(UPGRADE_PLAN)
      },
    )
    await events.step('7. upgrade the recording service to 2.0.0 (schema change)', () => run(UPGRADE))
    const title = `Evening news, recorded on 2.0.0 at ${new Date().toISOString()}`
    await events.step('8. record on the upgraded service (after the backup the rollback restores)', async () => {
      const made = await withRecordings((hosts) => {
        if (!hosts[0]) throw new Error('the lab environment lists no recording host.')
        return hosts[0].create({ channelName: 'studio-a', title, startTime: 1_800_000_000, stopTime: 1_800_003_600 })
      })
      events.info(`Created recording ${made.id}: ${title}`)
    })
    await events.step('9. roll the upgrade back (database restored, the later recording kept)', async () => {
      await run(ROLLBACK)
      const seen = await withRecordings((hosts) =>
        Promise.all(hosts.map(async (h) => (await h.list(10_000)).some((r) => r.title === title))),
      )
      if (!seen.every(Boolean))
        throw new Error(`the recording made after the backup is missing on ${seen.filter((s) => !s).length} host(s) after the rollback.`)
      events.info(`Every host lists "${title}" on 1.5.0 again.`)
    })
    await events.step('10. show the runs and their reports', () => run(RUNS))
    await liveDemo()
  } finally {
    // Not after an interruption: the session stops the lab then, once.
    if (!session.interrupted) {
      await events.step('16. stop the lab', () => run(LAB_DOWN))
      lab = 'not started'
    }
  }
}

/** Steps 11-15: the live production system across two majors and back. */
async function liveDemo(): Promise<void> {
  await events.step('11. plan the live upgrade 5.2.0 -> 7.0.0: what breaks, by who acts', () => run(PLAN_LIVE))
  await events.step('12. upgrade live without the studio having checked its code (expected to stop at the gates)', () =>
    refused(['upgrade', 'live', '--env', 'lab', '--to', '7.0.0', '--yes'], 5),
  )
  await events.step('13. list the ported code, saved calls and dashboards for svcops to check; dry run', async () => {
    listStudioInputs()
    await run(['upgrade', 'live', '--env', 'lab', '--to', '7.0.0', '--dry-run'])
  })
  await events.step('14. upgrade the live production system to 7.0.0, then verify it', async () => {
    await run(['upgrade', 'live', '--env', 'lab', '--to', '7.0.0', '--yes'])
    await run(['verify', 'live', '--env', 'lab'])
  })
  await events.step('15. roll the live upgrade back to 5.2.0 (settings, environments, PSK restored), then verify', async () => {
    await run(['rollback', 'live', '--env', 'lab', '--yes'])
    await run(['verify', 'live', '--env', 'lab'])
  })
}

/** The demo's last words: the commands it ran that a newcomer can type next, on a lab of their own. */
function tryNext(): void {
  process.stdout.write(
    [
      '',
      'Try it yourself: the demo stopped its lab; these commands (each one the demo ran) bring one up, use it and stop it:',
      ...TRY_NEXT.map((args) => `  npx svcops ${args.join(' ')}`),
      'Every command has --help; the lab is described in docs/lab.md, upgrades in docs/upgrade.md, the live system in docs/live.md.',
      '',
    ].join('\n'),
  )
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
