/** The commands' output writer is src/edge/command-io.ts; this path re-exports it for the modules that still import it here. */
export * from '../../src/edge/command-io.ts'
