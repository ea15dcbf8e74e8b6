/**
 * What a cluster's Job controller and kubelet do with a Job written to the Kubernetes API stand-in
 * (./kube-api-standin.ts), for the recording service's image: each Job stored there gets one pod
 * in the stand-in's summary (`others`, under the Job's labels), and that pod is the lab's recording
 * service of the image's tag run as a process — the release's package unpacked with `dpkg-deb -x`
 * as its image, its configuration made from the container's variables as the image's entrypoint
 * would (`envFrom` a Secret of the store, `env` winning over it, as the kubelet resolves them), its
 * recordings on the directory the test gives for the claim the pod mounts (an empty one for an
 * `emptyDir`). The pod is ready once its process answers `GET /` (the readiness probe's path);
 * a process that exits leaves the pod `Failed` (`restartPolicy: Never`) with its log; a Job
 * deleted through the API takes its pod and process with it. A port-forward to the pod reaches
 * the process.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { freePort } from '../../src/lab/ports.ts'
import { recordingPackagePaths, type PackageOptions } from '../../src/lab/recording/package.ts'
import type { KubeApiStandin, StandinDeployment, StandinPod } from './kube-api-standin.ts'
import { kindOfResource } from './kube-kinds.ts'

type Obj = Record<string, unknown>
interface Container {
  name: string
  image: string
  env?: Array<{ name: string; value?: string }>
  envFrom?: Array<{ secretRef?: { name: string } }>
  volumeMounts?: Array<{ name: string; mountPath: string }>
}
interface Volume {
  name: string
  persistentVolumeClaim?: { claimName: string }
  emptyDir?: object
}

export interface JobKubelet {
  /** Every Job the kubelet saw created, as written. */
  created: Obj[]
  /** Pods (processes) running now. */
  running(): number
  close(): Promise<void>
}

export interface JobKubeletOptions {
  /** The release's `.deb` by version (the image's tag). */
  packages: Record<string, string>
  product: PackageOptions
  /** The recording service's configuration the lab's hosts use (auth, storage locations): the image's defaults. */
  baseConfig: Obj
  /** A directory for each claim a pod may mount, by claim name. */
  claims: Record<string, string>
}

/** Starts following the Jobs of `api`'s namespace. */
export function startJobKubelet(api: KubeApiStandin, options: JobKubeletOptions): JobKubelet {
  const jobs = kindOfResource('batch', 'v1', 'jobs')!
  const secrets = kindOfResource('', 'v1', 'secrets')!
  const dir = mkdtempSync(join(tmpdir(), 'svcops-job-kubelet-'))
  const created: Obj[] = []
  const live = new Map<string, { uid: string; child?: ChildProcess; owner: StandinDeployment; pod: StandinPod }>()
  const paths = recordingPackagePaths(options.product)
  let pods = 0

  const secretData = (name: string): Record<string, string> => {
    const s = api.store.get(secrets, api.state.namespace, name) as
      { data?: Record<string, string>; stringData?: Record<string, string> } | undefined
    const decoded = Object.fromEntries(Object.entries(s?.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]))
    return { ...decoded, ...(s?.stringData ?? {}) }
  }
  const variables = (c: Container): Record<string, string> => {
    const fromSecrets = Object.assign({}, ...(c.envFrom ?? []).map((f) => (f.secretRef ? secretData(f.secretRef.name) : {}))) as Record<
      string,
      string
    >
    return { ...fromSecrets, ...Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value ?? ''])) }
  }

  const run = (job: Obj): void => {
    const meta = job.metadata as { name: string; uid?: string; labels: Record<string, string> }
    const spec = ((job.spec as Obj).template as Obj).spec as { containers: Container[]; volumes?: Volume[] }
    const c = spec.containers[0]!
    const colon = c.image.lastIndexOf(':')
    const version = c.image.slice(colon + 1)
    const pod: StandinPod = { name: `${meta.name}-${String(++pods).padStart(5, '0')}`, version, phase: 'Pending', ready: false, log: [] }
    const owner: StandinDeployment = {
      deployment: meta.name,
      app: meta.labels['app.kubernetes.io/name'] ?? '',
      container: c.name,
      image: c.image.slice(0, colon),
      version,
      replicas: 1,
      pods: [pod],
    }
    api.state.others.push(owner)
    const entry: { uid: string; child?: ChildProcess; owner: StandinDeployment; pod: StandinPod } = { uid: JSON.stringify(job), owner, pod }
    live.set(meta.name, entry)
    const deb = options.packages[version]
    if (!deb) {
      pod.waiting = 'ErrImagePull'
      pod.waitingMessage = `manifest for ${c.image} not found`
      return
    }
    // The image: the release's package unpacked; the volumes: the claim's directory or an empty one.
    const root = join(dir, pod.name)
    mkdirSync(root, { recursive: true })
    execFileSync('dpkg-deb', ['-x', deb, root])
    const env = variables(c)
    const p = options.product.prefix.toUpperCase()
    const mount = c.volumeMounts?.find((m) => m.mountPath === env[`${p}_RECORDINGS_DIR`]) ?? c.volumeMounts?.[0]
    const volume = spec.volumes?.find((v) => v.name === mount?.name)
    const storage = volume?.persistentVolumeClaim
      ? options.claims[volume.persistentVolumeClaim.claimName]
      : mkdtempSync(join(dir, 'empty-'))
    if (!storage || !mount) {
      pod.waiting = 'ContainerCreating'
      return
    }
    mkdirSync(dirname(join(root, mount.mountPath)), { recursive: true })
    symlinkSync(storage, join(root, mount.mountPath))
    void freePort().then((port) => {
      if (live.get(meta.name) !== entry) return
      const config = {
        ...options.baseConfig,
        listen: { host: '127.0.0.1', port },
        database: {
          host: env[`${p}_DB_HOST`],
          port: Number(env[`${p}_DB_PORT`]),
          name: env[`${p}_DB_NAME`],
          user: env[`${p}_DB_USER`],
          password: env[`${p}_DB_PASSWORD`],
        },
        storage: { ...(options.baseConfig.storage as Obj), path: mount.mountPath },
      }
      writeFileSync(join(root, paths.config), JSON.stringify(config))
      const child = spawn(process.execPath, [join(root, paths.service), '--root', root, '--config', join(root, paths.config)], {
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      entry.child = child
      pod.phase = 'Running'
      pod.forwardTo = { host: '127.0.0.1', port }
      let rest = ''
      child.stderr?.on('data', (d: Buffer) => {
        const lines = (rest + d.toString()).split('\n')
        rest = lines.pop() ?? ''
        pod.log?.push(...lines.filter(Boolean))
      })
      child.stdout?.resume()
      child.on('exit', (code) => {
        pod.ready = false
        pod.phase = code === 0 ? 'Succeeded' : 'Failed'
      })
    })
  }

  const remove = (name: string): void => {
    const entry = live.get(name)
    if (!entry) return
    entry.child?.kill('SIGTERM')
    live.delete(name)
    api.state.others = api.state.others.filter((d) => d !== entry.owner)
  }

  const follow = (): void => {
    const stored = api.store.list(jobs, api.state.namespace)
    for (const job of stored) {
      const name = (job.metadata as { name: string }).name
      const seen = live.get(name)
      if (seen && seen.uid === JSON.stringify(job)) continue
      if (seen) remove(name)
      created.push(structuredClone(job))
      run(job)
    }
    for (const name of [...live.keys()]) if (!stored.some((j) => (j.metadata as { name: string }).name === name)) remove(name)
  }
  const before = api.state.beforeAnswer
  api.state.beforeAnswer = () => {
    before?.()
    follow()
  }
  // The readiness probe: GET / on the pod's port.
  const probe = setInterval(() => {
    for (const { pod } of live.values()) {
      if (pod.phase !== 'Running' || !pod.forwardTo) continue
      fetch(`http://127.0.0.1:${pod.forwardTo.port}/`, { signal: AbortSignal.timeout(1000) })
        .then((r) => (pod.ready = r.ok && pod.phase === 'Running'))
        .catch(() => (pod.ready = false))
    }
  }, 250)

  return {
    created,
    running: () => [...live.values()].filter((e) => e.child && e.child.exitCode === null && !e.child.killed).length,
    async close() {
      clearInterval(probe)
      api.state.beforeAnswer = before
      for (const name of [...live.keys()]) remove(name)
      await new Promise((r) => setTimeout(r, 200))
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** The lab host's recording configuration (auth, storage locations): what the image holds by default. */
export function labServiceConfig(root: string, product: PackageOptions): Obj {
  return JSON.parse(readFileSync(join(root, recordingPackagePaths(product).config), 'utf8')) as Obj
}
