/**
 * The live system's lock holds while its holder lives, on the lab (5.2.0 -> 6.0.0): a live upgrade
 * frozen right after it stopped the control panel (SIGSTOP at that journal boundary: alive, holding
 * the lock, as in a long step) is not rolled back by `svcops resume ID --rollback --yes` from
 * another machine's runs folder — refused, naming the holder — however much the resume names its
 * run. Once the holder is killed (SIGKILL), the same resume takes the lock over and rolls back.
 */
import { mkdtempSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect, it } from 'vitest'
import { LIVE_LOCK_PATH } from '../../src/live/hosts/live-hosts-platform.ts'
import { listRuns } from '../../src/runs/journal.ts'
import { crashFailpointEnv, runSvcops, type CliRun } from '../support/cli.ts'
import { gateIds, useLiveLab } from '../support/live-lab.ts'

const lab = useLiveLab({ version: '5.2.0' })

/** The state letter of process `pid` (`T` stopped, `Z` zombie), or undefined once it is gone. */
function stateOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]
  } catch {
    return undefined
  }
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1200; i++) {
    if (check()) return
    await new Promise((r) => setTimeout(r, 250))
  }
  throw new Error(`${what} did not happen within 300 s`)
}

it('resume --rollback from another machine is refused while the holder lives, and proceeds once it was killed', async () => {
  const before = lab().snapshot()
  let pid = 0
  const holder: Promise<CliRun> = runSvcops(
    [
      '--stack-file',
      lab().envFile,
      'upgrade',
      'live',
      '--to',
      '6.0.0',
      '--yes',
      '--ack',
      gateIds(lab().live(), '5.2.0', '6.0.0').join(','),
    ],
    {
      env: { SVCOPS_RUNS_DIR: lab().runsDir, ...crashFailpointEnv('stop@control-panel', 'SIGSTOP') },
      onSpawn: (p) => (pid = p),
    },
  )
  try {
    await until(() => pid !== 0 && stateOf(pid) === 'T', 'the upgrade stopping after the control panel')
    const id = listRuns(lab().runsDir)[0]?.id ?? ''
    expect(lab().read(LIVE_LOCK_PATH)).toMatch(new RegExp(`^${id} \\S+ ${pid} `))

    const elsewhere = { env: { SVCOPS_RUNS_DIR: mkdtempSync(join(lab().runsDir, '..', 'elsewhere-')) } }
    const refused = await runSvcops(['--stack-file', lab().envFile, 'resume', id, '--rollback', '--yes'], elsewhere)
    expect(refused.code, refused.stdout + refused.stderr).toBe(3)
    expect(refused.stderr).toContain(`is locked by run ${id} (`)
    expect(refused.stderr).toContain(`pid ${pid}) since `)
    expect(refused.stderr).toContain(`whose holder is alive: its process ${pid} runs on this machine.`)
    // Nothing was rolled back: the lock is still the holder's, the control panel still stopped on 5.2.0.
    expect(lab().read(LIVE_LOCK_PATH)).toMatch(new RegExp(`^${id} \\S+ ${pid} `))
    expect(lab().state('control-panel')).not.toBe('RUNNING')

    process.kill(pid, 'SIGKILL')
    expect((await holder).signal).toBe('SIGKILL')
    const resumed = await runSvcops(['--stack-file', lab().envFile, 'resume', id, '--rollback', '--yes'], elsewhere)
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0)
    expect(resumed.stderr).toContain(`Taking over the host lock of`)
    expect(Object.values(lab().versions())).toEqual(['5.2.0', '5.2.0', '5.2.0', '5.2.0'])
    expect(lab().state('control-panel')).toBe('RUNNING')
    expect(lab().read(LIVE_LOCK_PATH)).toBeUndefined()
    expect(lab().snapshot()).toEqual(before)
  } finally {
    if (stateOf(pid) !== undefined) process.kill(pid, 'SIGKILL')
    await holder
  }
})
