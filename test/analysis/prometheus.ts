/**
 * A real Prometheus for a test (Debian's `prometheus`, /usr/bin/prometheus): its own temp dir for
 * the TSDB and its config, scraping the given targets every second, on a free loopback port. What
 * a site runs beside its fleet, started the way test/runs/watch.test.ts starts a Pushgateway.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { stringify as toYaml } from 'yaml'

const PROMETHEUS = '/usr/bin/prometheus'

export interface RunningPrometheus {
  url: string
  stop(): Promise<void>
}

/** A port nothing listens on (one Prometheus is then told of: a Prometheus that does not answer). */
export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number }
      s.close(() => resolve(port))
    })
  })
}

/** Starts Prometheus scraping `targets` (`host:port`) at `metricsPath` every second; resolves once it is ready. */
export async function startPrometheus(parent: string, targets: string[], metricsPath: string): Promise<RunningPrometheus> {
  if (!existsSync(PROMETHEUS))
    throw new Error(
      `${PROMETHEUS} is missing; install it with: apt-get install -y --no-install-recommends prometheus prometheus-pushgateway`,
    )
  const dir = mkdtempSync(join(parent, 'prometheus-'))
  const config = join(dir, 'prometheus.yml')
  writeFileSync(
    config,
    toYaml({
      global: { scrape_interval: '1s', evaluation_interval: '1s' },
      scrape_configs: [{ job_name: 'lab', metrics_path: metricsPath, static_configs: [{ targets }] }],
    }),
  )
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const child: ChildProcess = spawn(
    PROMETHEUS,
    [`--config.file=${config}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`],
    { stdio: 'ignore' },
  )
  const stop = async (): Promise<void> => {
    if (child.exitCode === null) {
      const ended = new Promise((r) => child.once('exit', r))
      child.kill('SIGTERM')
      await ended
    }
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    for (let i = 0; ; i++) {
      const ready = await fetch(`${url}/-/ready`).then(
        (r) => r.ok,
        () => false,
      )
      if (ready) break
      if (child.exitCode !== null || i > 300) throw new Error('Prometheus did not become ready.')
      await new Promise((r) => setTimeout(r, 100))
    }
  } catch (error) {
    await stop()
    throw error
  }
  return { url, stop }
}

/** Waits until Prometheus answers `query` with one series per target at least (its first scrapes are in). */
export async function waitForSeries(url: string, query: string, count: number): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const answer = (await fetch(`${url}/api/v1/query?query=${encodeURIComponent(query)}`).then(
      (r) => r.json(),
      () => undefined,
    )) as { data?: { result?: unknown[] } } | undefined
    if ((answer?.data?.result?.length ?? 0) >= count) return
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`Prometheus has no ${count} series of ${query} after 60 s.`)
}
