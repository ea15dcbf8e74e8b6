/**
 * Per-command latency over one reused SSH connection, with Nagle's algorithm off on the socket
 * (TCP_NODELAY, what SshTransport sets) and on (the socket's default), side by side on the same
 * throwaway sshd on loopback. Rounds alternate between the two connections, so a machine that
 * slows down slows both. Prints a Markdown table. The test suite checks the socket option itself
 * (test/lab/ssh.test.ts); the time it saves is measured here, never in `npm test`.
 *
 *   node bench/ssh/run.ts [--commands 30] [--rounds 5]
 */
import { cpus, loadavg } from 'node:os'
import { parseArgs } from 'node:util'
import { runCommand } from '../../src/core/runner.ts'
import { SshTransport } from '../../src/drivers/ssh.ts'
import { startSshd } from '../../src/lab/sshd.ts'
import { requireTools, TOOLS } from '../require-tools.ts'
import { median } from '../measure.ts'

requireTools('bench/ssh/run.ts', TOOLS.sshServer)

const { values } = parseArgs({ options: { commands: { type: 'string', default: '30' }, rounds: { type: 'string', default: '5' } } })
const commands = Number(values.commands)
const rounds = Number(values.rounds)

const sshd = await startSshd()
const target = { host: sshd.host, port: sshd.port, user: sshd.user, keyFile: sshd.privateKeyPath, hostKey: sshd.hostKey }
const variants = [
  { name: 'TCP_NODELAY on (SshTransport)', noDelay: true, transport: new SshTransport(target, { name: 'nodelay' }), ms: [] as number[] },
  {
    name: "TCP_NODELAY off (Nagle's algorithm)",
    noDelay: false,
    transport: new SshTransport(target, { name: 'nagle' }),
    ms: [] as number[],
  },
]
try {
  for (const variant of variants) {
    const ssh = await variant.transport.connect()
    // SshTransport turned Nagle's algorithm off when it connected; the second row turns it back on.
    ;(ssh.connection as unknown as { setNoDelay(on: boolean): unknown } | null)?.setNoDelay(variant.noDelay)
    await runCommand(variant.transport, ['true']) // the first session's set-up is not measured
  }
  for (let round = 0; round < rounds; round++) {
    for (const variant of round % 2 ? [...variants].reverse() : variants) {
      const started = performance.now()
      for (let i = 0; i < commands; i++) await runCommand(variant.transport, ['true'])
      variant.ms.push((performance.now() - started) / commands)
    }
  }
} finally {
  for (const variant of variants) await variant.transport.close()
  await sshd.stop()
}

const fastest = median(variants[0]?.ms ?? [])
process.stdout.write(
  [
    `${cpus().length} CPUs, load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}; \`true\` run ${commands} times in a row over one connection, median of ${rounds} rounds, Node ${process.version}.`,
    '',
    '| socket | per command (median) | slowest round | vs TCP_NODELAY on |',
    '|---|---:|---:|---:|',
    ...variants.map(
      (v) => `| ${v.name} | ${median(v.ms).toFixed(1)} ms | ${Math.max(...v.ms).toFixed(1)} ms | ${(median(v.ms) / fastest).toFixed(1)}x |`,
    ),
    '',
  ].join('\n'),
)
