/**
 * The lab's package build cache shared by labs starting at once in other processes (parallel test
 * files): one builds under the lock, the others wait and use its packages; a lock left by a killed
 * builder is taken over.
 */
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ROOT } from '../support/cli.ts'

/** A process that runs buildUnlessCached on `dir` with a slow build that counts itself in `dir/builds`. */
function builder(dir: string): Promise<number | null> {
  const script = `
    import { appendFileSync, writeFileSync } from 'node:fs'
    import { buildUnlessCached } from ${JSON.stringify(join(ROOT, 'src/lab/deb.ts'))}
    const dir = ${JSON.stringify(dir)}
    await buildUnlessCached(dir, dir + '/.stamp', 'key-1', [dir + '/a.deb'], async () => {
      appendFileSync(dir + '/builds', process.pid + '\\n')
      await new Promise((r) => setTimeout(r, 500))
      writeFileSync(dir + '/a.deb', 'package')
    })
  `
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'inherit' })
    child.on('error', reject)
    child.on('close', resolve)
  })
}

describe('the lab package build cache', () => {
  it('is built once when three processes start at the same moment', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'deb-cache-'))
    expect(await Promise.all([builder(dir), builder(dir), builder(dir)])).toEqual([0, 0, 0])
    expect(readFileSync(join(dir, 'builds'), 'utf8').trim().split('\n')).toHaveLength(1)
    expect(readFileSync(join(dir, 'a.deb'), 'utf8')).toBe('package')
    expect(existsSync(join(dir, '.stamp.lock'))).toBe(false)
  })

  it('takes over a lock whose holder is gone', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'deb-cache-'))
    mkdirSync(join(dir, '.stamp.lock'))
    writeFileSync(join(dir, '.stamp.lock', 'pid'), '2147483646\n')
    expect(await builder(dir)).toBe(0)
    expect(readFileSync(join(dir, 'builds'), 'utf8').trim().split('\n')).toHaveLength(1)
  })
})
