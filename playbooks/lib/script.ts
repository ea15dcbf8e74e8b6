/** Script mode is src/edge/script.ts; this path re-exports it for the modules that still import it here. */
export * from '../../src/edge/script.ts'
