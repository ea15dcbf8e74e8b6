/**
 * The recording service on Kubernetes as its pods see it, read through the API only (the doctor
 * writes nothing): the Deployment's pod template (which Secret the container reads its database
 * connection from, which claim holds the recordings), every pod's state (why it waits, how its
 * last run ended, its restarts), each pod's last log lines (before its last restart too), the
 * Secret's values, the claim, and the database reached with exactly the Secret's credentials.
 *
 * The database is reached from where svcops runs (the scheduled job: inside the cluster; a
 * workstation: its own network), with the host, port, name, role and password the pods are given:
 * it proves the credentials and the role's privileges, and that the database answers at that
 * address from here; what the pods themselves met on the way is their log lines, shown beside it.
 */
import pg from 'pg'
import { errorMessage } from '../../core/errors.ts'
import { registerSecret } from '../../core/redact.ts'
import type { ClaimFacts, KubernetesDriver, PodFacts } from '../../drivers/kubernetes.ts'

/** Lines of each pod's log read. */
const POD_LOG_LINES = 100

/** What the pods read their database connection from: the Secret's name and its decoded values. */
export type SecretRead = { name: string; data: Record<string, string> } | { name: string; error: string }

/** The service's pods, their Secret and claim, as the doctor's cluster causes read them. */
export interface PodView {
  namespace: string
  deployment: string
  /** The product prefix of the variables (`SVC`). */
  prefix: string
  image: string | undefined
  pods: PodFacts[]
  /** Each pod's last lines: of its current container, and of the one before its last restart. */
  logs: Record<string, { current: string[]; previous: string[] }>
  secret: SecretRead
  claim: ClaimFacts | { name: string; error: string }
  /** The database's connection variables the Secret holds (`SVC_DB_HOST`, ...). */
  variables: { host: string; port: string; name: string; user: string; password: string }
  /** A connection with the Secret's credentials, or why there is none (memoised). */
  database(): Promise<{ client: pg.Client } | { error: string }>
  close(): Promise<void>
}

/** Reads the view of the recording service's Deployment through `kube`. */
export async function openPodView(kube: KubernetesDriver, prefix: string): Promise<PodView> {
  const t = kube.target
  const p = prefix.toUpperCase()
  const variables = { host: `${p}_DB_HOST`, port: `${p}_DB_PORT`, name: `${p}_DB_NAME`, user: `${p}_DB_USER`, password: `${p}_DB_PASSWORD` }
  const deployment = await kube.readDeploymentObject()
  const pod = deployment.spec?.template.spec
  const container = pod?.containers.find((c) => c.name === t.container)
  // What the pod template says the container reads; the program's names where it says nothing.
  const secretName = container?.envFrom?.find((e) => e.secretRef?.name)?.secretRef?.name ?? `${t.deployment}-database`
  const claimName = pod?.volumes?.find((v) => v.persistentVolumeClaim)?.persistentVolumeClaim?.claimName ?? `${t.deployment}-recordings`

  const pods = (await kube.listPods()).filter((x) => !x.deleting)
  const logs: PodView['logs'] = {}
  for (const x of pods) {
    // A pod that never started has no log; a restarted one's previous log says why it ended.
    const current = await kube.podLog(x.name, POD_LOG_LINES).catch(() => [])
    const previous = x.restarts > 0 ? await kube.podLog(x.name, POD_LOG_LINES, { previous: true }).catch(() => []) : []
    logs[x.name] = { current, previous }
  }
  let secret: SecretRead
  try {
    const data = await kube.readSecretData(secretName)
    if (data[variables.password]) registerSecret(data[variables.password])
    secret = { name: secretName, data }
  } catch (error) {
    secret = { name: secretName, error: errorMessage(error) }
  }
  let claim: PodView['claim']
  try {
    claim = await kube.readClaim(claimName)
  } catch (error) {
    claim = { name: claimName, error: errorMessage(error) }
  }

  let connection: { client: pg.Client } | { error: string } | undefined
  return {
    namespace: t.namespace,
    deployment: t.deployment,
    prefix: p,
    image: container?.image,
    pods,
    logs,
    secret,
    claim,
    variables,
    async database() {
      if (connection) return connection
      if ('error' in secret) return (connection = { error: `the Secret ${secret.name} cannot be read: ${secret.error}` })
      const d = secret.data
      const port = Number(d[variables.port] ?? 5432)
      if (!d[variables.host] || !d[variables.name] || !d[variables.user] || !Number.isInteger(port))
        return (connection = { error: `the Secret ${secret.name} does not name a database (see config-syntax)` })
      const client = new pg.Client({
        host: d[variables.host],
        port,
        database: d[variables.name],
        user: d[variables.user],
        connectionTimeoutMillis: 5000,
        ...(d[variables.password] !== undefined ? { password: d[variables.password] } : {}),
      })
      try {
        await client.connect()
        return (connection = { client })
      } catch (error) {
        await client.end().catch(() => undefined)
        return (connection = { error: errorMessage(error) })
      }
    },
    async close() {
      if (connection && 'client' in connection) await connection.client.end().catch(() => undefined)
    },
  }
}
