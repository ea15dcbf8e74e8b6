/**
 * Clean shutdown. Whatever starts a process or holds a resource registers a cleanup here; on
 * SIGINT/SIGTERM/SIGHUP (Ctrl-C, a scheduler's timeout, a closed terminal) the cleanups run newest
 * first, then the process exits 130. Nothing the lab started is left running.
 *
 * A run in progress asks to be told instead (`onInterrupt`): the first signal only asks it to stop
 * at its next safe point — the step under way (a pg_restore, a dpkg install) finishes, nothing
 * after it starts — so the run can journal `interrupted` and say how to resume or roll it back. A
 * second signal stops harder: the cleanups run and the process exits 130 at once.
 */
import { errorMessage } from './errors.ts'
import { sanitizeText } from './sanitize.ts'

type Cleanup = () => Promise<void> | void
type InterruptHandler = (signal: NodeJS.Signals) => void

const cleanups: Cleanup[] = []
const interruptHandlers: InterruptHandler[] = []
let installed = false
let shuttingDown = false
let interruptedBy: NodeJS.Signals | undefined

/** Registers a cleanup; returns a function that unregisters it (call it after a normal stop). */
export function onShutdown(fn: Cleanup): () => void {
  installSignalHandlers()
  cleanups.push(fn)
  return () => {
    const i = cleanups.indexOf(fn)
    if (i >= 0) cleanups.splice(i, 1)
  }
}

/**
 * Asks to be told of the first SIGINT/SIGTERM/SIGHUP instead of the process exiting: `fn` is called
 * with the signal, and the process goes on until the run stops itself (or a second signal arrives).
 * Returns a function that unregisters it.
 */
export function onInterrupt(fn: InterruptHandler): () => void {
  installSignalHandlers()
  interruptHandlers.push(fn)
  return () => {
    const i = interruptHandlers.indexOf(fn)
    if (i >= 0) interruptHandlers.splice(i, 1)
  }
}

/** The signal that asked the process to stop, if one did. */
export function interruptSignal(): NodeJS.Signals | undefined {
  return interruptedBy
}

/** Runs every registered cleanup, newest first; errors are reported, not thrown. */
export async function runCleanups(): Promise<void> {
  while (cleanups.length > 0) {
    const fn = cleanups.pop()
    try {
      await fn?.()
    } catch (error) {
      process.stderr.write(`cleanup failed: ${sanitizeText(errorMessage(error))}\n`)
    }
  }
}

function installSignalHandlers(): void {
  if (installed) return
  installed = true
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      if (!interruptedBy && interruptHandlers.length > 0) {
        interruptedBy = signal
        process.stderr.write(`\n${signal}: stopping at the next safe point (the step under way finishes); a second signal stops now.\n`)
        for (const fn of [...interruptHandlers]) fn(signal)
        return
      }
      if (shuttingDown) return
      shuttingDown = true
      process.stderr.write(`\n${signal}: stopping what this run started...\n`)
      void runCleanups().finally(() => process.exit(130))
    })
  }
}
