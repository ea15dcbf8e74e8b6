import { chmodSync, mkdtempSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadEnvironment, loadEnvironmentFile } from '../../src/config/load.ts'
import { readSecret } from '../../src/config/secrets.ts'
import { BadInputError } from '../../src/core/errors.ts'
import { LocalHostTransport, transportFor } from '../../src/drivers/transports.ts'
import { redact } from '../../src/core/redact.ts'
import { liveUnits, placedHosts } from '../../src/live/live-placement.ts'

const valid = {
  'svcops:manager': { url: 'https://manager.test', email: 'ops@example.test', password: { env: 'SVCOPS_TEST_PASSWORD' } },
  'svcops:recording': {
    version: '1.5.0',
    hosts: [{ name: 'rec-1', url: 'http://127.0.0.1:8080', transport: 'local' }],
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

  it('loads the shipped dev, prod and staging stacks on the kubernetes platform, with their kubernetes:context, and keeps hosts the default', () => {
    for (const name of ['dev', 'prod', 'staging']) {
      const env = loadEnvironment({ env: name })
      expect(env.recording?.platform).toBe('kubernetes')
      expect(env.recording?.hosts).toEqual([])
      expect(env.kubernetes?.context).toBe(`${name}-cluster`)
    }
    expect(loadEnvironmentFile(stackFile(valid)).recording?.platform).toBe('hosts')
  })

  it('loads the example stack shipped in stacks/', () => {
    const env = loadEnvironment({ env: 'example-hosts' })
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
            { name: 'a', url: 'http://a', transport: 'local' },
            { name: 'a', url: 'http://b', transport: 'local' },
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

describe('how a host is reached: ssh, transport: local or a lab sandbox, never this machine by default', () => {
  const ssh = { host: 'rec-1.example.test', user: 'svcops', hostKey: 'SHA256:Vq9Nn3b0ZkzXj2Yh4VfKcPq1sLrT8mWdE6uA5oJiB7g' }
  const recordingHost = (host: Record<string, unknown>): Record<string, unknown> => ({
    ...valid,
    'svcops:recording': { ...valid['svcops:recording'], hosts: [{ name: 'rec-1', url: 'http://127.0.0.1:8080', ...host }] },
  })
  const liveSection = { version: '5.2.0', controllerUrl: 'http://127.0.0.1:8080' }
  const ports = { 'system-controller': 9100, ingest: 9101, pipeline: 9102, 'control-panel': 9103 }
  const liveOneHost = (host: Record<string, unknown>): Record<string, unknown> => ({
    'svcops:live': { ...liveSection, host: { name: 'live-1', ...host }, metricsPorts: ports },
  })
  const livePlaced = (host: Record<string, unknown>): Record<string, unknown> => ({
    'svcops:live': { ...liveSection, hosts: [{ name: 'live-1', components: ports, ...host }] },
  })
  const noSsh = 'has no ssh; expected ssh: { host, user, hostKey } to reach it, or transport: local to act on this machine.'
  const both = 'has both ssh and transport: local; expected one of them (ssh to reach the host, transport: local for this machine).'

  const refused: [string, Record<string, unknown>, string][] = [
    ['a recording host with neither', recordingHost({}), `recording.hosts[0]: ${noSsh}`],
    ['a recording host with both', recordingHost({ ssh, transport: 'local' }), `recording.hosts[0]: ${both}`],
    ['live.host with neither', liveOneHost({}), `live.host: ${noSsh}`],
    ['live.hosts[0] with neither', livePlaced({}), `live.hosts[0]: ${noSsh}`],
    ['live.hosts[0] with both', livePlaced({ ssh, transport: 'local' }), `live.hosts[0]: ${both}`],
  ]
  it.each(refused)('refuses %s in one sentence naming the host', (_what, config, sentence) => {
    const file = stackFile(config)
    expect(() => loadEnvironmentFile(file)).toThrow(BadInputError)
    expect(() => loadEnvironmentFile(file)).toThrow(`${file}: ${sentence}`)
  })

  it('accepts become on a live host (its rules and their preflight exist: src/live/hosts/live-sudo.ts)', () => {
    expect(() => loadEnvironmentFile(stackFile(livePlaced({ ssh: { ...ssh, become: 'sudo' } })))).not.toThrow()
  })

  it('accepts become on a recording host (its rules and their preflight exist)', () => {
    expect(() => loadEnvironmentFile(stackFile(recordingHost({ ssh: { ...ssh, become: 'sudo' } })))).not.toThrow()
  })

  it('refuses a transport other than local, naming the field', () => {
    expect(() => loadEnvironmentFile(stackFile(recordingHost({ transport: 'ssh' })))).toThrow(
      /recording\.hosts\[0\]\.transport: "ssh" is not valid; expected "local"\./,
    )
  })

  const accepted: [string, Record<string, unknown>][] = [
    ['a recording host over ssh', recordingHost({ ssh })],
    ['a recording host that says transport: local', recordingHost({ transport: 'local' })],
    ['a lab sandbox recording host (root)', recordingHost({ root: '/tmp/svcops-lab/rec-1' })],
    ['live.host that says transport: local', liveOneHost({ transport: 'local' })],
    ['live.hosts[0] over ssh', livePlaced({ ssh })],
  ]
  it.each(accepted)('accepts %s', (_what, config) => {
    expect(() => loadEnvironmentFile(stackFile(config))).not.toThrow()
  })

  it('picks the transport the host declares, and refuses a host built in code that declares none', async () => {
    const local = transportFor({ name: 'rec-1', url: 'http://127.0.0.1:1', transport: 'local', canary: false })
    expect(local).toBeInstanceOf(LocalHostTransport)
    await local.close()
    expect(() => transportFor({ name: 'rec-1', url: 'http://127.0.0.1:1', canary: false })).toThrow(BadInputError)
    expect(() => transportFor({ name: 'rec-1', url: 'http://127.0.0.1:1', canary: false })).toThrow(`host rec-1: ${noSsh}`)
  })
})

describe('svcops:live across hosts (live.hosts)', () => {
  const spread = {
    version: '5.2.0',
    controllerUrl: 'http://10.0.0.1:8080',
    hosts: [
      { name: 'live-1', ssh: { host: '10.0.0.1', user: 'ops' }, components: { 'system-controller': 9100 } },
      { name: 'gpu-1', ssh: { host: '10.0.0.2', user: 'ops' }, components: { ingest: 9101, pipeline: 9102 } },
      { name: 'gpu-2', ssh: { host: '10.0.0.3', user: 'ops' }, components: { ingest: 9101, pipeline: 9102, 'control-panel': 9103 } },
    ],
  }
  const withLive = (live: Record<string, unknown>) => ({ 'svcops:live': live })
  const hosts = spread.hosts

  it('places the controller on one host and each other type on several, the units in dependency order', () => {
    const live = loadEnvironmentFile(stackFile(withLive(spread))).live
    if (live?.platform !== 'hosts') throw new Error('no live section on hosts')
    expect(liveUnits(live).map((u) => u.name)).toEqual([
      'live-1/system-controller',
      'gpu-1/ingest',
      'gpu-2/ingest',
      'gpu-1/pipeline',
      'gpu-2/pipeline',
      'gpu-2/control-panel',
    ])
    expect(placedHosts(live).map((h) => h.address)).toEqual(['10.0.0.1', '10.0.0.2', '10.0.0.3'])
  })

  it('keeps live.host as the one-host form, its units named as the components', () => {
    const one = {
      version: '5.2.0',
      controllerUrl: 'http://127.0.0.1:8080',
      host: { name: 'live-1', transport: 'local' },
      metricsPorts: { 'system-controller': 9100, ingest: 9101, pipeline: 9102, 'control-panel': 9103 },
    }
    const live = loadEnvironmentFile(stackFile(withLive(one))).live
    if (live?.platform !== 'hosts') throw new Error('no live section on hosts')
    expect(liveUnits(live).map((u) => `${u.name}@${u.host}`)).toEqual([
      'system-controller@live-1',
      'ingest@live-1',
      'pipeline@live-1',
      'control-panel@live-1',
    ])
  })

  it('tells the platforms apart by live.platform: hosts when absent or said, kubernetes its own section', () => {
    expect(loadEnvironmentFile(stackFile(withLive(spread))).live?.platform).toBe('hosts')
    expect(loadEnvironmentFile(stackFile(withLive({ ...spread, platform: 'hosts' }))).live?.platform).toBe('hosts')
    expect(() => loadEnvironmentFile(stackFile(withLive({ ...spread, platform: 'containers' })))).toThrow(/live\.platform/)
  })

  const invalid: Array<[string, Record<string, unknown>, RegExp]> = [
    [
      'the controller on two hosts',
      { ...spread, hosts: [...hosts, { name: 'live-2', components: { 'system-controller': 9100 } }] },
      /live\.hosts: .* is not valid; expected the system-controller on exactly one host; it is on live-1, live-2\./,
    ],
    [
      'no host running the controller',
      { ...spread, hosts: hosts.slice(1) },
      /live\.hosts: .* is not valid; expected the system-controller on exactly one host; it is on none\./,
    ],
    [
      'no control panel anywhere',
      { ...spread, hosts: [hosts[0], hosts[1]] },
      /live\.hosts: .* is not valid; expected control-panel on at least one host; no host runs it\./,
    ],
    [
      'a host named twice',
      { ...spread, hosts: [...hosts, { ...hosts[2], name: 'gpu-1' }] },
      /live\.hosts\[3\]\.name: "gpu-1" is not valid; expected each host once; 'gpu-1' is given twice\./,
    ],
    [
      'a host that runs nothing',
      { ...spread, hosts: [...hosts, { name: 'idle', components: {} }] },
      /live\.hosts\[3\]\.components: \{\} is not valid; expected at least one of system-controller, ingest, pipeline, control-panel\./,
    ],
    [
      'an unknown component',
      { ...spread, hosts: [...hosts, { name: 'mix', components: { mixer: 9200 } }] },
      /live\.hosts\[3\]\.components: unknown field mixer\./,
    ],
    [
      'a metrics port out of range',
      { ...spread, hosts: [hosts[0], { ...hosts[1], components: { ingest: 70000 } }, hosts[2]] },
      /live\.hosts\[1\]\.components\.ingest: 70000 is not valid/,
    ],
    [
      'both live.host and live.hosts',
      { ...spread, host: { name: 'live-1' } },
      /live\.hosts: .* is not valid; expected either live\.host \(one host\) or live\.hosts \(several\), not both\./,
    ],
    [
      'neither live.host nor live.hosts',
      { version: '5.2.0', controllerUrl: 'http://127.0.0.1:8080' },
      /live\.host: missing is not valid; expected live\.host \(one host\) or live\.hosts/,
    ],
    [
      'live.host without its ports',
      { version: '5.2.0', controllerUrl: 'http://127.0.0.1:8080', host: { name: 'live-1' } },
      /live\.metricsPorts: missing is not valid; expected the port of each component with live\.host\./,
    ],
  ]
  it.each(invalid)('refuses %s, naming the field', (_what, live, message) => {
    expect(() => loadEnvironmentFile(stackFile(withLive(live)))).toThrow(BadInputError)
    expect(() => loadEnvironmentFile(stackFile(withLive(live)))).toThrow(message)
  })
})

describe('secret references', () => {
  it('reads a secret from an environment variable and registers it for redaction', () => {
    process.env.SVCOPS_TEST_SECRET = 'env-secret-value-42'
    try {
      expect(readSecret({ env: 'SVCOPS_TEST_SECRET' }, 'manager.password')).toBe('env-secret-value-42')
      expect(redact('the value env-secret-value-42 leaked')).toBe('the value [REDACTED] leaked')
    } finally {
      delete process.env.SVCOPS_TEST_SECRET
    }
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

describe('the rehearsal host is never a production host under another name', () => {
  const key = 'SHA256:' + 'A'.repeat(43)
  const production = {
    name: 'rec-1',
    url: 'http://rec-1.example.internal:8080',
    ssh: { host: 'rec-1.example.internal', user: 'svcops', hostKey: key },
  }
  const withRehearsal = (host: Record<string, unknown>) => ({
    ...valid,
    'svcops:recording': { ...valid['svcops:recording'], hosts: [production], rehearsal: { host, database: 'recordings_rehearsal' } },
  })
  const refusal = (host: Record<string, unknown>) => {
    try {
      loadEnvironmentFile(stackFile(withRehearsal(host)))
    } catch (e) {
      expect(e).toBeInstanceOf(BadInputError)
      return (e as Error).message
    }
    return 'accepted'
  }

  it('refuses the same ssh host and port under another user, the same pinned key, or the same URL written differently, naming both hosts', () => {
    const other = { name: 'rehearse-1', url: 'http://rehearse.example:8080' }
    expect(refusal({ ...other, ssh: { host: 'REC-1.example.internal', port: 22, user: 'someone-else' } })).toMatch(
      /recording\.rehearsal\.host: "rehearse-1" has the same ssh host and port \(REC-1\.example\.internal:22\) as the production host rec-1; expected a host of its own\./,
    )
    expect(refusal({ ...other, ssh: { host: '10.0.0.9', user: 'svcops', hostKey: key } })).toMatch(
      /"rehearse-1" has the same pinned ssh host key .* as the production host rec-1/,
    )
    expect(refusal({ name: 'r', url: 'HTTP://Rec-1.example.internal:8080/', transport: 'local' })).toMatch(
      /"r" has the same URL \(http:\/\/rec-1\.example\.internal:8080\) as the production host rec-1/,
    )
    expect(refusal({ name: 'rec-1', url: 'http://rehearse.example:8080', transport: 'local' })).toMatch(/same name \(rec-1\)/)
  })

  it('accepts a host of its own: another ssh port on the same address is another sshd, and a URL on another port another service', () => {
    expect(
      refusal({
        name: 'rehearse-1',
        url: 'http://rec-1.example.internal:8081',
        ssh: { host: 'rec-1.example.internal', port: 2222, user: 'svcops' },
      }),
    ).toBe('accepted')
    expect(
      refusal({
        name: 'rehearse-1',
        url: 'http://rehearse.example',
        ssh: { host: 'rehearse.example', user: 'svcops', hostKey: 'SHA256:' + 'B'.repeat(43) },
      }),
    ).toBe('accepted')
  })
})
