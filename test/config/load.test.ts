import { chmodSync, mkdtempSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadEnvironment, loadEnvironmentFile } from '../../src/config/load.ts'
import { readSecret } from '../../src/config/secrets.ts'
import { BadInputError } from '../../src/core/errors.ts'
import { redact } from '../../src/core/redact.ts'

const valid = {
  'svcops:manager': { url: 'https://manager.test', email: 'ops@example.test', password: { env: 'SVCOPS_TEST_PASSWORD' } },
  'svcops:recording': {
    version: '1.5.0',
    hosts: [{ name: 'rec-1', url: 'http://127.0.0.1:8080' }],
    database: { host: '127.0.0.1', name: 'recordings', user: 'recorder' },
  },
}

/** Writes a stack file built from an object literal into a throwaway directory. */
function stackFile(config: Record<string, unknown>, name = 'test'): string {
  const dir = mkdtempSync(join(tmpdir(), 'svcops-config-'))
  const file = join(dir, `Pulumi.${name}.yaml`)
  writeFileSync(file, JSON.stringify({ config }))
  return file
}

describe('environment loader', () => {
  it('loads a valid stack file and fills the defaults', () => {
    const env = loadEnvironmentFile(stackFile(valid))
    expect(env.name).toBe('test')
    expect(env.product).toEqual({ prefix: 'svc', dir: 'svc' })
    expect(env.manager?.apiRevision).toBe('1.6.2')
    expect(env.recording?.scopes.read).toBe('urn:svc:recorder:content:read')
    expect(env.recording?.database.port).toBe(5432)
  })

  it('loads the shipped prod and staging stacks on the kubernetes platform, with their kubernetes:context, and keeps hosts the default', () => {
    for (const name of ['prod', 'staging']) {
      const env = loadEnvironment({ env: name })
      expect(env.recording?.platform).toBe('kubernetes')
      expect(env.recording?.hosts).toEqual([])
      expect(env.kubernetes?.context).toBe(`${name}-cluster`)
    }
    expect(loadEnvironmentFile(stackFile(valid)).recording?.platform).toBe('hosts')
  })

  it('loads the example stack shipped in stacks/', () => {
    const env = loadEnvironment({ env: 'example' })
    expect(env.recording?.hosts.map((h) => h.name)).toEqual(['rec-1', 'rec-2'])
  })

  const invalid: Array<[string, Record<string, unknown>, RegExp]> = [
    [
      'a port out of range',
      { ...valid, 'svcops:recording': { ...valid['svcops:recording'], database: { ...valid['svcops:recording'].database, port: 70000 } } },
      /recording\.database\.port: 70000 is not valid; .*65535/,
    ],
    [
      'a bad host url',
      { ...valid, 'svcops:recording': { ...valid['svcops:recording'], hosts: [{ name: 'rec-1', url: 'ftp://x' }] } },
      /recording\.hosts\[0\]\.url: "ftp:\/\/x" is not valid; expected an http/,
    ],
    [
      'a password given as a value',
      { ...valid, 'svcops:manager': { ...valid['svcops:manager'], password: 'hunter2hunter2' } },
      /manager\.password: a value is not valid; expected a reference/,
    ],
    [
      'an unknown field',
      { ...valid, 'svcops:manager': { ...valid['svcops:manager'], token: 'x' } },
      /manager: unknown field token; secrets are given by reference/,
    ],
    [
      'a bad version',
      { ...valid, 'svcops:recording': { ...valid['svcops:recording'], version: 'latest' } },
      /recording\.version: "latest" is not valid; expected a version like 1\.5\.0/,
    ],
    [
      'a host key that is not a SHA-256 fingerprint',
      {
        ...valid,
        'svcops:recording': {
          ...valid['svcops:recording'],
          hosts: [{ name: 'rec-1', url: 'http://a', ssh: { host: 'a', user: 'svcops', hostKey: 'MD5:16:27:ac' } }],
        },
      },
      /recording\.hosts\[0\]\.ssh\.hostKey: "MD5:16:27:ac" is not valid; expected a SHA-256 host key fingerprint as ssh-keygen -lf prints it/,
    ],
    [
      'two hosts with one name',
      {
        ...valid,
        'svcops:recording': {
          ...valid['svcops:recording'],
          hosts: [
            { name: 'a', url: 'http://a' },
            { name: 'a', url: 'http://b' },
          ],
        },
      },
      /recording\.hosts\[1\]\.name: "a" is used twice/,
    ],
    [
      'a package name that is an apt option',
      { ...valid, 'svcops:recording': { ...valid['svcops:recording'], package: '-oDPkg::Pre-Invoke::=touch /tmp/pwned' } },
      /recording\.package: "-oDPkg::Pre-Invoke::=touch \/tmp\/pwned" is not valid; expected a package name \(letters, digits, "\+", "-", "\.", "_"; not starting with "-"\)/,
    ],
    [
      'a package name against Debian policy with the apt driver',
      { ...valid, 'svcops:recording': { ...valid['svcops:recording'], package: 'Svc_Recording' } },
      /recording\.package: "Svc_Recording" is not a Debian package name; expected lower-case letters/,
    ],
    [
      'a unit name that is a systemctl option',
      { ...valid, 'svcops:recording': { ...valid['svcops:recording'], service: '--host=evil' } },
      /recording\.service: "--host=evil" is not valid; expected a unit name/,
    ],
    [
      'a unit name with a space',
      { ...valid, 'svcops:recording': { ...valid['svcops:recording'], service: 'svc recording' } },
      /recording\.service: "svc recording" is not valid; expected a unit name/,
    ],
    [
      'no host on the hosts platform',
      { ...valid, 'svcops:recording': { ...valid['svcops:recording'], hosts: [] } },
      /recording\.hosts: \[\] is not valid; expected at least one host \(recording\.platform is hosts\)/,
    ],
    [
      'hosts on the kubernetes platform',
      { ...valid, 'svcops:recording': { ...valid['svcops:recording'], platform: 'kubernetes' } },
      /recording\.hosts: 1 host\(s\) given; expected none, since recording\.platform is kubernetes/,
    ],
    [
      'the kubernetes platform without svcops:deploy',
      { ...valid, 'svcops:recording': { ...valid['svcops:recording'], platform: 'kubernetes', hosts: [] } },
      /svcops:deploy: missing; recording\.platform kubernetes takes the namespace and the Deployment from it/,
    ],
    [
      'an unknown platform',
      { ...valid, 'svcops:recording': { ...valid['svcops:recording'], platform: 'nomad' } },
      /recording\.platform: "nomad" is not valid; .*expected one of "hosts"\|"kubernetes"/,
    ],
    [
      'a kubernetes:context that is not a string',
      { ...valid, 'kubernetes:context': 42 },
      /kubernetes:context: 42 is not valid; expected a non-empty string/,
    ],
  ]
  it.each(invalid)('refuses %s with the dot-path of the field', (_what, config, message) => {
    expect(() => loadEnvironmentFile(stackFile(config))).toThrow(BadInputError)
    expect(() => loadEnvironmentFile(stackFile(config))).toThrow(message)
  })

  it('never echoes a secret given as a value', () => {
    const config = { ...valid, 'svcops:manager': { ...valid['svcops:manager'], password: 'plain-text-secret-9' } }
    expect(() => loadEnvironmentFile(stackFile(config))).toThrow(/^(?!.*plain-text-secret-9)/s)
  })

  it('accepts an RPM package name with the dnf driver', () => {
    const env = loadEnvironmentFile(
      stackFile({ ...valid, 'svcops:recording': { ...valid['svcops:recording'], package: 'Svc_Recording', packageDriver: 'dnf' } }),
    )
    expect(env.recording?.package).toBe('Svc_Recording')
  })

  it('refuses a stack file over the size cap before parsing it (a sparse 60 MB file)', () => {
    const file = stackFile(valid)
    truncateSync(file, 60 << 20)
    expect(() => loadEnvironmentFile(file)).toThrow(
      `${file}: has ${60 << 20} bytes; a stack file has at most ${1 << 20} (it was not parsed).`,
    )
  })

  it('names a missing environment and how to get one', () => {
    expect(() => loadEnvironment({ env: 'nope' })).toThrow(/Pulumi\.nope\.yaml' does not exist/)
    expect(() => loadEnvironment({ env: 'Bad Name' })).toThrow(/--env: 'Bad Name' is not an environment name/)
  })
})

describe('secret references', () => {
  it('reads a secret from an environment variable and registers it for redaction', () => {
    process.env.SVCOPS_TEST_SECRET = 'env-secret-value-42'
    expect(readSecret({ env: 'SVCOPS_TEST_SECRET' }, 'manager.password')).toBe('env-secret-value-42')
    expect(redact('the value env-secret-value-42 leaked')).toBe('the value [REDACTED] leaked')
  })

  it('names an unset variable', () => {
    delete process.env.SVCOPS_TEST_UNSET
    expect(() => readSecret({ env: 'SVCOPS_TEST_UNSET' }, 'manager.password')).toThrow(
      'manager.password: the environment variable SVCOPS_TEST_UNSET is not set',
    )
  })

  it('reads a 0600 file and refuses a group- or world-readable one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svcops-secret-'))
    const file = join(dir, 'pw')
    writeFileSync(file, 'file-secret-value-7\n', { mode: 0o600 })
    expect(readSecret({ file }, 'manager.password')).toBe('file-secret-value-7')
    chmodSync(file, 0o644)
    expect(() => readSecret({ file }, 'manager.password')).toThrow(/has mode 0644, readable by group or others; expected 0600/)
  })
})
