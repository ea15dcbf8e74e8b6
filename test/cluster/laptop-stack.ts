/**
 * The stack the real-cluster suite deploys (`npm run test:cluster`): staging's stack file made to fit
 * a laptop cluster (kind or k3d, one node, no GPU, no capture cards, a local-path storage class).
 * What changes, and why:
 *
 * - every image comes from the suite's registry prefix (built and loaded by the suite, images.ts);
 * - no GPU or capture-card requests, node selectors or tolerations: the node has none, and a pod
 *   asking for `nvidia.com/gpu` would stay Pending;
 * - small CPU and memory requests, so that every component fits on one node;
 * - the recordings' claim ReadWriteOnce without a storage class (kind's `standard` local-path
 *   provisioner offers nothing else), so one replica of the recording service (the program refuses
 *   a ReadWriteOnce claim for several: every replica writes the recordings);
 * - no TLS, no image pull Secret (the images are loaded into the node);
 * - the scheduled jobs on svcops' own image, their Secrets and claims created by the suite, and
 *   schedules that never fire by themselves (the suite starts each job once);
 * - the backup keys named where the jobs mount them (`/etc/svcops/backup-keys/...`, as
 *   `scheduledJobProblems` requires of a stack with schedules): the suite's Secret holds them there
 *   in the jobs, and svcops on this machine reads the same paths.
 */
import { JOB_PATHS } from '../../src/infra/jobRules.ts'

export interface LaptopStackOptions {
  namespace: string
  context: string
  registry: string
  /** Tag of svcops' image. */
  tag: string
  /** Tag of the manager image: `deploy.manager.version`, a release number. */
  managerVersion: string
  database: { host: string; port: number }
  managerUrl: string
  managerEmail: string
  /** The live production system's release the stack starts at. */
  liveVersion: string
  /** The live system's scheduled upgrade: its target and the gates acknowledged for it. */
  liveUpgrade: { to: string; acks: string[] }
  /** Where the suite keeps the backup store on this machine. */
  backupDir: string
}

/** The backup key files of the suite's Secret (`svcops backup keygen`'s names), as the jobs and this machine read them. */
export const BACKUP_KEY_FILES = { recipient: 'backup.pub.asc', identity: 'backup.key.asc' } as const

/** The names of the scheduled jobs' Secrets and claims, which the suite creates before `pulumi up`. */
export const JOB_OBJECTS = {
  credentialsSecret: 'svcops-credentials',
  backupKeysSecret: 'svcops-backup-keys',
  backupStoreClaim: 'svcops-backups',
  runsClaim: 'svcops-runs',
} as const

/** A cron expression that does not fire in the suite's lifetime (29 February, 04:05). */
const NEVER = '5 4 29 2 *'

const SMALL = { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '256Mi' } }

type Doc = { config: Record<string, unknown> }
type Section = Record<string, unknown>

/** Staging's stack document `doc` (parsed stacks/Pulumi.staging.yaml), changed in place for a laptop cluster. */
export function makeLaptopStack(doc: Doc, o: LaptopStackOptions): Doc {
  const deploy = doc.config['svcops:deploy'] as Record<string, Section>
  doc.config['kubernetes:context'] = o.context
  deploy.namespace = o.namespace as never
  deploy.tls = false as never
  delete deploy.imagePullSecret
  const fit = (section: Section): Section => {
    return { ...section, resources: SMALL, nodeSelector: {}, tolerations: [] }
  }
  deploy.manager = { ...fit(deploy.manager ?? {}), image: `${o.registry}/svc/manager`, version: o.managerVersion }
  deploy.recording = {
    ...fit(deploy.recording ?? {}),
    image: `${o.registry}/svc/recording`,
    replicas: 1,
    storage: { size: '1Gi', accessMode: 'ReadWriteOnce' },
  }
  const live = deploy.live as Record<string, Section>
  live.version = o.liveVersion as never
  for (const [key, component] of Object.entries(LIVE_IMAGES))
    live[key] = { ...fit(live[key] ?? {}), image: `${o.registry}/svc/${component}`, replicas: 1 }
  // The lab's components serve no Prometheus metrics; the metrics check says "not checked".
  delete live.metrics
  deploy.jobs = { image: `${o.registry}/svcops:${o.tag}`, ...JOB_OBJECTS }
  deploy.upgradeSchedule = { schedule: NEVER, timeZone: 'Etc/UTC', to: '2.0.0' }
  deploy.liveUpgradeSchedule = { schedule: NEVER, timeZone: 'Etc/UTC', ...o.liveUpgrade }
  deploy.backupSchedule = { schedule: NEVER, timeZone: 'Etc/UTC' }
  doc.config['svcops:recording'] = {
    platform: 'kubernetes',
    version: '1.5.0',
    database: {
      host: o.database.host,
      port: o.database.port,
      name: 'recordings',
      user: 'recorder',
      password: { env: 'SVCOPS_E2E_DB_PASSWORD' },
    },
  }
  doc.config['svcops:live'] = { platform: 'kubernetes' }
  doc.config['svcops:manager'] = {
    ...(doc.config['svcops:manager'] as Section),
    url: o.managerUrl,
    email: o.managerEmail,
    allowInsecureHttp: true,
  }
  doc.config['svcops:backup'] = {
    store: { path: o.backupDir },
    recipients: [`${JOB_PATHS.backupKeys}/${BACKUP_KEY_FILES.recipient}`],
    identity: { file: `${JOB_PATHS.backupKeys}/${BACKUP_KEY_FILES.identity}` },
  }
  return doc
}

/** The live components' keys in `deploy.live` and their image names. */
export const LIVE_IMAGES = {
  systemController: 'system-controller',
  ingest: 'ingest',
  pipeline: 'pipeline',
  controlPanel: 'control-panel',
} as const
