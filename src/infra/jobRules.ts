/**
 * What a scheduled svcops job in the cluster needs from the stack, checked when the program starts:
 * a schedule whose job would fail at 2 a.m. for want of a mount or a key is refused at `pulumi
 * preview`, naming everything missing at once. The paths are the ones `scheduledJobs.ts` mounts.
 */
import type { DeployConfig } from '../config/deploy.ts'
import type { Environment } from '../config/schema.ts'

/** Where a scheduled job's container finds what it needs. */
export const JOB_PATHS = {
  /** The stack file as Pulumi reads it, from a ConfigMap the program writes (the backup's `SVCOPS_STACKS_DIR`). */
  stacks: '/etc/svcops/stacks',
  /**
   * The upgrade's `SVCOPS_STACKS_DIR`: a writable folder next to the image's Pulumi.yaml
   * (/opt/svcops, `stackConfigDir: stacks`) holding a 0600 copy of that file, which `pulumi config
   * set --path` rewrites.
   */
  projectStacks: '/opt/svcops/stacks',
  /** 0600 copies of the files of `jobs.credentialsSecret`. */
  credentials: '/etc/svcops/credentials',
  /** 0600 copies of the files of `jobs.backupKeysSecret`. */
  backupKeys: '/etc/svcops/backup-keys',
  /** `jobs.runsClaim`: run folders and state that outlive the pod. */
  data: '/var/lib/svcops',
  runs: '/var/lib/svcops/runs',
  state: '/var/lib/svcops/state',
} as const

/** Directories whose files a job can read: the copies of the two Secrets. */
const FILE_DIRS = [JOB_PATHS.credentials, JOB_PATHS.backupKeys]

/** Every file the environment names, with its dot-path: secret references, SSH keys, key lists. */
export function referencedFiles(env: Environment): Array<{ path: string; file: string }> {
  const found: Array<{ path: string; file: string }> = []
  const walk = (value: unknown, path: string): void => {
    if (Array.isArray(value)) {
      value.forEach((v, i) => walk(v, `${path}[${i}]`))
      return
    }
    if (typeof value !== 'object' || value === null) return
    for (const [key, v] of Object.entries(value)) {
      const at = path ? `${path}.${key}` : key
      if ((key === 'file' || key === 'keyFile') && typeof v === 'string') found.push({ path: at, file: v })
      else walk(v, at)
    }
  }
  const { manager, recording, backup, notify } = env
  walk({ manager, recording, notify }, '')
  if (backup) {
    walk({ backup: { ...backup, recipients: undefined, signers: undefined } }, '')
    backup.recipients.forEach((file, i) => found.push({ path: `backup.recipients[${i}]`, file }))
    backup.signers?.forEach((file, i) => found.push({ path: `backup.signers[${i}]`, file }))
  }
  return found
}

/**
 * What the scheduled jobs of `deploy` lack, one phrase each naming the field; empty when they can
 * run.
 */
export function scheduledJobProblems(env: Environment, deploy: DeployConfig): string[] {
  const schedules = [
    deploy.upgradeSchedule ? 'upgradeSchedule' : '',
    deploy.liveUpgradeSchedule ? 'liveUpgradeSchedule' : '',
    deploy.backupSchedule ? 'backupSchedule' : '',
  ].filter(Boolean)
  if (schedules.length === 0) return []
  const problems: string[] = []
  const jobs = deploy.jobs
  if (!jobs) problems.push('deploy.jobs is missing (image, credentialsSecret, backupKeysSecret, runsClaim)')
  if (deploy.liveUpgradeSchedule) {
    // The live system's upgrade job runs `pulumi up` of this stack's live components: the Kubernetes platform only.
    if (env.live?.platform !== 'kubernetes')
      problems.push(
        'svcops:live.platform is not kubernetes (deploy.liveUpgradeSchedule upgrades the live components of this stack with pulumi up; a live system on hosts is upgraded from a host)',
      )
    else problems.push(...clusterUpgradeProblems(env, 'live.platform'))
  }
  // The live upgrade alone backs up no database; the recording service's upgrade and the backup do.
  if (!deploy.upgradeSchedule && !deploy.backupSchedule) return [...new Set(problems)]
  const backup = env.backup
  if (!backup) {
    problems.push('backup is missing (the job backs up the database: store, recipients, identity, signingKey)')
  } else {
    if (!backup.identity) problems.push('backup.identity is missing (the test restore after each backup and a rollback decrypt with it)')
    if (!backup.store.path.startsWith('/')) problems.push(`backup.store.path "${backup.store.path}" is not an absolute path`)
    if (backup.store.ssh) {
      if (!backup.store.ssh.hostKey && !backup.store.ssh.trustOnFirstUse)
        problems.push('backup.store.ssh.hostKey is missing (a job never connects to an unpinned store)')
    } else if (jobs && !jobs.backupStoreClaim) {
      problems.push(
        `deploy.jobs.backupStoreClaim is missing (backup.store.path ${backup.store.path} is a local directory: it needs a volume, or give backup.store an ssh section)`,
      )
    }
  }
  if (deploy.upgradeSchedule && env.recording?.platform === 'kubernetes')
    problems.push(...clusterUpgradeProblems(env, 'recording.platform'))
  for (const { path, file } of referencedFiles(env)) {
    if (!FILE_DIRS.some((dir) => file.startsWith(`${dir}/`) && !file.slice(dir.length).includes('/..')))
      problems.push(`${path} "${file}" is not in a mounted Secret (expected a file under ${FILE_DIRS.join(' or ')})`)
  }
  return [...new Set(problems)]
}

/**
 * What the scheduled upgrade on the Kubernetes platform needs besides the mounts: it runs `pulumi`
 * and the client library on the kubeconfig its init container writes for the job's ServiceAccount,
 * under the name `kubernetes:context` gives (the program's provider and svcops select it), so the
 * stack must name a context and must not point at a kubeconfig of another machine.
 */
function clusterUpgradeProblems(env: Environment, platform: 'recording.platform' | 'live.platform'): string[] {
  const problems: string[] = []
  if (!env.kubernetes?.context)
    problems.push(
      `kubernetes:context is missing (${platform} kubernetes: the upgrade job writes a kubeconfig of that name for its ServiceAccount, which Pulumi and svcops select)`,
    )
  if (env.kubernetes?.kubeconfig)
    problems.push(
      `kubernetes:kubeconfig is set (${platform} kubernetes: the upgrade job uses the kubeconfig of its ServiceAccount; a kubeconfig from the stack would replace it)`,
    )
  return problems
}
