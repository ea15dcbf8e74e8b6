/**
 * Clean shutdown. Whatever starts a process or holds a resource registers a cleanup here; on
 * SIGINT/SIGTERM (Ctrl-C, a scheduler's timeout) the cleanups run newest first, then the process
 * exits 130. Nothing the lab started is left running.
 */
import { errorMessage } from './errors.ts'
import { sanitizeText } from './sanitize.ts'

type Cleanup = () => Promise<void> | void

const cleanups: Cleanup[] = []
let installed = false
let shuttingDown = false

/** Registers a cleanup; returns a function that unregisters it (call it after a normal stop). */
export function onShutdown(fn: Cleanup): () => void {
  installSignalHandlers()
  cleanups.push(fn)
  return () => {
    const i = cleanups.indexOf(fn)
    if (i >= 0) cleanups.splice(i, 1)
  }
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
      if (shuttingDown) return
      shuttingDown = true
      process.stderr.write(`\n${signal}: stopping what this run started...\n`)
      void runCleanups().finally(() => process.exit(130))
    })
  }
}
