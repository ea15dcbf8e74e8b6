/**
 * The steps a site adds (playbooks/site/) on the live upgrade of a lab: a notice before it (a local
 * `$` command appending to a file) and the ingest drained on the live host before the first stop
 * and restored after the verification (through the platform, with an undo). Each is journaled,
 * shown in the dry run with its command, undone by the rollback of a failed upgrade, and not run
 * again when a killed run is resumed. The mark is svcops' own file in the SSH user's folder: a link
 * planted at its name, or at the name it had in /var/tmp, is never written through.
 */
import {
  chownSync,
  existsSync,
  lchownSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Journal, listRuns } from '../../src/runs/journal.ts'
import { DRAIN_MARK } from '../../playbooks/site/ingest-drain.ts'
import { gateIds, startLiveLab, type LiveLab } from '../support/live-lab.ts'

let lab: LiveLab
/** Where the drain mark was before issue 43: a folder every local user may write. */
const OLD_DRAIN_MARK = '/var/tmp/svcops-site/ingest.drain'
const notices = join(mkdtempSync(join(tmpdir(), 'svcops-site-')), 'notices.log')

beforeAll(async () => {
  process.env.SVCOPS_SITE_NOTICE_FILE = notices // the CLI children inherit it
  // The resume that follows the kill is a process, as an operator starts it; the others read in the worker.
  lab = await startLiveLab({ version: '5.2.0', cli: 'in-process' })
}, 240_000)

afterAll(async () => {
  delete process.env.SVCOPS_SITE_NOTICE_FILE
  await lab?.stop()
})

const acks = (from: string, to: string): string[] => ['--ack', gateIds(lab.live(), from, to).join(',')]
const noticeLines = (): string[] => (existsSync(notices) ? readFileSync(notices, 'utf8').trim().split('\n') : [])
/** The journal's lines of run `id`, as `step status`. */
function journalOf(id: string): string[] {
  return Journal.open(id, lab.runsDir)
    .entries()
    .map((e) => `${e.step} ${e.status}`)
}

describe('site steps on the live upgrade', () => {
  it('--dry-run shows each site step with its command and the rollback undo; nothing runs', async () => {
    const run = await lab.svcops(['upgrade', 'live', '--to', '7.0.0', '--dry-run', ...acks('5.2.0', '7.0.0')])
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toContain('site-notice')
    expect(run.stdout).toContain(`>> ${notices}`)
    expect(run.stdout).toContain('site-drain-ingest')
    expect(run.stdout).toContain(`write ${lab.file(DRAIN_MARK)} (0600, a new file renamed over it; a link there is replaced)`)
    expect(run.stdout).toContain(`rollback:site-restore-ingest`)
    expect(run.stdout).toContain(`rm -f -- ${lab.file(DRAIN_MARK)}`)
    const stepLines = run.stdout
      .split('\n')
      .filter((l) => / — /.test(l))
      .map((l) => l.replace(/^\[[^\]]+\] /, '').split(' — ')[0])
    expect(stepLines.slice(0, 2)).toEqual(['site-notice', 'preflight']) // the notice comes first
    expect(stepLines.indexOf('site-drain-ingest')).toBe(stepLines.indexOf('stop') - 1) // just before the first stop
    expect(stepLines.indexOf('site-restore-ingest')).toBe(stepLines.indexOf('verify') + 1)
    expect(noticeLines()).toEqual([])
    expect(existsSync(lab.file(DRAIN_MARK))).toBe(false)
  })

  it('a failed upgrade after the drain is rolled back and the drain undone, after the rollback (exit 4)', async () => {
    const run = await lab.svcops(['upgrade', 'live', '--to', '7.0.1', '--yes', ...acks('5.2.0', '7.0.1')])
    expect(run.code, run.stderr).toBe(4)
    const id = listRuns(lab.runsDir)[0]?.id ?? ''
    const steps = journalOf(id)
    expect(steps).toContain('site-notice ok')
    expect(steps.indexOf('site-drain-ingest ok')).toBeLessThan(steps.indexOf('stop start'))
    expect(steps).not.toContain('site-restore-ingest start') // the verification never passed
    expect(steps.indexOf('rollback:site-restore-ingest ok')).toBeGreaterThan(steps.lastIndexOf('rollback:verify ok'))
    expect(existsSync(lab.file(DRAIN_MARK))).toBe(false)
    expect(Object.values(lab.versions())).toEqual(['5.2.0', '5.2.0', '5.2.0', '5.2.0'])
    expect(noticeLines()).toHaveLength(1)
    expect(noticeLines()[0]).toContain(`to 7.0.1 starts (run ${id})`)
  })

  it('a run killed after the drain is resumed without notice or drain again; the ingest is restored at the end; a planted link is never written through', async () => {
    // Links planted at the mark's old name (in /var/tmp, which every local user may write) and at its
    // name now, each to a file svcops must not write: it never writes through either. Every file is
    // the SSH user's (the host tree's owner), so that svcops, logged in as that user, could write the
    // targets if it followed a link.
    const { uid, gid } = statSync(lab.file('/'))
    /** Makes folder `dir` of the host and those above it that are missing, the SSH user's. */
    const ownedDir = (dir: string): void => {
      if (existsSync(lab.file(dir))) return
      ownedDir(dirname(dir))
      mkdirSync(lab.file(dir))
      chownSync(lab.file(dir), uid, gid)
    }
    ownedDir('/srv/victims')
    const planted = [OLD_DRAIN_MARK, DRAIN_MARK].map((mark, i) => {
      const victim = lab.file(`/srv/victims/victim-${i}`)
      writeFileSync(victim, 'not svcops to write\n')
      chownSync(victim, uid, gid)
      ownedDir(dirname(mark))
      rmSync(lab.file(mark), { force: true })
      symlinkSync(victim, lab.file(mark))
      lchownSync(lab.file(mark), uid, gid)
      return victim
    })
    const killed = await lab.svcopsKilledAt(['upgrade', 'live', '--to', '7.0.0', '--yes', ...acks('5.2.0', '7.0.0')], 'site-drain-ingest')
    expect(killed.signal).toBe('SIGKILL')
    const id = listRuns(lab.runsDir)[0]?.id ?? ''
    // Drained, nothing stopped yet: the mark is a file of svcops' own where the link was; the links' targets are as they were.
    expect(lstatSync(lab.file(DRAIN_MARK)).isFile()).toBe(true)
    expect(readFileSync(lab.file(DRAIN_MARK), 'utf8')).toBe('drained\n')
    expect(lstatSync(lab.file(OLD_DRAIN_MARK)).isSymbolicLink()).toBe(true)
    for (const victim of planted) expect(readFileSync(victim, 'utf8')).toBe('not svcops to write\n')
    const resumed = await lab.svcopsProcess(['resume', id])
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0)
    const steps = journalOf(id)
    expect(steps.filter((s) => s === 'site-drain-ingest start')).toHaveLength(1)
    expect(steps.filter((s) => s === 'site-notice start')).toHaveLength(1)
    expect(steps.indexOf('site-restore-ingest ok')).toBeGreaterThan(steps.indexOf('verify ok'))
    expect(existsSync(lab.file(DRAIN_MARK))).toBe(false)
    for (const victim of planted) expect(readFileSync(victim, 'utf8')).toBe('not svcops to write\n')
    expect(noticeLines()).toHaveLength(2)
    expect(Object.values(lab.versions())).toEqual(['7.0.0', '7.0.0', '7.0.0', '7.0.0'])
  })
})
