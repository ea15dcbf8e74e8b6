import { afterAll, describe, expect, it } from 'vitest'
import { BadInputError } from '../../src/core/errors.ts'
import { assertStrongPsk, assessPsk, generatePsk, MIN_PSK_BITS } from '../../src/releases/pre-shared-key.ts'
import { clearSecretsForTests, redact } from '../../src/core/redact.ts'

afterAll(() => clearSecretsForTests())

describe('PSK generation and check', () => {
  it('generates printable 256-bit keys from the CSPRNG that pass the check and are redacted everywhere', () => {
    const keys = Array.from({ length: 200 }, () => generatePsk())
    expect(new Set(keys).size).toBe(200)
    for (const key of keys) {
      expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/)
      expect(assessPsk(key).ok).toBe(true)
    }
    expect(redact(`psk=${keys[0] ?? ''}`)).toBe('psk=[REDACTED]')
    expect(generatePsk(512)).toMatch(/^[A-Za-z0-9_-]{86}$/)
  })

  it.each([100, 255.5, 8192])('refuses a generated size of %d bits', (bits) => {
    expect(() => generatePsk(bits)).toThrow(BadInputError)
  })

  it.each([
    ['a random base64url key', 'q8Vb3nZ1-Lm7xR2kT9pW4sY6hJ0cFgD5aE_uNiOoKvB', true, /^$/],
    ['a random hex key (openssl rand -hex 32)', '3f9a1c7e5b2d4086a1f3c9e7b5d20486f1a3c5e7092b4d6f8a0c2e4f6b8d0a1c', true, /^$/],
    ['a short key', 'Xk9#mQ2$vL7@', false, /has 12 characters; at least 24 are required/],
    ['one repeated character', 'a'.repeat(48), false, /block of 1 character repeated|repeats one character 48 times/],
    ['a repeated block', 'Ab3$Ab3$Ab3$Ab3$Ab3$Ab3$Ab3$Ab3$', false, /block of 4 characters repeated 8 times/],
    ['low variety', 'abababababbabababaabbbabababbaabab', false, /only 2 distinct characters/],
    ['dictionary words', 'Password-Welcome-Dragon-2024!', false, /dictionary word/],
    ['l33t dictionary words', 'P@ssw0rd-Sunsh1ne-Pr1ncess-Fo0tball', false, /dictionary word/],
    ['a keyboard sequence', 'qwertyuiop-asdfghjkl-zxcvbnm-1234567890', false, /keyboard or alphabet sequence/],
    ['an alphabet run with digits', 'abcdefghijklmnop0123456789ABCDEFGH', false, /sequence/],
  ])('%s: ok %s', (_name, key, ok, reason) => {
    const verdict = assessPsk(key)
    expect(verdict.ok).toBe(ok)
    expect(verdict.reasons.join(' ')).toMatch(reason)
    if (ok) expect(verdict.bits).toBeGreaterThanOrEqual(MIN_PSK_BITS)
    else expect(verdict.reasons.join(' ')).not.toContain(key)
  })

  it('throws one sentence naming the field and never the key', () => {
    const key = 'password-password-1234'
    try {
      assertStrongPsk(key, 'deploy.systemController.psk')
      expect.unreachable()
    } catch (error) {
      expect(error).toBeInstanceOf(BadInputError)
      const message = (error as Error).message
      expect(message).toMatch(
        /^deploy\.systemController\.psk: the pre-shared key is too weak to use: the key has 22 characters; at least 24 are required\.$/,
      )
      expect(message).not.toContain(key)
      expect((error as BadInputError).hint).toBe('Generate a new one with: svcops psk generate')
    }
    expect(() => assertStrongPsk(generatePsk(), 'psk')).not.toThrow()
  })
})
