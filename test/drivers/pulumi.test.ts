/**
 * The Pulumi driver at its seam: the exact argv of every `pulumi` invocation (started through a
 * `pulumi` ARGV RECORDER first on PATH, test/support/pulumi-argv-recorder.ts, which is not Pulumi),
 * the folder it runs in and the variables it gets; and the preview rule on recorded
 * `pulumi preview --json` documents in the shape Pulumi prints (its `PreviewDigest`: steps with op,
 * urn, diffReasons, detailedDiff; diagnostics; changeSummary).
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse as parseYaml, stringify as toYaml } from 'yaml'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { BadInputError, OperationError } from '../../src/core/errors.ts'
import {
  parsePreview,
  PulumiCli,
  pulumiArgv,
  pulumiStackOf,
  readStackVersion,
  urnParts,
  versionKeyOf,
  versionOnlyChanges,
  type PreviewDigest,
} from '../../src/drivers/pulumi.ts'
import { buildStack } from '../infra/helpers.ts'
import { ROOT } from '../support/cli.ts'
import { createPulumiArgvRecorder, type ArgvRecorder } from '../support/pulumi-argv-recorder.ts'

const fixture = (name: string): string => readFileSync(join(import.meta.dirname, 'fixtures', name), 'utf8')
const NAMES = { deployment: 'svc-recording-deployment', stackMap: 'svc-svcops-stack' }

/** A throwaway project: Pulumi.yaml (stackConfigDir: stacks) and the shipped prod stack file. */
function project(): { dir: string; stackFile: string } {
  const dir = mkdtempSync(join(tmpdir(), 'svcops-pulumi-project-'))
  mkdirSync(join(dir, 'stacks'))
  copyFileSync(join(ROOT, 'Pulumi.yaml'), join(dir, 'Pulumi.yaml'))
  copyFileSync(join(ROOT, 'stacks/Pulumi.prod.yaml'), join(dir, 'stacks/Pulumi.prod.yaml'))
  return { dir, stackFile: join(dir, 'stacks/Pulumi.prod.yaml') }
}

describe('pulumi commands', () => {
  const s = { projectDir: '/srv/svcops', stack: 'prod', stackFile: '/srv/svcops/stacks/Pulumi.prod.yaml' }

  it('are these argv, exactly', () => {
    expect(pulumiArgv.version()).toEqual(['pulumi', 'version'])
    expect(pulumiArgv.stacks()).toEqual(['pulumi', 'stack', 'ls', '--json', '--non-interactive'])
    expect(pulumiArgv.configSet(s, 'svcops:recording.version', '2.0.0')).toEqual([
      'pulumi',
      'config',
      'set',
      '--path',
      '--stack',
      'prod',
      '--non-interactive',
      '--',
      'svcops:recording.version',
      '2.0.0',
    ])
    expect(pulumiArgv.configRm(s, 'svcops:deploy.recording.heldReplicas')).toEqual([
      'pulumi',
      'config',
      'rm',
      '--path',
      '--stack',
      'prod',
      '--non-interactive',
      '--',
      'svcops:deploy.recording.heldReplicas',
    ])
    expect(pulumiArgv.preview(s)).toEqual(['pulumi', 'preview', '--stack', 'prod', '--json', '--refresh', '--non-interactive'])
    expect(pulumiArgv.up(s, ['urn:a', 'urn:b'])).toEqual([
      'pulumi',
      'up',
      '--stack',
      'prod',
      '--yes',
      '--refresh',
      '--non-interactive',
      '--skip-preview',
      '--target',
      'urn:a',
      '--target',
      'urn:b',
    ])
  })

  it('set the key the program reads the version from: deploy.recording.version when the stack sets it, else recording.version', () => {
    expect(versionKeyOf('2.0.0')).toBe('svcops:deploy.recording.version')
    expect(versionKeyOf(undefined)).toBe('svcops:recording.version')
  })
})

describe('the stack file Pulumi reads', () => {
  it("is found through Pulumi.yaml's stackConfigDir, and the version is read from the file itself", () => {
    const p = project()
    expect(pulumiStackOf(p.stackFile, 'prod')).toEqual({ projectDir: p.dir, stack: 'prod', stackFile: p.stackFile })
    expect(readStackVersion(p.stackFile, 'svcops:recording.version')).toBe('1.5.0')
    expect(readStackVersion(p.stackFile, 'svcops:deploy.recording.version')).toBeUndefined()
  })

  it('refuses a stack file Pulumi would not read for the stack: the version would be set in one file and deployed from another', () => {
    const p = project()
    const elsewhere = join(p.dir, 'Pulumi.prod.yaml')
    copyFileSync(p.stackFile, elsewhere)
    expect(() => pulumiStackOf(elsewhere, 'prod')).toThrow(BadInputError)
    expect(() => pulumiStackOf(elsewhere, 'prod')).toThrow(
      `${elsewhere} is not the stack file Pulumi reads for stack 'prod' (${p.stackFile})`,
    )
    const lone = join(mkdtempSync(join(tmpdir(), 'svcops-lone-')), 'Pulumi.prod.yaml')
    copyFileSync(p.stackFile, lone)
    expect(() => pulumiStackOf(lone, 'prod')).toThrow(/^No Pulumi\.yaml above /)
  })
})

describe('the preview rule, on recorded `pulumi preview --json` output', () => {
  it('takes the Deployment and the jobs’ stack copy as the version change, and targets exactly them', () => {
    const r = versionOnlyChanges(parsePreview(fixture('preview-version-only.json')) as PreviewDigest, NAMES)
    expect(r.other).toEqual([])
    expect(r.targets.map((u) => urnParts(u).name)).toEqual(['svc-recording-deployment', 'svc-svcops-stack'])
  })

  it('refuses any other change, listing each with what it changes', () => {
    const r = versionOnlyChanges(parsePreview(fixture('preview-version-and-others.json')) as PreviewDigest, NAMES)
    expect(r.other).toEqual([
      'update kubernetes:core/v1:ConfigMap svc-manager-config (data["SVC_TOKEN_LIFETIME_SECONDS"])',
      'create kubernetes:networking.k8s.io/v1:NetworkPolicy allow-monitoring',
      'delete kubernetes:core/v1:Service svc-ingest-service',
    ])
  })

  it('refuses a change of the Deployment beyond its image and version labels, and an error diagnostic', () => {
    const r = versionOnlyChanges(parsePreview(fixture('preview-mixed-deployment.json')) as PreviewDigest, NAMES)
    expect(r.targets).toEqual([])
    expect(r.other).toEqual([
      'update kubernetes:apps/v1:Deployment svc-recording-deployment (spec.template.spec.containers[0].image, spec.template.spec.containers[0].resources.limits.memory)',
      'error: svcops:deploy.recording.resources: expected at least memory',
    ])
  })

  it('accepts a change of the Deployment’s replicas only as the stack’s own hold (the run’s stop and start), never of another object', () => {
    const digest: PreviewDigest = {
      steps: [
        {
          op: 'update',
          urn: 'urn:pulumi:prod::svcops::svcops:infra:RecordingService$kubernetes:apps/v1:Deployment::svc-recording-deployment',
          detailedDiff: { 'spec.replicas': { kind: 'update', inputDiff: false } },
        },
      ],
    }
    expect(versionOnlyChanges(digest, NAMES).other).toHaveLength(1)
    expect(versionOnlyChanges(digest, NAMES, { ownReplicas: true })).toEqual({
      targets: [digest.steps[0]?.urn],
      other: [],
      unready: [],
      outside: [],
    })
    const map: PreviewDigest = {
      steps: [
        {
          op: 'update',
          urn: 'urn:pulumi:prod::svcops::svcops:infra:ScheduledJobs$kubernetes:core/v1:ConfigMap::svc-svcops-stack',
          detailedDiff: { 'spec.replicas': { kind: 'update', inputDiff: true } },
        },
      ],
    }
    expect(versionOnlyChanges(map, NAMES, { ownReplicas: true }).other).toHaveLength(1)
  })

  it('reads an update with no diff whose state has initialization errors as an object not ready: named, never a target, never a change', () => {
    const ingest = 'urn:pulumi:prod::svcops::svcops:infra:MediaComponent$kubernetes:apps/v1:Deployment::svc-ingest-deployment'
    const errors = [
      '[MinimumReplicasUnavailable] Deployment does not have minimum availability.',
      'Minimum number of live Pods was not attained',
    ]
    const digest: PreviewDigest = {
      steps: [
        { op: 'refresh', urn: ingest },
        { op: 'update', urn: ingest, oldState: { initErrors: errors } },
        {
          op: 'update',
          urn: 'urn:pulumi:prod::svcops::svcops:infra:RecordingService$kubernetes:apps/v1:Deployment::svc-recording-deployment',
          detailedDiff: { 'spec.template.spec.containers[0].image': { kind: 'update', inputDiff: true } },
        },
      ],
    }
    const r = versionOnlyChanges(digest, NAMES)
    expect(r.other).toEqual([])
    expect(r.targets).toEqual([digest.steps[2]?.urn])
    expect(r.unready).toEqual([`kubernetes:apps/v1:Deployment svc-ingest-deployment is not ready (${errors.join('; ')})`])
    // The same step with a diff is a change as before; without initErrors an empty update is one too.
    const changed = structuredClone(digest)
    changed.steps[1] = { ...changed.steps[1]!, detailedDiff: { 'spec.replicas': { kind: 'update', inputDiff: true } } }
    expect(versionOnlyChanges(changed, NAMES).other).toHaveLength(1)
    expect(versionOnlyChanges({ steps: [{ op: 'update', urn: ingest }] }, NAMES).other).toEqual([
      'update kubernetes:apps/v1:Deployment svc-ingest-deployment',
    ])
    // What the cluster says is escaped: a control character in an error reaches no terminal.
    const hostile: PreviewDigest = { steps: [{ op: 'update', urn: ingest, oldState: { initErrors: ['bad\u001b[2Jpod'] } }] }
    expect(versionOnlyChanges(hostile, NAMES).unready[0]).not.toContain('\u001b')
  })

  it('names the program’s own resources (the names the rule allows are the ones the Pulumi program registers)', async () => {
    const prod = await buildStack('prod')
    const names = new Set(prod.resources.map((r) => `${r.type} ${r.name}`))
    expect(names).toContain('kubernetes:apps/v1:Deployment svc-recording-deployment')
    // One writer of the Deployment's replicas: no patch resource beside it.
    expect([...names].filter((n) => n.startsWith('kubernetes:apps/v1:DeploymentPatch'))).toEqual([])
    expect(names).toContain('kubernetes:core/v1:ConfigMap svc-svcops-stack')
  })
})

describe('the Pulumi CLI, started through an argv recorder', () => {
  let recorder: ArgvRecorder
  let saved: NodeJS.ProcessEnv
  beforeEach(() => {
    recorder = createPulumiArgvRecorder()
    saved = { ...process.env }
    process.env.PATH = `${recorder.binDir}:${process.env.PATH ?? ''}`
    process.env.PULUMI_CONFIG_PASSPHRASE = 'a-passphrase-only-the-environment-carries'
    process.env.SVCOPS_MANAGER_PASSWORD = 'not-for-pulumi'
  })
  afterEach(() => {
    process.env = saved
  })

  it('runs in the project folder with its backend variables, never svcops’ own credentials, and nothing secret in argv', async () => {
    const p = project()
    recorder.answer('version', 'v3.150.0\n')
    const cli = new PulumiCli(pulumiStackOf(p.stackFile, 'prod'))
    expect(await cli.version()).toBe('3.150.0')
    const [call] = recorder.calls()
    expect(call?.argv).toEqual(['version'])
    expect(call?.cwd).toBe(p.dir)
    expect(call?.envNames).toContain('PULUMI_CONFIG_PASSPHRASE')
    expect(call?.envNames).not.toContain('SVCOPS_MANAGER_PASSWORD')
    expect(JSON.stringify(recorder.calls())).not.toContain('a-passphrase-only-the-environment-carries')
  })

  it("passes the program the variable its { env: X } database password names, and no other of svcops' variables", async () => {
    const p = project()
    const doc = parseYaml(readFileSync(p.stackFile, 'utf8')) as { config: Record<string, Record<string, unknown>> }
    doc.config['svcops:recording'] = {
      ...doc.config['svcops:recording'],
      database: { ...(doc.config['svcops:recording']?.database as object), password: { env: 'SVCOPS_TEST_DB_PASSWORD' } },
    }
    writeFileSync(p.stackFile, toYaml(doc))
    process.env.SVCOPS_TEST_DB_PASSWORD = 'db-password-the-program-reads'
    recorder.answer('version', 'v3.150.0\n')
    await new PulumiCli(pulumiStackOf(p.stackFile, 'prod')).version()
    const [call] = recorder.calls()
    expect(call?.envNames).toContain('SVCOPS_TEST_DB_PASSWORD')
    expect(call?.envNames).not.toContain('SVCOPS_MANAGER_PASSWORD')
    expect(JSON.stringify(call?.argv)).not.toContain('db-password-the-program-reads')
  })

  it('refuses a CLI older than the driver needs, and a stack the backend does not have', async () => {
    const p = project()
    const cli = new PulumiCli(pulumiStackOf(p.stackFile, 'prod'))
    recorder.answer('version', 'v3.40.1\n')
    await expect(cli.version()).rejects.toThrow('The Pulumi CLI is 3.40.1; the Kubernetes platform needs 3.100.0 or newer.')
    recorder.answer('stack', JSON.stringify([{ name: 'staging', current: false }]))
    await expect(cli.checkStack()).rejects.toThrow("The Pulumi stack 'prod' does not exist in the logged-in backend (it has staging).")
    recorder.answer('stack', JSON.stringify([{ name: 'acme/svcops/prod', current: true, updateInProgress: true }]))
    await expect(cli.checkStack()).rejects.toThrow("An update of the Pulumi stack 'prod' is in progress")
    expect(recorder.calls().map((c) => c.argv)).toEqual([
      ['version'],
      ['stack', 'ls', '--json', '--non-interactive'],
      ['stack', 'ls', '--json', '--non-interactive'],
    ])
  })

  it('sets the version with `pulumi config set --path` and checks the stack file holds it afterwards', async () => {
    const p = project()
    const cli = new PulumiCli(pulumiStackOf(p.stackFile, 'prod'))
    // The recorder writes no file, so the check after the command finds the old version: the run stops there.
    const error = await cli.setVersion('svcops:recording.version', '2.0.0').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OperationError)
    expect((error as Error).message).toBe(`After 'pulumi config set', ${p.stackFile} holds svcops:recording.version = 1.5.0, not 2.0.0.`)
    expect(recorder.calls().at(-1)?.argv).toEqual([
      'config',
      'set',
      '--path',
      '--stack',
      'prod',
      '--non-interactive',
      '--',
      'svcops:recording.version',
      '2.0.0',
    ])
  })

  it('reads the preview document, and names the first error of a failed preview', async () => {
    const p = project()
    const cli = new PulumiCli(pulumiStackOf(p.stackFile, 'prod'))
    recorder.answer('preview', fixture('preview-version-only.json'))
    expect((await cli.preview()).steps).toHaveLength(6)
    recorder.answer('preview', fixture('preview-mixed-deployment.json'), 255)
    await expect(cli.preview()).rejects.toThrow(
      "'pulumi preview' of stack 'prod' failed (exit 255): svcops:deploy.recording.resources: expected at least memory",
    )
  })

  it('runs `pulumi up` with one --target per URN the preview showed, and not at all without one', async () => {
    const p = project()
    const cli = new PulumiCli(pulumiStackOf(p.stackFile, 'prod'))
    const { targets } = versionOnlyChanges(parsePreview(fixture('preview-version-only.json')) as PreviewDigest, NAMES)
    await cli.up(targets)
    await cli.up([])
    expect(recorder.calls().map((c) => c.argv)).toEqual([
      ['up', '--stack', 'prod', '--yes', '--refresh', '--non-interactive', '--skip-preview', ...targets.flatMap((t) => ['--target', t])],
    ])
  })

  it('writes nothing itself: the stack file is only changed by Pulumi', async () => {
    const p = project()
    const before = readFileSync(p.stackFile, 'utf8')
    const cli = new PulumiCli(pulumiStackOf(p.stackFile, 'prod'))
    await cli.setVersion('svcops:recording.version', '2.0.0').catch(() => undefined)
    expect(readFileSync(p.stackFile, 'utf8')).toBe(before)
    writeFileSync(p.stackFile, before.replace("version: '1.5.0'", "version: '2.0.0'"))
    await cli.setVersion('svcops:recording.version', '2.0.0')
  })
})
