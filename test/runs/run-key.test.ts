/**
 * The run key as a stack gives it: `svcops:runs.key` (a private file of at least 32 bytes), else
 * derived from the backup private key the stack names; with neither, runs are written unsigned and
 * svcops says so once, naming the setting. The key itself never reaches what is stored or said.
 */
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { expect, it } from 'vitest'
import { collect } from '../../src/core/events.ts'
import { runKeyOf, runSeal, runSealOf } from '../../src/runs/run-mac.ts'
import { newRunRecord } from '../../src/runs/run-record.ts'

const dir = mkdtempSync(join(tmpdir(), 'svcops-run-key-'))

function secretFile(name: string, text: string, mode = 0o600): string {
  const file = join(dir, name)
  writeFileSync(file, text, { mode })
  chmodSync(file, mode)
  return file
}

const record = () => newRunRecord({ kind: 'upgrade', system: 'recording', environment: 'lab', envFile: '/dev/null', params: {} })

it('reads svcops:runs.key from a private file and signs with it; only the MAC is stored', () => {
  const text = randomBytes(48).toString('base64')
  const key = runKeyOf({ runs: { key: { file: secretFile('run.key', `${text}\n`) } } })
  expect(key?.toString('utf8')).toBe(text)
  const sealed = runSeal('lab', key).sealRecord(record())
  expect(sealed.mac).toMatch(/^hmac-sha256:[0-9a-f]{64}$/)
  expect(JSON.stringify(sealed)).not.toContain(text)
})

it('refuses a run key shorter than 32 bytes, and one others may read, in one sentence naming the field', () => {
  expect(() => runKeyOf({ runs: { key: { file: secretFile('short.key', 'too short') } } })).toThrow(
    'runs.key: holds 9 bytes; expected at least 32.',
  )
  expect(() => runKeyOf({ runs: { key: { file: secretFile('open.key', randomBytes(48).toString('base64'), 0o644) } } })).toThrow(
    /runs\.key: the file '.*open\.key' has mode 0644, readable by group or others; expected 0600\./,
  )
})

it('derives the key from backup.signingKey, else backup.identity, the same on every machine', () => {
  const signing = { file: secretFile('signing.key.asc', `-----BEGIN PGP PRIVATE KEY BLOCK-----\n${randomBytes(64).toString('base64')}\n`) }
  const identity = {
    file: secretFile('identity.key.asc', `-----BEGIN PGP PRIVATE KEY BLOCK-----\n${randomBytes(64).toString('base64')}\n`),
  }
  const fromSigning = runKeyOf({ backup: { store: { path: dir }, recipients: ['r'], identity, signingKey: signing } })
  const again = runKeyOf({ backup: { store: { path: dir }, recipients: ['r'], identity, signingKey: signing } })
  const fromIdentity = runKeyOf({ backup: { store: { path: dir }, recipients: ['r'], identity } })
  expect(fromSigning).toHaveLength(32)
  expect(fromSigning?.equals(again ?? Buffer.alloc(0))).toBe(true)
  expect(fromSigning?.equals(fromIdentity ?? Buffer.alloc(0))).toBe(false)
})

it('with neither key, writes unsigned and says once per environment which setting to add', () => {
  const { events, stop } = collect()
  try {
    const seal = runSealOf({ name: 'nokey' })
    expect(seal.signed).toBe(false)
    expect(seal.sealRecord(record())).not.toHaveProperty('mac')
    seal.sealRecord(record())
    runSealOf({ name: 'nokey' }).sealRecord(record())
  } finally {
    stop()
  }
  const warnings = events.filter((e) => e.kind === 'warn').map((e) => ('message' in e ? e.message : ''))
  expect(warnings).toHaveLength(1)
  expect(warnings[0]).toContain("The runs of environment 'nokey' are not authenticated")
  expect(warnings[0]).toContain('svcops:runs.key')
})
