/**
 * The recording labs shared per worker (test/recording/lab-pool.ts): a lab a file left changed — a
 * recording written, a host's config and the tables' owner broken by lab faults, its service stopped,
 * a scratch database left behind — comes to the next file as `lab up` leaves it, with exactly the
 * recordings that file asks for, and on the release it asks for. Under another config (no pool) each
 * start is a lab of its own, and the same holds.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import { afterEach, expect, inject, it } from 'vitest'
import { doctorRecording } from '../../playbooks/doctor.ts'
import { runCommand } from '../../src/core/runner.ts'
import { transportFor } from '../../src/drivers/transports.ts'
import { switchLabFault } from '../../src/lab/recording-faults.ts'
import { supervisorctlArgv } from '../support/supervisorctl.ts'
import { startUpgradeLab, type UpgradeLab } from './fixture.ts'

const held: UpgradeLab[] = []

afterEach(async () => {
  for (const lab of held.splice(0)) await lab.stop()
})

/** The lab's databases other than PostgreSQL's own and the pool's templates. */
async function databases(lab: UpgradeLab, superuserPassword: string): Promise<string[]> {
  const db = lab.env().recording!.database
  const client = new pg.Client({ host: db.host, port: db.port, user: 'postgres', password: superuserPassword, database: 'postgres' })
  await client.connect()
  try {
    const rows = await client.query<{ datname: string }>(
      `SELECT datname FROM pg_database WHERE NOT datistemplate AND datname <> 'postgres' AND datname NOT LIKE 'svcops\\_pool\\_%' ORDER BY 1`,
    )
    return rows.rows.map((r) => r.datname)
  } finally {
    await client.end()
  }
}

it('a lab left changed comes back as lab up leaves it, with the recordings and the release the next file asks for', async () => {
  const first = await startUpgradeLab({ hosts: 1, version: '1.4.0', recordings: 3 })
  held.push(first)
  const fingerprint = await first.fingerprint()
  expect((await first.listAll()).map((r) => r.title)).toEqual(expect.arrayContaining(['Lab recording 1', 'Lab recording 3']))
  expect(await first.listAll()).toHaveLength(3)
  const superuserPassword = readFileSync(join(first.labDir, 'secrets', 'postgres-password'), 'utf8').trim()
  const target = { env: first.env(), superuserPassword }
  await first.create('left behind by the first file')
  await switchLabFault(target, 'rate-limit', true)
  await switchLabFault(target, 'tables-not-owned', true)
  const host = first.env().recording!.hosts[0]!
  const transport = transportFor(host)
  try {
    await runCommand(transport, supervisorctlArgv(host, ['stop', 'svc-recording']))
  } finally {
    await transport.close()
  }
  const db = first.env().recording!.database
  const scratch = new pg.Client({ host: db.host, port: db.port, user: 'postgres', password: superuserPassword, database: 'postgres' })
  await scratch.connect()
  await scratch.query('CREATE DATABASE scratch_left_behind')
  await scratch.end()
  await first.stop()
  held.pop()

  const second = await startUpgradeLab({ hosts: 1, version: '1.4.0', recordings: 5 })
  held.push(second)
  // Pooled, it is the same lab (same PostgreSQL, same hosts); on its own, a new one.
  if (inject('labPool') && process.env.SVCOPS_TEST_LAB_POOL !== 'off') expect(second.labDir).toBe(first.labDir)
  expect(await second.versions()).toEqual({ 'rec-1': '1.4.0' })
  expect(await second.healthy()).toEqual([true])
  const titles = (await second.listAll()).map((r) => r.title)
  expect(titles).toHaveLength(5)
  expect(titles).not.toContain('left behind by the first file')
  expect(await second.fingerprint()).toBe(fingerprint)
  expect(await databases(second, readFileSync(join(second.labDir, 'secrets', 'postgres-password'), 'utf8').trim())).toEqual(['recordings'])
  expect((await doctorRecording(second.env())).findings).toEqual([])
  await second.stop()
  held.pop()

  const third = await startUpgradeLab({ hosts: 1, version: '1.5.0', recordings: 0 })
  held.push(third)
  expect(await third.versions()).toEqual({ 'rec-1': '1.5.0' })
  expect(await third.healthy()).toEqual([true])
  expect(await third.listAll()).toEqual([])
})
