/**
 * The tier lists of test/support/tiers.ts name files that exist, so a renamed or removed file
 * cannot leave a stale name behind (a stale unit name would silently move nothing; the renamed
 * file would run as e2e).
 */
import { existsSync, readdirSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { APART_FILES, UNIT_FILES } from './support/tiers.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? testFiles(join(dir, e.name)) : e.name.endsWith('.test.ts') ? [relative(ROOT, join(dir, e.name))] : [],
  )
}

describe('the test tiers', () => {
  it('lists only files that exist, each once', () => {
    expect(UNIT_FILES.filter((f) => !existsSync(join(ROOT, f)))).toEqual([])
    expect(new Set(UNIT_FILES).size).toBe(UNIT_FILES.length)
  })

  it('puts no file both in the unit tier and apart', () => {
    const apart = (f: string): boolean => APART_FILES.some((a) => (a.endsWith('/**') ? f.startsWith(a.slice(0, -2)) : f === a))
    expect(UNIT_FILES.filter(apart)).toEqual([])
    expect(testFiles(join(ROOT, 'test')).filter(apart).length).toBeGreaterThan(0)
  })
})
