/**
 * `svcops render` as a reviewer uses it: the real CLI in a child process, YAML files on disk that
 * are labelled a preview, valid against the official schema, and free of secret values.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse as parseYaml } from 'yaml'
import { describe, expect, it } from 'vitest'
import { runSvcops, runSvcopsInProcess } from '../support/cli.ts'
import { SECRET_MARKER } from '../../src/infra/preview.ts'
import { validateObject } from '../../src/infra/validate.ts'
import { buildStack, dataOf, deployOf, objectNamed, pskOf, stackConfig, writeStack, type LooseConfig } from './helpers.ts'

const cwd = new URL('../..', import.meta.url).pathname

function svcops(args: string[]) {
  return runSvcops(args, { cwd, env: { SVCOPS_STACKS_DIR: join(cwd, 'stacks') } })
}

/**
 * The same command in this process, for the cases that read only its answer (the exit code, the
 * report, the files): the first case and --help are the real CLI's; a spawn costs the whole
 * program's modules again (about 1.5 s of CPU before it renders).
 */
function svcopsInProcess(args: string[]) {
  return runSvcopsInProcess(args, { env: { SVCOPS_STACKS_DIR: join(cwd, 'stacks') } })
}

// Each test starts the CLI, which runs the whole program: minutes on a busy shared machine.
describe('svcops render', { timeout: 240_000 }, () => {
  it('writes one valid YAML file per object of the dev stack, labelled a preview, secrets masked', async () => {
    const out = mkdtempSync(join(tmpdir(), 'svcops-render-'))
    writeFileSync(
      join(out, '99-deployment-gone.yaml'),
      '# PREVIEW rendered by svcops render --stack dev (an object that no longer exists)\n',
    )
    writeFileSync(join(out, 'notes.yaml'), 'kept: true\n')
    const { code, stdout, stderr } = await svcops(['render', '--stack', 'dev', '--out', out, '--json'])
    expect(code, stderr).toBe(0)
    const report = JSON.parse(stdout) as { ok: boolean; preview: boolean; files: { file: string; kind: string }[] }
    expect(report).toMatchObject({ ok: true, preview: true })

    const files = readdirSync(out).filter((f) => /^\d\d-/.test(f))
    expect(files.sort()).toEqual(report.files.map((f) => f.file).sort())
    expect(files).not.toContain('99-deployment-gone.yaml')
    expect(readFileSync(join(out, 'notes.yaml'), 'utf8')).toBe('kept: true\n')
    expect(report.files.map((f) => f.kind)).toEqual(
      expect.arrayContaining(['Namespace', 'Secret', 'Deployment', 'Service', 'NetworkPolicy', 'PodDisruptionBudget']),
    )

    // The same stack built in-process gives the same stand-in PSK, so the files can be searched for it.
    const psk = pskOf(await buildStack('dev'))
    for (const file of [...files, 'outputs.yaml']) {
      const text = readFileSync(join(out, file), 'utf8')
      expect(text.startsWith('# PREVIEW rendered by svcops render --stack dev'), file).toBe(true)
      expect(text, file).not.toContain(psk)
      if (file === 'outputs.yaml') continue
      const object = parseYaml(text) as Record<string, unknown>
      if (object.kind === 'Secret')
        expect(
          Object.values(object.stringData as object).every((v) => v === SECRET_MARKER),
          file,
        ).toBe(true)
      else expect(() => validateObject(object), file).not.toThrow()
    }
    const pskFile = files.find((f) => f.endsWith('-secret-svc-psk.yaml'))
    expect(pskFile).toBeDefined()
    expect(readFileSync(join(out, pskFile ?? ''), 'utf8')).toContain(SECRET_MARKER)
    expect(dataOf(objectNamed(await buildStack('dev'), 'Secret', 'svc-psk')).psk).toBe(psk)
  })

  it('exits 2 naming the field of an invalid stack, and writes nothing', async () => {
    const config: LooseConfig = structuredClone(stackConfig('dev'))
    deployOf(config).live.version = '5.x'
    const file = writeStack('dev', config)
    const out = join(mkdtempSync(join(tmpdir(), 'svcops-render-')), 'out')
    const { code, stderr } = await svcopsInProcess(['render', '--stack', 'dev', '--stack-file', file, '--out', out])
    expect(code).toBe(2)
    expect(stderr).toMatch(/deploy\.live\.version: "5\.x" is not valid; expected a release number/)
    expect(existsSync(out)).toBe(false)
  })

  it('writes nothing with --dry-run, but still validates and lists the files; a --secret PSK gets a listed stand-in', async () => {
    const file = writeStack('prod', { ...stackConfig('prod'), 'svcops:psk': { secure: 'v1:c3RhbmQtaW4tY2lwaGVydGV4dA==' } })
    const out = join(mkdtempSync(join(tmpdir(), 'svcops-render-')), 'out')
    const { code, stdout, stderr } = await svcopsInProcess([
      'render',
      '--stack',
      'prod',
      '--stack-file',
      file,
      '--out',
      out,
      '--dry-run',
      '--json',
    ])
    expect(code, stderr).toBe(0)
    const report = JSON.parse(stdout) as { dryRun: boolean; standIns: string[]; files: { kind: string }[] }
    expect(report.dryRun).toBe(true)
    expect(report.standIns).toEqual(expect.arrayContaining(['svcops:psk', 'svcops:databasePassword']))
    expect(report.files.map((f) => f.kind)).toContain('CronJob')
    expect(existsSync(out)).toBe(false)
  })

  it('teaches what it is and is not in --help', async () => {
    const { code, stdout } = await svcops(['render', '--help'])
    expect(code).toBe(0)
    expect(stdout).toContain('PREVIEW')
    expect(stdout).toContain('pulumi preview -s')
    expect(stdout).toContain('Examples:')
  })
})
