/**
 * vitest global setup of the e2e tier: one PostgreSQL cluster for the whole run instead of one per
 * test file, and in it a template database with the recording service's tables at schema version 3.
 * A file takes a database of its own, owned by a login role of its own, copied from the template
 * (`CREATE DATABASE ... TEMPLATE`, milliseconds instead of an initdb and a server start), and drops
 * both when it ends; so files stay independent and may run in any order, in parallel, or alone.
 * Files that stop, break or reconfigure the server itself keep a cluster of their own.
 */
import type { TestProject } from 'vitest/node'
import { startPostgres, type PostgresInfo } from '../../src/lab/lab-postgres.ts'
import { createRecordingTables } from './recording-tables.ts'

/** The template every shared database is copied from. */
export const RECORDINGS_TEMPLATE = 'svcops_recordings_template'

declare module 'vitest' {
  export interface ProvidedContext {
    sharedPostgres: PostgresInfo
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const cluster = await startPostgres({ fsync: false })
  try {
    await cluster.query(`CREATE DATABASE ${RECORDINGS_TEMPLATE} IS_TEMPLATE true`)
    await createRecordingTables(cluster, RECORDINGS_TEMPLATE)
  } catch (error) {
    await cluster.stop()
    throw error
  }
  project.provide('sharedPostgres', cluster.info)
  return () => cluster.stop()
}
