/**
 * The foreground session of `npm run demo` (src/lab/demo.ts): the commands it runs one after
 * another, and what an interruption does. Ctrl-C (SIGINT), `timeout`'s or a scheduler's SIGTERM and
 * a closed terminal's SIGHUP all end the same way, as `docker compose up` does: the command running
 * now gets the signal and is waited for (svcops stops what it started itself), then `stop` runs once
 * (the demo's `svcops lab down`), the session says what it stopped and exits 130. From the signal on,
 * the demo's own flow is frozen: its pending command never resolves, so no later step starts.
 *
 * Neither a second Ctrl-C nor a closed terminal cuts the cleanup short: further signals are only
 * answered with a line; a write error on stdout or stderr (EIO, EPIPE) is taken as the terminal gone,
 * like SIGHUP, and nothing is written after it.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { constants } from 'node:os'
import { errorMessage } from '../core/errors.ts'

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const

/** What an interrupted session ends with (README, "Exit codes"). */
export const INTERRUPTED_EXIT_CODE = 130

export interface SessionOptions {
  /** Working directory of every command. */
  cwd: string
  /**
   * Stops what the session started, once, after an interruption and after the command running then
   * has ended; returns what to tell the user. It runs in this process (the demo's is `labDown`, what
   * `svcops lab down` runs), which further signals do not stop: a child would die of a second Ctrl-C.
   */
  stop: () => Promise<string>
}

export interface CommandResult {
  exitCode: number
  /** Standard output when captured, else ''. */
  stdout: string
}

export class DemoSession {
  private readonly options: SessionOptions
  private current: ChildProcess | undefined
  private interruption: string | undefined

  constructor(options: SessionOptions) {
    this.options = options
    for (const signal of SIGNALS) process.on(signal, () => void this.interrupt(signal))
    for (const stream of [process.stdout, process.stderr]) {
      stream.on('error', () => {
        // Written to no more: each write would fail again, and its error come back here.
        terminalGone = true
        void this.interrupt('the terminal closed')
      })
    }
  }

  /** True once a signal (or a closed terminal) has interrupted the session. */
  get interrupted(): boolean {
    return this.interruption !== undefined
  }

  /**
   * Runs `argv` in the foreground with its output shown (stdout captured and returned with
   * `capture`); resolves with its exit code. Once interrupted, it never resolves: the session ends.
   */
  run(argv: string[], options: { capture?: boolean } = {}): Promise<CommandResult> {
    if (this.interrupted) return new Promise(() => undefined)
    const child = spawn(argv[0] ?? '', argv.slice(1), {
      cwd: this.options.cwd,
      // No command of the demo reads the terminal; it stays the user's.
      stdio: ['ignore', options.capture ? 'pipe' : 'inherit', 'inherit'],
    })
    this.current = child
    let stdout = ''
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    return new Promise((resolve, reject) => {
      child.on('error', reject)
      child.on('close', (code, signal) => {
        if (this.current === child) this.current = undefined
        // An interrupted command's end belongs to the interruption, not to the demo's next step.
        if (!this.interrupted) resolve({ exitCode: code ?? 128 + signalNumber(signal), stdout })
      })
    })
  }

  /** Passes the signal to the running command, waits for it, runs `stop` once, says so, exits 130. */
  private async interrupt(reason: string): Promise<void> {
    if (this.interruption !== undefined) {
      say(`${reason}: still stopping what the demo started; it exits when that is done.`)
      return
    }
    this.interruption = reason
    say(`\n${reason}: stopping the demo and what it started...`)
    const running = this.current
    if (running && running.exitCode === null && running.signalCode === null) {
      const ended = new Promise((resolve) => running.on('close', resolve))
      if (reason.startsWith('SIG')) running.kill(reason as NodeJS.Signals)
      else running.kill('SIGHUP')
      await ended
    }
    try {
      say(await this.options.stop())
      process.exitCode = INTERRUPTED_EXIT_CODE
    } catch (error) {
      say(`The demo could not stop what it started: ${errorMessage(error)}`)
      process.exitCode = 1
    }
    // Ends the demo's frozen flow and anything it still had pending (HTTP clients, timers).
    process.exit()
  }
}

/** Set when stdout or stderr failed (EIO, EPIPE): the terminal is gone. */
let terminalGone = false

/** Writes a line to stderr; once the terminal is gone, there is no one to tell. */
function say(line: string): void {
  if (!terminalGone && process.stderr.writable) process.stderr.write(`${line}\n`)
}

function signalNumber(signal: NodeJS.Signals | null): number {
  return signal ? constants.signals[signal] : 0
}
