/**
 * Every stack file under stacks/ is an example users copy, so each is tried as a user would try it
 * on a machine that holds none of its secrets and reaches none of its hosts: it passes the schema,
 * renders (`svcops render`, when it deploys with svcops:deploy), and every command of each system it
 * configures, as a dry run where the command changes something, either succeeds or stops on a missing
 * secret or an unreachable host that its answer names. The stacks are found by listing the folder, so
 * a new example is covered the day it is added.
 */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse as parseYaml } from 'yaml'
import { beforeAll, describe, expect, it } from 'vitest'
import { loadEnvironmentFile } from '../../src/config/load.ts'
import { ROOT, runSvcopsInProcess, type CliRun } from '../support/cli.ts'

const STACKS_DIR = join(ROOT, 'stacks')
const STACKS = readdirSync(STACKS_DIR)
  .flatMap((f) => /^Pulumi\.([\w-]+)\.yaml$/.exec(f)?.slice(1, 2) ?? [])
  .sort()

/** Where the API server of every stack's kubeconfig context is: a loopback port nothing listens on. */
const UNREACHABLE_API = '127.0.0.1:9'

type Config = Record<string, unknown>

function configOf(stack: string): Config {
  const file = parseYaml(readFileSync(join(STACKS_DIR, `Pulumi.${stack}.yaml`), 'utf8')) as { config?: Config }
  return file.config ?? {}
}

/**
 * What an answer may name when it stops: a secret the stack refers to (an environment variable, a
 * file, a key file), a file of the site it reads (the gates' inputs: SDK sources, saved calls,
 * dashboards; like a key file, present where svcops runs and not on this machine), or a host it
 * reaches (SSH hosts, URLs, the database, the Kubernetes context and its API server). Collected
 * from the stack file itself, not from the code under test.
 */
function namedSecretsAndHosts(config: Config): string[] {
  const names = new Set<string>([UNREACHABLE_API])
  const walk = (value: unknown, key: string): void => {
    if (Array.isArray(value)) {
      for (const v of value) walk(v, key)
      return
    }
    if (value && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) walk(v, k)
      return
    }
    if (typeof value !== 'string') return
    const named = ['env', 'file', 'keyFile', 'recipients', 'signers', 'sdkSourceDirs', 'savedRequests', 'metricFiles']
    if ([...named, 'host', 'address', 'kubernetes:context', 'kubeconfig'].includes(key)) names.add(value)
    if (/^https?:\/\//.test(value)) names.add(new URL(value).hostname)
  }
  for (const [k, v] of Object.entries(config)) walk(v, k)
  return [...names]
}

function semver(v: string): [number, number, number] {
  const [major = 0, minor = 0, patch = 0] = v.split('.').map(Number)
  return [major, minor, patch]
}

/** A release after `v` that the catalog knows (the live system's catalog ends at 7.x). */
function newer(v: string, lastMajor: number): string {
  const [major, minor] = semver(v)
  return major < lastMajor ? `${major + 1}.0.0` : `${major}.${minor + 1}.0`
}

/** A release before `v`. */
function older(v: string): string {
  const [major, minor] = semver(v)
  return minor > 0 ? `${major}.${minor - 1}.0` : `${Math.max(major - 1, 0)}.9.0`
}

/** The release the live system of the stack runs, as the stack says: its hosts section or the Pulumi program's. */
function liveVersionOf(config: Config): string | undefined {
  const live = config['svcops:live'] as { version?: string } | undefined
  const deploy = config['svcops:deploy'] as { live?: { version?: string } } | undefined
  return live?.version ?? deploy?.live?.version
}

/** Each command a user of the stack runs, with --dry-run where the command changes something. */
function commandsOf(stack: string, config: Config, outDir: string): string[][] {
  const commands: string[][] = []
  const env = ['--env', stack]
  if (config['svcops:deploy']) commands.push(['render', '--stack', stack, '--out', outDir, '--dry-run'])
  const recording = config['svcops:recording'] as { version?: string } | undefined
  if (recording) {
    const version = recording.version ?? '1.5.0'
    commands.push(
      ['upgrade', 'recording', ...env, '--to', newer(version, 2), '--dry-run'],
      ['rollback', 'recording', ...env, '--to', older(version), '--dry-run'],
      ['verify', 'recording', ...env],
    )
  }
  if (config['svcops:backup']) commands.push(['backup', 'run', ...env, '--dry-run'])
  if (config['svcops:live']) {
    const from = liveVersionOf(config) ?? '6.2.0'
    const to = newer(from, 7)
    commands.push(
      ['plan', 'live', ...env, '--from', from, '--to', to],
      ['upgrade', 'live', ...env, '--to', to, '--from', from, '--dry-run'],
      ['rollback', 'live', ...env, '--dry-run'],
      ['verify', 'live', ...env],
    )
  }
  return commands
}

/** The hosts of the stack that it reaches over SSH (recording.hosts, live.host, live.hosts). */
function sshHostsOf(config: Config): Set<string> {
  const recording = config['svcops:recording'] as { hosts?: { name: string; ssh?: unknown }[] } | undefined
  const live = config['svcops:live'] as { host?: { name: string; ssh?: unknown }; hosts?: { name: string; ssh?: unknown }[] } | undefined
  const hosts = [...(recording?.hosts ?? []), ...(live?.host ? [live.host] : []), ...(live?.hosts ?? [])]
  return new Set(hosts.filter((h) => h.ssh !== undefined).map((h) => h.name))
}

/** A host's package manager or service manager: what must never run on this machine by accident. */
const HOST_COMMAND = /\b(systemctl|apt-get|dpkg|dnf|supervisorctl)\b/

/**
 * The package or service manager commands of a dry-run answer outside the steps of a host the stack
 * reaches over SSH: they would run on the machine svcops runs on (no shipped stack says
 * `transport: local`). A Kubernetes step names a component or pod as its host, and runs none.
 */
function localActionsOf(stdout: string, sshHosts: Set<string>): string[] {
  let answer: { steps?: { step: string; host?: string; actions?: string[] }[] }
  try {
    answer = JSON.parse(stdout) as typeof answer
  } catch {
    return []
  }
  return (answer.steps ?? [])
    .filter((s) => s.host === undefined || !sshHosts.has(s.host))
    .flatMap((s) => (s.actions ?? []).filter((a) => HOST_COMMAND.test(a)).map((a) => `${s.step} on ${s.host ?? 'this machine'}: ${a}`))
}

interface Answer {
  ok?: boolean
  error?: { message?: string }
  summary?: { blockers?: { step: string; reason: string; exitCode: number; ids?: string[] }[] }
}

/**
 * Why the answer is not acceptable, or undefined when it is: exit 0; or each reason it stops for
 * names a secret or host of the stack. Two stops are what the command is for and name neither: the
 * gates a live upgrade lists for people (exit 5, each with its id), and a rollback asked for in an
 * environment that has no upgrade run yet.
 */
function refusalOf(run: CliRun, names: string[]): string | undefined {
  if (run.code === 0) return undefined
  let answer: Answer
  try {
    answer = JSON.parse(run.stdout) as Answer
  } catch {
    return `exit ${String(run.code)} without a JSON answer: ${run.stderr}`
  }
  const reasons = answer.summary?.blockers?.length
    ? answer.summary.blockers.filter((b) => !(b.step === 'gates' && b.exitCode === 5 && b.ids?.length)).map((b) => b.reason)
    : [answer.error?.message ?? run.stderr]
  const unnamed = reasons.filter(
    (r) => !names.some((n) => r.includes(n)) && !/^There is no (live )?upgrade run of environment '[\w-]+' to roll back\.$/.test(r),
  )
  return unnamed.length
    ? `exit ${String(run.code)}, stopped for what is neither a missing secret nor an unreachable host: ${unnamed.join(' | ')}`
    : undefined
}

let env: Record<string, string>
let outDir: string

beforeAll(() => {
  const dir = mkdtempSync(join(tmpdir(), 'svcops-stack-examples-'))
  outDir = join(dir, 'rendered')
  // Every context a stack names, each at a port nothing listens on: the API is named, never reached.
  const contexts = [...new Set(STACKS.map((s) => configOf(s)['kubernetes:context']).filter((c): c is string => typeof c === 'string'))]
  const kubeconfig = join(dir, 'kubeconfig')
  writeFileSync(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      `  - { name: unreachable, cluster: { server: 'https://${UNREACHABLE_API}' } }`,
      'users:',
      '  - { name: nobody, user: { token: not-a-token } }',
      'contexts:',
      ...contexts.map((c) => `  - { name: ${c}, context: { cluster: unreachable, user: nobody } }`),
      '',
    ].join('\n'),
  )
  env = { KUBECONFIG: kubeconfig, SVCOPS_RUNS_DIR: join(dir, 'runs') }
})

describe('the stack files', () => {
  it('are found by listing stacks/, and include a hosts and a Kubernetes example', () => {
    expect(STACKS.length).toBeGreaterThanOrEqual(4)
    expect(STACKS.some((s) => !configOf(s)['svcops:deploy'])).toBe(true)
    expect(STACKS.some((s) => !!configOf(s)['svcops:deploy'])).toBe(true)
  })
})

describe.each(STACKS)('stack %s', (stack) => {
  const config = configOf(stack)

  it('passes the schema', () => {
    expect(() => loadEnvironmentFile(join(STACKS_DIR, `Pulumi.${stack}.yaml`), stack)).not.toThrow()
  })

  it('renders, and dry-runs every command of each system it configures, stopping only on a missing secret or an unreachable host it names', async () => {
    const names = namedSecretsAndHosts(config)
    const commands = commandsOf(stack, config, join(outDir, stack))
    expect(commands.length).toBeGreaterThan(0)
    const sshHosts = sshHostsOf(config)
    const refused: string[] = []
    const local: string[] = []
    for (const args of commands) {
      const run = await runSvcopsInProcess([...args, '--json'], { env })
      const why = refusalOf(run, names)
      if (why) refused.push(`svcops ${args.join(' ')}: ${why}`)
      local.push(...localActionsOf(run.stdout, sshHosts).map((a) => `svcops ${args.join(' ')}: ${a}`))
    }
    expect(refused).toEqual([])
    // Nothing is planned on the machine svcops runs on: no stack here says transport: local.
    expect(local).toEqual([])
    // Nothing a dry run did changed the example.
    expect(configOf(stack)).toEqual(config)
  })
})
