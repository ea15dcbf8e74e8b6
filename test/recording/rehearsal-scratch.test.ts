/**
 * The rehearsal's scratch database on the lab's real PostgreSQL (src/recording/rehearse/scratch-copy.ts):
 * svcops drops only a database it made and marked; another database that happens to carry the
 * scratch name (another environment's, a hand-made copy) is refused in one sentence and kept.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { afterAll, beforeAll, expect, inject, it } from 'vitest'
import { BadInputError } from '../../src/core/errors.ts'
import type { DatabaseTarget } from '../../src/drivers/postgres.ts'
import { PostgresCluster, startPostgres } from '../../src/lab/lab-postgres.ts'
import { createScratch, dropScratch } from '../../src/recording/rehearse/scratch-copy.ts'
import type {} from '../support/shared-postgres.ts'

let cluster: PostgresCluster
let own = false
const suffix = randomBytes(5).toString('hex')
const user = `svc_${suffix}`
const password = `scratch-${randomBytes(8).toString('hex')}`
let production: DatabaseTarget
const scratch = (name: string): DatabaseTarget => ({ ...production, name })

beforeAll(async () => {
  const shared = inject('sharedPostgres')
  own = !shared
  cluster = shared ? new PostgresCluster(shared) : await startPostgres({ fsync: false })
  await cluster.createDatabase(`rec_${suffix}`, { user, password, createdb: true })
  production = { host: cluster.info.host, port: cluster.port, name: `rec_${suffix}`, user, password }
}, 120_000)

afterAll(async () => {
  if (!cluster) return
  if (own) return cluster.stop()
  for (const name of [`rec_${suffix}`, `copy_${suffix}`, `other_${suffix}`])
    await cluster.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`)
  await cluster.query(`DROP ROLE IF EXISTS ${pg.escapeIdentifier(user)}`)
})

const exists = async (name: string): Promise<boolean> =>
  (await cluster.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).length === 1

it('drops the copy it made and marked, and says when there was none', async () => {
  const copy = scratch(`copy_${suffix}`)
  await createScratch(production, copy)
  expect(await exists(copy.name)).toBe(true)
  expect(await dropScratch(production, copy)).toBe(true)
  expect(await exists(copy.name)).toBe(false)
  expect(await dropScratch(production, copy)).toBe(false)
})

it('refuses, in one sentence, to drop a database of the scratch name it did not make, and leaves it and its rows in place', async () => {
  const other = `other_${suffix}`
  // Another environment's database on the shared server, owned by the same role: the name is all they share.
  await cluster.query(`CREATE DATABASE ${pg.escapeIdentifier(other)} OWNER ${pg.escapeIdentifier(user)}`)
  await cluster.query('CREATE TABLE kept (id int)', [], other)
  await cluster.query('INSERT INTO kept VALUES (1)', [], other)
  const refusal = dropScratch(production, scratch(other))
  await expect(refusal).rejects.toBeInstanceOf(BadInputError)
  await expect(refusal).rejects.toThrow(
    `recording.rehearsal.database: "${other}" exists on ${production.host}:${production.port} and was not made by a rehearsal (it lacks svcops' mark), so it is neither dropped nor reused; expected a name of its own.`,
  )
  expect(await cluster.query('SELECT id FROM kept', [], other)).toEqual([{ id: 1 }])
})
