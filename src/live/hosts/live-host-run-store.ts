/**
 * The live system's run store on its host (`svcops:live` with a host): files under
 * /var/lib/svcops/runs, beside the run lock (live-hosts-platform.ts) — every machine that can run
 * the live system's upgrades reaches that host, and no restore of the product touches the folder.
 *
 *   RUN_ID.json           the run's record (one line of JSON)
 *   RUN_ID.journal.jsonl  its journal, one entry a line
 *
 * Both are written whole through the host's transport (writeHostFile: the text on stdin into a new
 * 0600 file a planted link cannot redirect, renamed over the old one; as the SSH user), so a reader
 * never sees half a file and a retried write changes nothing more. The rights it needs: the SSH
 * user may create /var/lib/svcops/runs and write in it (docs/live.md).
 */
import { controllerHost } from '../live-placement.ts'
import type { LiveConfig } from '../../config/schema.ts'
import { errorMessage, OperationError } from '../../core/errors.ts'
import { events } from '../../core/events.ts'
import { runCommand } from '../../core/runner.ts'
import { hostPath, transportFor } from '../../drivers/transports.ts'
import { journalLines, openedRun, type RunSeal } from '../../runs/run-mac.ts'
import type { LockState } from '../../runs/run-presence.ts'
import { isRunId, type RunRecord } from '../../runs/run-record.ts'
import { newestFirst, type RunStore, type RunWrite, type StoredRun } from '../../runs/run-store.ts'
import { writeHostFile, type LiveHost } from './host-files.ts'

/** The run lock's file on the live host (live-hosts-platform.ts takes it). */
export const LIVE_LOCK_PATH = '/var/lib/svcops/live-upgrade.lock'
/** The folder of the live runs on the host: beside the run lock. */
export const LIVE_RUNS_PATH = '/var/lib/svcops/runs'

/** A journal larger than this is not read back (a run writes a few hundred kilobytes at most). */
const MAX_JOURNAL_BYTES = 64 << 20

/** Runs are listed from the newest; older files stay on the host but a listing reads at most this many. */
const LIST_LIMIT = 500

/**
 * Prints every record file of the folder `$1`, one a line, each preceded by its name; links and
 * anything but a regular file are skipped (never followed). Nothing when the folder does not exist.
 */
const LIST_RECORDS = [
  '[ -d "$1" ] && [ ! -L "$1" ] || exit 0',
  'for f in "$1"/*.json; do',
  '  [ -f "$f" ] && [ ! -L "$f" ] || continue',
  '  printf "%s\\t" "${f##*/}"; head -c 1048576 -- "$f"; printf "\\n"',
  'done',
].join('\n')

/** Prints file `$1` (at most `$2` bytes) when it is a regular file, not a link; exit 3 when absent. */
const READ_FILE = '[ -f "$1" ] && [ ! -L "$1" ] || exit 3\nhead -c "$2" -- "$1"'

/** The run store of the live system on the host of `live`. */
export function liveHostRunStore(live: LiveConfig, seal: RunSeal): RunStore {
  // Across hosts, the system controller's host: the run lock is there too.
  const home = controllerHost(live).config
  const where = `${LIVE_RUNS_PATH} on the live host ${home.name}`

  /**
   * One connection for the store's operations while it is open, closed by `close()` (the run's end):
   * a run writes its record and journal at every step boundary, and a new SSH connection for each
   * write cost a handshake every time. After `close()` each operation has a short connection of its
   * own, closed after it; the kept one is closed once the operation under way on it ends, so a late
   * write still finishes. Opening connects to nothing, so that listing runs loads none of the
   * platform's drivers either.
   */
  const openHome = (): LiveHost => ({
    name: home.name,
    config: home,
    transport: transportFor({ url: live.controllerUrl, canary: false, ...home }),
  })
  let kept: LiveHost | undefined
  let closing = false
  let inFlight = 0
  const letGo = async (host: LiveHost): Promise<void> => {
    // A connection that fails to close has nothing left to lose: its command has ended.
    await host.transport.close().catch(() => undefined)
  }
  async function onHost<T>(fn: (host: LiveHost) => Promise<T>): Promise<T> {
    const host = closing ? openHome() : (kept ??= openHome())
    const shared = host === kept
    if (shared) inFlight++
    try {
      return await fn(host)
    } finally {
      if (!shared) await letGo(host)
      else if (--inFlight === 0 && closing) {
        kept = undefined
        await letGo(host)
      }
    }
  }

  const dir = hostPath(home, LIVE_RUNS_PATH)

  async function readFile(host: LiveHost, path: string, limit: number): Promise<string | undefined> {
    const result = await runCommand(host.transport, ['sh', '-c', READ_FILE, 'sh', path, String(limit + 1)], { check: false })
    if (result.code === 3) return undefined
    if (result.code !== 0)
      throw new OperationError(`Reading ${path} on ${host.name} failed: ${result.stderr.trim() || `exit ${result.code}`}.`)
    if (result.stdout.length > limit) throw new OperationError(`${path} on ${host.name} is larger than ${limit} bytes.`)
    return result.stdout
  }

  return {
    where,
    async write({ record, all, recordChanged }: RunWrite) {
      // The journal first: a record read back never names more than its journal holds.
      const journal = seal
        .sealJournal(record.id, all)
        .map((e) => JSON.stringify(e) + '\n')
        .join('')
      await onHost(async (host) => {
        await writeHostFile(host, `${LIVE_RUNS_PATH}/${record.id}.journal.jsonl`, journal)
        // Most step boundaries only add entries: the record file, unchanged, is not written again. When
        // written, it binds the journal's length then, which later writes only lengthen.
        if (recordChanged !== false)
          await writeHostFile(host, `${LIVE_RUNS_PATH}/${record.id}.json`, JSON.stringify(seal.sealRecord(record, all.length)) + '\n')
      })
    },
    async listRecords(environment) {
      const result = await onHost((host) =>
        runCommand(host.transport, ['sh', '-c', LIST_RECORDS, 'sh', dir], { display: `list ${dir}/*.json` }),
      )
      const records = result.stdout.split('\n').flatMap((line): RunRecord[] => {
        const tab = line.indexOf('\t')
        if (tab < 0) return []
        const name = line.slice(0, tab)
        try {
          // Checked against the file's name, the stack's environment and the run key (run-mac.ts).
          return [seal.openRecord(JSON.parse(line.slice(tab + 1)) as unknown, where, { id: name.replace(/\.json$/, '') })]
        } catch (error) {
          events.warn(`Skipping ${name} of ${where}: ${errorMessage(error)}`)
          return []
        }
      })
      return records
        .filter((r) => r.environment === environment)
        .sort(newestFirst)
        .slice(0, LIST_LIMIT)
    },
    async readRun(id): Promise<StoredRun | undefined> {
      if (!isRunId(id)) return undefined
      const files = await onHost(async (host) => {
        const record = await readFile(host, `${dir}/${id}.json`, 1 << 20)
        if (record === undefined) return undefined
        return { record, journal: (await readFile(host, `${dir}/${id}.journal.jsonl`, MAX_JOURNAL_BYTES)) ?? '' }
      })
      if (!files) return undefined
      const { record, journal } = files
      const opened = seal.openRecord(JSON.parse(record) as unknown, where, { id })
      return openedRun(seal, opened, journalLines(journal, `${where}: journal of run ${id}`), where)
    },
    async remove(id) {
      // A refused run: its record, its journal and the files its backup step copied (they hold the PSK).
      if (!isRunId(id)) return
      const paths = [`${dir}/${id}.json`, `${dir}/${id}.journal.jsonl`, `${dir}/${id}.backup`]
      await onHost((host) => runCommand(host.transport, ['rm', '-rf', '--', ...paths], { display: `rm -rf -- ${dir}/${id}.*` }))
    },
    async lockState(run: RunRecord): Promise<LockState> {
      // The lock file names its run; whether that run's process on another machine still lives it cannot say.
      const lock = await onHost((host) => readFile(host, hostPath(home, LIVE_LOCK_PATH), 4096))
      return lock?.split(' ')[0]?.trim() === run.id ? 'unknown' : 'not-held'
    },
    async close() {
      closing = true
      if (kept && inFlight === 0) {
        const host = kept
        kept = undefined
        await letGo(host)
      }
    },
  }
}
