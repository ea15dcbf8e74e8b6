/**
 * The seed's common upgrade problems as they show in a cluster, each checked on what the API says
 * of the recording service's pods (pod-view.ts): the causes that apply where there is no host to
 * log in to. Same findings, same rendering and same exit code as on hosts (diagnose.ts).
 *
 *   the service does not start   config-syntax (its Secret), database-access, image-pull,
 *                                crash-loop, oom-killed, pod-logs
 *   migration fails              schema-change-permission
 *   recordings inaccessible      storage-claim
 *
 * What a pod reports is read from the fields the API gives for it (`state.waiting.reason`,
 * `lastState.terminated.reason`, `restartCount`), and a log line by its level field only.
 */
import type { PodFacts } from '../../drivers/kubernetes.ts'
import { findLogErrors } from '../../drivers/services.ts'
import { checkSchemaChange } from './migration.ts'
import { fine, skipped } from '../../doctor/outcome.ts'
import type { DoctorCause, Finding } from '../../doctor/doctor-types.ts'
import type { ProblemId } from './cause-types.ts'
import type { PodView } from './pod-view.ts'

type Found = Omit<Finding, 'cause' | 'host'>

/** A cause checked in a cluster. */
export type ClusterCause = DoctorCause<PodView, ProblemId>

/** Waiting reasons of a container whose image cannot be had (the kubelet's `images` package). */
const PULL_FAILURES = new Set(['ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'ErrImageNeverPull', 'RegistryUnavailable'])

/** Restarts from which a container that is not waiting in CrashLoopBackOff still counts as crash-looping. */
const RESTARTS_LOOPING = 3

/** The program's own words for where each value comes from, for the fixes. */
const DEPLOY = 'svcops:deploy.recording'

const kubectlLogs = (v: PodView, pod: string) => `kubectl -n ${v.namespace} logs ${pod} -c recording-service --previous`

export const podConfigSyntax: ClusterCause = {
  id: 'config-syntax',
  problem: 'problem-no-start',
  check: 'the Secret the pods read their database connection from exists and holds every variable, the port a number',
  run(v) {
    if ('error' in v.secret)
      return Promise.resolve(
        fine(`read the Secret ${v.secret.name}`, [
          {
            severity: 'error',
            summary: `The Secret ${v.secret.name} the pods read their database connection from cannot be read.`,
            evidence: [v.secret.error],
            remedy: `Run pulumi up -s <stack> (the program writes the Secret from svcops:recording.database and svcops:databasePassword); a pod waiting in CreateContainerConfigError starts once it is there.`,
          },
        ]),
      )
    const data = v.secret.data
    const problems: string[] = []
    for (const key of Object.values(v.variables)) {
      const value = data[key]
      if (value === undefined) problems.push(`${key}: missing`)
      else if (value.trim() === '') problems.push(`${key}: empty`)
      else if ([...value].some((ch) => ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f))
        problems.push(`${key}: holds a control character (a newline pasted with it?)`)
    }
    const port = data[v.variables.port]
    if (port !== undefined && port.trim() !== '' && !(/^\d+$/.test(port) && Number(port) >= 1 && Number(port) <= 65535))
      problems.push(`${v.variables.port}: "${port}" is not a port (expected 1-65535)`)
    const findings: Found[] = problems.length
      ? [
          {
            severity: 'error',
            summary: `The Secret ${v.secret.name} does not give the pods a usable database connection.`,
            evidence: problems.map((p) => `secret ${v.secret.name}: ${p}`),
            remedy: `Correct svcops:recording.database (host, port, name, user) or svcops:databasePassword in the stack file and run pulumi up -s <stack>; never edit the Secret by hand (the program owns it).`,
          },
        ]
      : []
    return Promise.resolve(fine(`${Object.values(v.variables).join(', ')} in the Secret ${v.secret.name}`, findings))
  },
}

export const podDatabaseAccess: ClusterCause = {
  id: 'database-access',
  problem: 'problem-no-start',
  check: "the Secret's credentials open the database (connectivity, password, role), as the pods are given them",
  async run(v) {
    if ('error' in v.secret) return skipped('the Secret cannot be read (see config-syntax)')
    const db = await v.database()
    const d = v.secret.data
    const where = `${d[v.variables.name] ?? '?'} at ${d[v.variables.host] ?? '?'}:${d[v.variables.port] ?? 5432} as ${d[v.variables.user] ?? '?'}`
    if ('client' in db) return fine(`connected to ${where} with the Secret's credentials`)
    if (/does not name a database/.test(db.error)) return skipped(db.error)
    const said = Object.entries(v.logs).flatMap(([pod, l]) =>
      findLogErrors([...l.previous, ...l.current])
        .filter((line) => /database|postgres|connect/i.test(line))
        .slice(-2)
        .map((line) => `${pod}: ${line}`),
    )
    return fine(`connect to ${where}`, [
      {
        severity: 'error',
        summary: `The credentials the pods are given do not open the database ${where}.`,
        evidence: [`from svcops: ${db.error}`, ...said],
        remedy: /password|authentication/i.test(db.error)
          ? `Set the role's current password: pulumi config set --secret svcops:databasePassword, then pulumi up -s <stack>.`
          : `Check that PostgreSQL at ${d[v.variables.host] ?? '?'}:${d[v.variables.port] ?? 5432} runs and accepts the cluster's pods (pg_hba.conf, a firewall, the recording service's NetworkPolicy egress), and svcops:recording.database in the stack file.`,
      },
    ])
  },
}

export const podSchemaChange: ClusterCause = {
  id: 'schema-change-permission',
  problem: 'problem-migration',
  check: "the Secret's role owns (or is a member of the owner of) every table of its schema, and may CREATE in it",
  async run(v) {
    const db = await v.database()
    if (!('client' in db)) return skipped(`no database connection: ${db.error}`)
    const user = 'data' in v.secret ? (v.secret.data[v.variables.user] ?? '?') : '?'
    return checkSchemaChange(db.client, user)
  },
}

/** Parses a Kubernetes quantity of bytes (`2Ti`, `500M`, `1073741824`); undefined when it is not one. */
export function bytesOf(quantity: string | undefined): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?$/.exec(quantity ?? '')
  if (!m) return undefined
  const unit = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15 }
  return Number(m[1]) * (m[2] ? unit[m[2] as keyof typeof unit] : 1)
}

export const storageClaim: ClusterCause = {
  id: 'storage-claim',
  problem: 'problem-recordings',
  check: 'the recordings claim exists, is bound, and has the capacity the stack asks',
  run(v) {
    const c = v.claim
    if ('error' in c)
      return Promise.resolve(
        fine(`read the claim ${c.name}`, [
          {
            severity: 'error',
            summary: `The recordings claim ${c.name} cannot be read: the pods have no storage to mount.`,
            evidence: [c.error],
            remedy: `Run pulumi up -s <stack>; the claim is protected and retained, so a missing one was deleted outside the program: restore it from its PersistentVolume before the pods start.`,
          },
        ]),
      )
    const findings: Found[] = []
    const shown = `claim ${c.name}: phase ${c.phase}, ${c.accessModes.join(',') || 'no access mode'}, class ${c.storageClass ?? '(default)'}, asks ${c.requested ?? '?'}, has ${c.capacity ?? 'nothing'}`
    if (c.phase !== 'Bound')
      findings.push({
        severity: 'error',
        summary: `The recordings claim ${c.name} is ${c.phase}, not Bound: no pod that mounts it can start.`,
        evidence: [shown],
        remedy: `Give it a StorageClass that provisions ${c.accessModes.join(',') || 'its access mode'} (${DEPLOY}.storage.storageClass; several replicas need ReadWriteMany) or a matching PersistentVolume; kubectl -n ${v.namespace} describe pvc ${c.name} shows the provisioner's reason.`,
      })
    const asked = bytesOf(c.requested)
    const has = bytesOf(c.capacity)
    if (c.phase === 'Bound' && asked !== undefined && has !== undefined && has < asked)
      findings.push({
        severity: 'warning',
        summary: `The recordings claim ${c.name} has ${c.capacity}, less than the ${c.requested} the stack asks: the resize has not happened.`,
        evidence: [shown],
        remedy: `Check that its StorageClass allows volume expansion (allowVolumeExpansion) and the resize's conditions (kubectl -n ${v.namespace} describe pvc ${c.name}); some need the pod restarted.`,
      })
    return Promise.resolve(fine(shown, findings))
  },
}

export const imagePull: ClusterCause = {
  id: 'image-pull',
  problem: 'problem-no-start',
  check: 'no pod waits for an image it cannot pull (ErrImagePull, ImagePullBackOff, InvalidImageName)',
  run(v) {
    const stuck = v.pods.filter((p) => p.waiting && PULL_FAILURES.has(p.waiting))
    const findings: Found[] = stuck.length
      ? [
          {
            severity: 'error',
            summary: `${stuck.length} pod(s) cannot pull the image ${v.image ?? '?'}.`,
            evidence: stuck.map((p) => `pod ${p.name}: waiting ${p.waiting}${p.waitingMessage ? `: ${p.waitingMessage}` : ''}`),
            remedy: `Check that ${v.image ?? 'the image'} exists in the registry (${DEPLOY}.image, the version, ${DEPLOY}.digest) and that svcops:deploy.imagePullSecret names a Secret that may read it; then run the upgrade again (or roll back).`,
          },
        ]
      : []
    return Promise.resolve(fine(`the waiting reason of ${v.pods.length} pod(s)`, findings))
  },
}

/** A pod whose container keeps ending other than by the kernel's OOM killer. */
function crashing(p: PodFacts): boolean {
  if (p.terminated?.reason === 'OOMKilled') return false
  return p.waiting === 'CrashLoopBackOff' || (p.restarts >= RESTARTS_LOOPING && !!p.terminated)
}

export const crashLoop: ClusterCause = {
  id: 'crash-loop',
  problem: 'problem-no-start',
  check: `no pod in CrashLoopBackOff or restarted ${RESTARTS_LOOPING} times or more (but by the OOM killer: oom-killed)`,
  run(v) {
    const looping = v.pods.filter(crashing)
    const findings: Found[] = looping.map((p) => ({
      severity: 'error',
      summary: `Pod ${p.name} keeps ending: ${p.restarts} restart(s)${p.waiting === 'CrashLoopBackOff' ? ', now in CrashLoopBackOff' : ''}.`,
      evidence: [
        `pod ${p.name}: restartCount ${p.restarts}${p.terminated ? `, last ended ${p.terminated.reason} with exit code ${p.terminated.exitCode}${p.terminated.finishedAt ? ` at ${p.terminated.finishedAt}` : ''}` : ''}`,
        ...(v.logs[p.name]?.previous ?? []).slice(-3).map((l) => `${p.name} (before its restart): ${l}`),
      ],
      remedy: `Its last lines say why it ends (${kubectlLogs(v, p.name)}); the causes config-syntax and database-access name the usual ones. Roll back (svcops rollback recording) if it began with the upgrade.`,
    }))
    return Promise.resolve(fine(`restarts and waiting reason of ${v.pods.length} pod(s)`, findings))
  },
}

export const oomKilled: ClusterCause = {
  id: 'oom-killed',
  problem: 'problem-no-start',
  check: 'no container ended by the OOM killer (lastState.terminated.reason OOMKilled)',
  run(v) {
    const killed = v.pods.filter((p) => p.terminated?.reason === 'OOMKilled')
    const findings: Found[] = killed.length
      ? [
          {
            severity: 'error',
            summary: `${killed.length} pod(s) were killed for using more memory than their limit${killed[0]?.memoryLimit ? ` (${killed[0].memoryLimit})` : ''}.`,
            evidence: killed.map(
              (p) =>
                `pod ${p.name}: OOMKilled (exit code ${p.terminated?.exitCode ?? '?'}${p.terminated?.finishedAt ? ` at ${p.terminated.finishedAt}` : ''}), restartCount ${p.restarts}, memory limit ${p.memoryLimit ?? 'none'}`,
            ),
            remedy: `Raise ${DEPLOY}.resources.limits.memory (and requests.memory) in the stack file and run pulumi up -s <stack>; a large content info cache (contentInfoCacheSize) is the service's own memory.`,
          },
        ]
      : []
    return Promise.resolve(fine(`how the containers of ${v.pods.length} pod(s) last ended`, findings))
  },
}

export const podLogs: ClusterCause = {
  id: 'pod-logs',
  problem: 'problem-no-start',
  check: 'no log record at an error level (ERROR, FATAL, PANIC, CRITICAL) in the last lines of each pod, before its last restart too',
  run(v) {
    const findings: Found[] = []
    for (const p of v.pods) {
      const l = v.logs[p.name] ?? { current: [], previous: [] }
      const errors = [
        ...findLogErrors(l.previous).map((e) => `${p.name} (before its restart): ${e}`),
        ...findLogErrors(l.current).map((e) => `${p.name}: ${e}`),
      ]
      if (errors.length)
        findings.push({
          severity: 'error',
          summary: `Pod ${p.name} logged ${errors.length} error record(s).`,
          evidence: errors.slice(-3),
          remedy: `Read the records in full (kubectl -n ${v.namespace} logs ${p.name} -c recording-service); the causes above name the usual ones (database, configuration, storage).`,
        })
    }
    return Promise.resolve(fine(`the last lines of ${v.pods.length} pod(s)`, findings))
  },
}

/** Every cluster cause, in the seed's order of problems. */
export const CLUSTER_CAUSES: readonly ClusterCause[] = [
  podConfigSyntax,
  podDatabaseAccess,
  imagePull,
  crashLoop,
  oomKilled,
  podLogs,
  podSchemaChange,
  storageClaim,
]
