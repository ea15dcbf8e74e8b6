/**
 * Every benchmark checks the programs it needs before it starts anything: on a machine without one
 * it ends with one sentence naming the program and the Debian package, exit 2 (not a TypeError
 * after a lab was started). The machine is made to lack the program by running the benchmark with
 * a PATH of links to everything on the real PATH but that program; no benchmark runs.
 */
import { spawnSync } from 'node:child_process'
import { accessSync, constants, existsSync, mkdtempSync, readdirSync, readlinkSync, rmSync, symlinkSync, unlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { missingToolsMessage } from '../../bench/require-tools.ts'
import { ROOT } from '../support/cli.ts'

// One folder of links to every program on the real PATH (thousands of links: made once), less
// the one program a case takes away and puts back after it.
let linked: string | undefined
afterAll(() => {
  if (linked) rmSync(linked, { recursive: true, force: true })
})

function linkEveryProgram(): string {
  const dir = mkdtempSync(join(tmpdir(), 'svcops-path-'))
  for (const from of (process.env.PATH ?? '').split(delimiter)) {
    let names: string[]
    try {
      names = readdirSync(from)
    } catch {
      // A PATH entry that does not exist holds nothing to link.
      continue
    }
    for (const name of names) {
      try {
        accessSync(join(from, name), constants.X_OK)
        symlinkSync(join(from, name), join(dir, name))
      } catch {
        // Not executable, or an earlier PATH entry already gave this name (it wins, as on PATH).
        continue
      }
    }
  }
  return dir
}

/** Runs `use` with a PATH of every program of the real one except `binary`. */
function withPathWithout<T>(binary: string, use: (path: string) => T): T {
  linked ??= linkEveryProgram()
  const link = join(linked, binary)
  // A machine without the program: the folder lacks it already.
  if (!existsSync(link)) return use(linked)
  const target = readlinkSync(link)
  unlinkSync(link)
  try {
    return use(linked)
  } finally {
    symlinkSync(target, link)
  }
}

function runBench(script: string, args: string[], path: string): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [script, ...args], {
    cwd: ROOT,
    env: { ...process.env, PATH: path },
    encoding: 'utf8',
    timeout: 60_000,
  })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr }
}

describe('benchmarks say what they need', () => {
  it.each([
    { script: 'bench/upgrade/run.ts', args: ['--fleet', '50'], binary: 'ansible-playbook', aptPackage: 'ansible' },
    { script: 'bench/backup/run.ts', args: ['--info', '/nonexistent/info.json'], binary: 'gpg', aptPackage: 'gnupg' },
    { script: 'bench/lab/run.ts', args: ['--hosts', '1'], binary: 'supervisord', aptPackage: 'supervisor' },
    { script: 'bench/ssh/run.ts', args: [], binary: 'ssh-keygen', aptPackage: 'openssh-client' },
    { script: 'bench/scan/run.ts', args: [], binary: 'rg', aptPackage: 'ripgrep' },
  ])(
    '$script without $binary names the package $aptPackage and exits 2 before starting anything',
    ({ script, args, binary, aptPackage }) => {
      const r = withPathWithout(binary, (path) => runBench(script, args, path))
      expect(r.stderr).toBe(`${script} needs ${binary}, which is not installed: sudo apt-get install -y ${aptPackage}\n`)
      expect(r.stdout).toBe('')
      expect(r.code).toBe(2)
    },
  )

  it('names every missing program in one sentence, each package once', () => {
    const message = missingToolsMessage('bench/backup/run.ts', [
      { binary: 'gpg', aptPackage: 'gnupg' },
      { binary: 'gpgconf', aptPackage: 'gnupg' },
      { binary: '/usr/bin/time', aptPackage: 'time' },
    ])
    expect(message).toBe(
      'bench/backup/run.ts needs gpg, gpgconf and /usr/bin/time, which are not installed: sudo apt-get install -y gnupg time',
    )
  })
})
