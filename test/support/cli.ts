/**
 * Runs `svcops` as a subprocess, the way users and schedulers do, and collects what it printed; or,
 * where a case reads only the answer and not the process boundary, runs its entry in this process.
 */
import { spawn } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { svcopsCommand } from '../../src/core/paths.ts'

export const ROOT = fileURLToPath(new URL('../../', import.meta.url))

export interface CliRun {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

export interface CliOptions {
  /** Extra environment variables, over this process's environment. */
  env?: Record<string, string>
  /** Written to the command's stdin (closed either way, so nothing waits for input). */
  input?: string
  cwd?: string
  /** Called with the child's pid right after it started (to signal it, or find its children). */
  onSpawn?: (pid: number) => void
  /** Called with its stdout so far, each time more comes (to wait for a line of a command that goes on). */
  onStdout?: (stdout: string) => void
}

/** Runs `svcops ...args` and resolves with its exit code, signal and output once it exited. */
export function runSvcops(args: string[], options: CliOptions = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const [node = process.execPath, ...cli] = svcopsCommand()
    const child = spawn(node, [...cli, ...args], {
      cwd: options.cwd ?? ROOT,
      env: { ...process.env, ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString()
      options.onStdout?.(stdout)
    })
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('error', reject)
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }))
    child.stdin.on('error', () => {
      // The command may exit before reading its input; its exit code tells what happened.
    })
    child.stdin.end(options.input ?? '')
    if (child.pid !== undefined) options.onSpawn?.(child.pid)
  })
}

/** The end of the last in-process run asked for: the next one starts after it. */
let inProcessQueue: Promise<void> = Promise.resolve()

/**
 * Runs `svcops ...args` in this process (`main` of src/commands/program.ts) and resolves with its exit
 * code and what it wrote to stdout and stderr, as `runSvcops` does: for cases that read the answer
 * only. A spawn costs 0.3-1 s of CPU to start Node and load the modules; here the worker has them
 * loaded. What it cannot do, and `runSvcops` must: another working directory (`cwd`; a worker thread
 * cannot change it), input on stdin, a signal, the Node that runs it, argv as the process sees it.
 * `env` is set for the call and put back after it, as are the run observers and systems a command
 * wires (`useRunSystems`: a process exits instead, a worker runs the next file), and fetch's pool of
 * connections (each call has its own, closed after it). Calls run one at a time (concurrent tests
 * queue here): the streams and variables they set are the process's.
 */
export function runSvcopsInProcess(args: string[], options: Pick<CliOptions, 'env'> = {}): Promise<CliRun> {
  const turn = inProcessQueue.then(() => runInProcessNow(args, options))
  inProcessQueue = turn.then(
    () => undefined,
    () => undefined,
  )
  return turn
}

async function runInProcessNow(args: string[], options: Pick<CliOptions, 'env'>): Promise<CliRun> {
  const [{ main }, { useRunSystems }] = await Promise.all([
    import('../../src/commands/program.ts'),
    import('../../src/commands/run-systems.ts'),
  ])
  const saved = Object.entries(options.env ?? {}).map(([name, value]) => {
    const before = process.env[name]
    process.env[name] = value
    return [name, before] as const
  })
  const unwire = await useRunSystems()
  // The run's HTTP connections are its own, and closed when it ends, as a process's are when it
  // exits: fetch's keep-alive pool is the process's (undici's global dispatcher), and a connection a
  // run left to a service the test then restarts would fail the next run's or the test's request.
  const { Agent, getGlobalDispatcher, setGlobalDispatcher } = await import('undici')
  const dispatcherBefore = getGlobalDispatcher()
  const dispatcher = new Agent()
  setGlobalDispatcher(dispatcher)
  let stdout = ''
  let stderr = ''
  // Patched on the streams themselves (not with vitest's spies: this module is loaded outside vitest
  // too), and put back as they were: an own property of the stream, or none (the prototype's).
  const streams = [process.stdout, process.stderr]
  const before = streams.map((stream) => Object.getOwnPropertyDescriptor(stream, 'write'))
  const capture =
    (keep: (text: string) => void) =>
    (chunk: string | Uint8Array, encoding?: unknown, done?: unknown): boolean => {
      keep(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'))
      const callback = typeof encoding === 'function' ? encoding : done
      if (typeof callback === 'function') queueMicrotask(() => (callback as () => void)())
      return true
    }
  process.stdout.write = capture((text) => (stdout += text))
  process.stderr.write = capture((text) => (stderr += text))
  try {
    const code = await main(args)
    return { code, signal: null, stdout, stderr }
  } finally {
    streams.forEach((stream, i) => {
      const own = before[i]
      if (own) Object.defineProperty(stream, 'write', own)
      else Reflect.deleteProperty(stream, 'write')
    })
    unwire()
    setGlobalDispatcher(dispatcherBefore)
    for (const [name, before] of saved)
      if (before === undefined) delete process.env[name]
      else process.env[name] = before
    await dispatcher.destroy()
  }
}

/**
 * The variables that arm the crash tests' failpoint in a child svcops: `crash-failpoint.ts` preloaded
 * with `--import` (kept beside the NODE_OPTIONS this process has), killing it with `signal` right
 * after `boundary` (`step` or `step@host`) is recorded `ok`.
 */
export function crashFailpointEnv(boundary: string, signal?: 'SIGINT' | 'SIGTERM' | 'SIGHUP' | 'SIGSTOP'): Record<string, string> {
  const preload = `--import=${pathToFileURL(fileURLToPath(new URL('./crash-failpoint.ts', import.meta.url))).href}`
  return {
    NODE_OPTIONS: [process.env.NODE_OPTIONS, preload].filter(Boolean).join(' '),
    SVCOPS_TEST_CRASH_AFTER: boundary,
    ...(signal ? { SVCOPS_TEST_CRASH_SIGNAL: signal } : {}),
  }
}

/**
 * Runs `svcops ...args` with the crash tests' failpoint (`crashFailpointEnv`):
 * it kills itself with SIGKILL right after `boundary` (`step` or `step@host`) is recorded `ok` by
 * this process — at the exact boundary, however busy the machine, where a kill sent from outside on
 * seeing the journal line can come late (after the last step, even after the run has ended).
 * Resolves with `killedAt` when it died by SIGKILL.
 */
function runSvcopsKilledAfter(
  args: string[],
  boundary: string,
  runsDir: string,
  options: CliOptions,
): Promise<CliRun & { killedAt?: string }> {
  return runSvcops(args, { ...options, env: { SVCOPS_RUNS_DIR: runsDir, ...options.env, ...crashFailpointEnv(boundary) } }).then((run) => ({
    ...run,
    ...(run.signal === 'SIGKILL' ? { killedAt: boundary } : {}),
  }))
}

/**
 * Runs `svcops ...args` and has it killed with SIGKILL as soon as its journal records `boundary`
 * (`step` or `step@host`) finished: a crash at that step boundary, as a power cut or an OOM kill
 * would leave it.
 */
export function runSvcopsKilledAt(
  args: string[],
  boundary: string,
  runsDir: string,
  options: CliOptions = {},
): Promise<CliRun & { killedAt?: string }> {
  return runSvcopsKilledAfter(args, boundary, runsDir, options)
}

/**
 * Runs `svcops ...args` that continues run `id` (`resume ID`, `rollback ... --run ID`), killed with
 * SIGKILL as soon as it records `boundary` finished itself: a boundary the run passed before (a
 * step that a resume runs again) counts when the resume finishes it again. Chained crash tests kill
 * a run at one boundary, then its resume at the next.
 */
export function runSvcopsKilledInRun(
  args: string[],
  _id: string,
  boundary: string,
  runsDir: string,
  options: CliOptions = {},
): Promise<CliRun & { killedAt?: string }> {
  return runSvcopsKilledAfter(args, boundary, runsDir, options)
}

/**
 * The command line of every process on the machine (`/proc/PID/cmdline`, what `ps -eo args` shows),
 * one process an entry. Read without starting a process (sampling `ps` every 100 ms kept a core
 * busy), and synchronously: a few hundred small reads through `fs/promises` took about six times
 * the CPU of plain reads (a file handle, an fstat and a close each), and a sampler spent it ten
 * times a second beside every live-lab run of svcops.
 */
export function processArgumentsNow(): string[] {
  const lines: string[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const line = readFileSync(`/proc/${name}/cmdline`, 'utf8').replaceAll('\0', ' ').trim()
      if (line) lines.push(line)
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return lines
}

/**
 * Samples `processArgumentsNow()` every `everyMs` until `stop()` (which takes one last sample),
 * handing `keep` each command line the first time it is seen: a process that runs across samples
 * is kept once, not once a sample.
 */
export function sampleProcessArguments(everyMs: number, keep: (args: string) => void): { stop: () => void } {
  const seen = new Set<string>()
  const sample = (): void => {
    for (const line of processArgumentsNow())
      if (!seen.has(line)) {
        seen.add(line)
        keep(line)
      }
  }
  const timer = setInterval(sample, everyMs)
  sample()
  return {
    stop() {
      clearInterval(timer)
      sample()
    },
  }
}
