/**
 * The live system's run store on Kubernetes (`svcops:live.platform: kubernetes`): ConfigMaps in the
 * stack's namespace — every machine that can run the live system's upgrades reaches the cluster, and
 * no restore of the product touches them. Two per run, so that listing reads the records only:
 *
 *   svcops-run-<id>      label svcops.io/run-store=record; `run.json`, the run's record
 *   svcops-journal-<id>  label svcops.io/run-store=journal; `journal.jsonl`, one entry a line
 *
 * (`<id>` in lower case, as object names must be.) Each is written whole (a merge patch of its one
 * key, created when absent), the journal first, so a record read back never names more than its
 * journal holds. A ConfigMap holds at most 1 MiB: a journal larger than that is not written, a
 * failed write as any other (the run stops at its next step boundary: src/runs/run-mirror.ts). The
 * rights: get, list, create, patch and delete configmaps in the namespace (docs/live.md).
 */
import type { Environment } from '../../config/schema.ts'
import { errorMessage, OperationError } from '../../core/errors.ts'
import { events } from '../../core/events.ts'
import { ConfigMapClient } from '../../drivers/kubernetes-configmaps.ts'
import { journalLines, openedRun, type RunSeal } from '../../runs/run-mac.ts'
import { isRunId, parseRunRecord, type RunRecord } from '../../runs/run-record.ts'
import { newestFirst, type RunStore, type RunWrite, type StoredRun } from '../../runs/run-store.ts'

const STORE_LABEL = 'svcops.io/run-store'
const MANAGED = { 'app.kubernetes.io/managed-by': 'svcops' }
/** What one ConfigMap may hold, less room for its metadata. */
const MAX_DATA_BYTES = 1_000_000
/** Runs are listed from the newest; older ConfigMaps stay but a listing keeps at most this many. */
const LIST_LIMIT = 500

const recordMap = (id: string): string => `svcops-run-${id.toLowerCase()}`
const journalMap = (id: string): string => `svcops-journal-${id.toLowerCase()}`

/** The run store of the live system on Kubernetes, in the namespace of `env`'s stack. Nothing connects until used. */
export function liveClusterRunStore(env: Environment, seal: RunSeal): RunStore {
  const namespace = env.deploy?.namespace ?? 'default'
  const where = `ConfigMaps svcops-run-* in the namespace ${namespace}`
  let client: ConfigMapClient | undefined
  // The kubeconfig is read at the first call, not when the store is named (listing runs of another system needs none).
  const api = (): ConfigMapClient =>
    (client ??= new ConfigMapClient({
      namespace,
      ...(env.kubernetes?.context ? { context: env.kubernetes.context } : {}),
      ...(env.kubernetes?.kubeconfig ? { kubeconfig: env.kubernetes.kubeconfig } : {}),
      ...(env.deploy?.allowInsecureSkipTlsVerify ? { allowInsecureSkipTlsVerify: true } : {}),
    }))

  return {
    where,
    async write({ record, all }: RunWrite) {
      const journal = seal
        .sealJournal(record.id, all)
        .map((e) => JSON.stringify(e) + '\n')
        .join('')
      if (Buffer.byteLength(journal) > MAX_DATA_BYTES)
        throw new OperationError(`the journal of run ${record.id} is larger than a ConfigMap holds (${MAX_DATA_BYTES} bytes)`)
      await api().write(journalMap(record.id), { ...MANAGED, [STORE_LABEL]: 'journal' }, { 'journal.jsonl': journal })
      await api().write(
        recordMap(record.id),
        { ...MANAGED, [STORE_LABEL]: 'record' },
        // Written after the journal, binding its length: a journal read back shorter is refused.
        { 'run.json': JSON.stringify(seal.sealRecord(record, all.length)) },
      )
    },
    async listRecords(environment) {
      const maps = await api().list({ [STORE_LABEL]: 'record' })
      const records = maps.flatMap((m): RunRecord[] => {
        try {
          // Checked against the stack's environment and the run key (run-mac.ts); the map's name is the id in lower case.
          return [seal.openRecord(JSON.parse(m.data['run.json'] ?? '') as unknown, `${where}: ${m.name}`, {})]
        } catch (error) {
          events.warn(`Skipping ${m.name} of ${where}: ${errorMessage(error)}`)
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
      const record = await api().read(recordMap(id))
      if (!record?.['run.json']) return undefined
      const journal = (await api().read(journalMap(id)))?.['journal.jsonl'] ?? ''
      const raw = JSON.parse(record['run.json']) as unknown
      // A ConfigMap of another run under this name (ids differ only in case) is not this run.
      if (parseRunRecord(raw, `${where}: run ${id}`).id !== id) return undefined
      const opened = seal.openRecord(raw, where, { id })
      return openedRun(seal, opened, journalLines(journal, `${where}: journal of run ${id}`), where)
    },
    async remove(id) {
      await api().remove(recordMap(id))
      await api().remove(journalMap(id))
    },
    // The lock is a file where svcops runs (live-cluster-handle.ts): whether its holder lives, the cluster cannot say.
    lockState: () => Promise.resolve('unknown'),
    close: () => Promise.resolve(),
  }
}
