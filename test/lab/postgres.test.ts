import { existsSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startPostgres, type PostgresCluster } from '../../src/lab/lab-postgres.ts'

describe('throwaway PostgreSQL cluster', () => {
  let cluster: PostgresCluster

  beforeAll(async () => {
    cluster = await startPostgres({ fsync: false })
  })
  afterAll(async () => {
    await cluster?.stop()
  })

  it('answers SQL on a loopback port with password authentication', async () => {
    const rows = await cluster.query<{ one: number }>('select 1 as one')
    expect(rows).toEqual([{ one: 1 }])
    expect(cluster.info.host).toBe('127.0.0.1')
    expect(cluster.port).toBeGreaterThan(1024)
  })

  it('refuses a wrong password over TCP', async () => {
    const pg = await import('pg')
    const client = new pg.default.Client({ ...cluster.clientConfig(), password: 'not-the-password' })
    await expect(client.connect()).rejects.toThrow(/password authentication failed/)
  })

  it('creates a database owned by a login role', async () => {
    await cluster.createDatabase('recordings', { user: 'recorder', password: 'recorder-secret-1' })
    const rows = await cluster.query<{ owner: string }>(
      "select pg_get_userbyid(datdba) as owner from pg_database where datname = 'recordings'",
    )
    expect(rows[0]?.owner).toBe('recorder')
  })

  it('removes its data directory when stopped', async () => {
    const other = await startPostgres({ fsync: false })
    expect(existsSync(other.info.dataDir)).toBe(true)
    await other.stop()
    expect(existsSync(other.info.dir)).toBe(false)
  })
})
