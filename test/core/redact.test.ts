import { describe, expect, it } from 'vitest'
import { collect, EventLog } from '../../src/core/events.ts'
import { REDACTED, redact, redactDeep, registerSecret } from '../../src/core/redact.ts'

describe('redaction', () => {
  it('replaces a registered secret wherever it appears, also URL- and base64-encoded', () => {
    registerSecret('s3cr3t/p@ss word')
    expect(redact('password=s3cr3t/p@ss word;')).toBe(`password=${REDACTED};`)
    expect(redact(`url?pw=${encodeURIComponent('s3cr3t/p@ss word')}`)).toBe(`url?pw=${REDACTED}`)
    expect(redact(Buffer.from('s3cr3t/p@ss word').toString('base64'))).toBe(REDACTED)
  })

  it('replaces the longer of two overlapping secrets whole', () => {
    registerSecret('abcd-1234')
    registerSecret('abcd-1234-efgh-5678')
    expect(redact('x abcd-1234-efgh-5678 y')).toBe(`x ${REDACTED} y`)
  })

  it('redacts bearer tokens, JWTs and private keys that nobody registered', () => {
    const jwt = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJvcHNAZXhhbXBsZSJ9.c2lnbmF0dXJlLXNpZ25hdHVyZQ'
    expect(redact(`Authorization: Bearer ${jwt}`)).toBe(`Authorization: Bearer ${REDACTED}`)
    expect(redact(`token ${jwt} end`)).toBe(`token ${REDACTED} end`)
    const key = '-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----'
    expect(redact(`key:\n${key}\n`)).toBe(`key:\n${REDACTED}\n`)
    // The scheme in any case, as HTTP reads it; each shape alone in a text, after a registered secret.
    expect(redact('authorization: bearer tok.en-1/2+3=')).toBe(`authorization: bearer ${REDACTED}`)
    expect(redact('AUTHORIZATION: BEARER tok.en-1/2+3=')).toBe(`AUTHORIZATION: BEARER ${REDACTED}`)
    registerSecret('registered-before-the-shapes')
    expect(redact(`registered-before-the-shapes ${jwt}`)).toBe(`${REDACTED} ${REDACTED}`)
    expect(redact(`registered-before-the-shapes ${key}`)).toBe(`${REDACTED} ${REDACTED}`)
  })

  it('redacts secret-named fields in objects even when their values were never registered', () => {
    const out = redactDeep({ user: 'ops', password: 'never-registered-1', nested: [{ session_token: 'tok-unregistered-2' }] })
    expect(out).toEqual({ user: 'ops', password: REDACTED, nested: [{ session_token: REDACTED }] })
  })

  it('leaves short values alone so ordinary words survive', () => {
    registerSecret('ab')
    expect(redact('about a tab')).toBe('about a tab')
  })

  it('redacts every event before any sink sees it', () => {
    const log = new EventLog()
    const seen = collect(log)
    registerSecret('event-secret-value-3')
    log.info('connecting with event-secret-value-3')
    log.emit({ kind: 'command', host: 'h1', command: 'psql --password=event-secret-value-3', code: 0, durationMs: 1 })
    seen.stop()
    expect(JSON.stringify(seen.events)).not.toContain('event-secret-value-3')
    expect(seen.events).toHaveLength(2)
  })
})
