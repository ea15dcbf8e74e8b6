/**
 * The CPU svcops' SSH transport spends with ssh2's native crypto binding (what `npm install` builds,
 * scripts/ssh2-binding.js) and without it (ssh2's fallback on Node's crypto API, a cipher or HMAC
 * object per packet), side by side against the same throwaway sshd on loopback. Each round starts
 * one process per variant, alternating their order; the variant without the binding is the same
 * code with the binding's file hidden from ssh2 (bench/ssh/without-binding.ts). A process connects,
 * runs `true` N times, then reads M MiB from the host (`head -c`), and reports its own CPU time
 * (user + system) for each part. Prints a Markdown table.
 *
 *   node bench/ssh/binding.ts [--commands 200] [--mib 64] [--rounds 3]
 */
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { cpus, loadavg } from 'node:os'
import { parseArgs } from 'node:util'
import { runCommand } from '../../src/core/runner.ts'
import { SshTransport, type SshTarget } from '../../src/drivers/ssh.ts'
import { startSshd } from '../../src/lab/sshd.ts'
import { requireTools, TOOLS } from '../require-tools.ts'
import { median } from '../measure.ts'

const { values } = parseArgs({
  options: {
    child: { type: 'string' },
    commands: { type: 'string', default: '200' },
    mib: { type: 'string', default: '64' },
    rounds: { type: 'string', default: '3' },
  },
})
const commands = Number(values.commands)
const mib = Number(values.mib)

interface Measured {
  binding: boolean
  commandMs: number
  mibMs: number
}

const cpuMs = (since: NodeJS.CpuUsage): number => {
  const used = process.cpuUsage(since)
  return (used.user + used.system) / 1000
}

if (values.child) {
  // One measurement, in a process of its own: ssh2 chose its ciphers' implementation as it loaded.
  const { bindingAvailable } = createRequire(import.meta.url)('ssh2/lib/protocol/crypto.js') as { bindingAvailable: boolean }
  const transport = new SshTransport(JSON.parse(values.child) as SshTarget, { name: 'bench' })
  try {
    await runCommand(transport, ['true']) // the connection's set-up is not measured
    let since = process.cpuUsage()
    for (let i = 0; i < commands; i++) await runCommand(transport, ['true'])
    const commandMs = cpuMs(since) / commands
    since = process.cpuUsage()
    const read = await runCommand(transport, ['head', '-c', String(mib * 1024 * 1024), '/dev/zero'])
    const mibMs = cpuMs(since) / mib
    if (read.stdout.length !== mib * 1024 * 1024) throw new Error(`read ${read.stdout.length} bytes, expected ${mib} MiB`)
    process.stdout.write(JSON.stringify({ binding: bindingAvailable, commandMs, mibMs } satisfies Measured))
  } finally {
    await transport.close()
  }
} else {
  requireTools('bench/ssh/binding.ts', TOOLS.sshServer)
  const sshd = await startSshd()
  const target: SshTarget = { host: sshd.host, port: sshd.port, user: sshd.user, keyFile: sshd.privateKeyPath, hostKey: sshd.hostKey }
  const here = new URL(import.meta.url)
  const variants = [
    { name: "ssh2's native binding", nodeArgs: [] as string[], runs: [] as Measured[] },
    {
      name: "Node's crypto API (ssh2's fallback)",
      nodeArgs: ['--import', new URL('./without-binding.ts', here).pathname],
      runs: [] as Measured[],
    },
  ]
  try {
    for (let round = 0; round < Number(values.rounds); round++) {
      for (const variant of round % 2 ? [...variants].reverse() : variants) {
        const child = spawnSync(
          process.execPath,
          [...variant.nodeArgs, here.pathname, '--child', JSON.stringify(target), '--commands', String(commands), '--mib', String(mib)],
          { encoding: 'utf8', maxBuffer: 1024 * 1024 },
        )
        if (child.status !== 0) throw new Error(`bench/ssh/binding.ts: the measuring process failed: ${child.stderr.trim()}`)
        variant.runs.push(JSON.parse(child.stdout) as Measured)
      }
    }
  } finally {
    await sshd.stop()
  }
  if (variants[1]?.runs.some((r) => r.binding)) throw new Error('bench/ssh/binding.ts: ssh2 loaded its binding through without-binding.ts')
  if (variants[0]?.runs.some((r) => !r.binding)) {
    process.stderr.write(
      "bench/ssh/binding.ts needs ssh2's native binding, which is not built: sudo apt-get install -y g++ make python3, then npm install\n",
    )
    process.exit(2)
  }
  const base = variants[0]?.runs ?? []
  process.stdout.write(
    [
      `${cpus().length} CPUs, load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}; CPU time of the svcops process (user + system), median of ${values.rounds} processes each, Node ${process.version}.`,
      '',
      `| ssh2's ciphers | per command (\`true\`, ${commands} in a row) | per MiB read (${mib} MiB) | vs the binding |`,
      '|---|---:|---:|---:|',
      ...variants.map((v) => {
        const command = median(v.runs.map((r) => r.commandMs))
        const perMib = median(v.runs.map((r) => r.mibMs))
        const ratio = `${(command / median(base.map((r) => r.commandMs))).toFixed(2)}x, ${(perMib / median(base.map((r) => r.mibMs))).toFixed(2)}x`
        return `| ${v.name} | ${command.toFixed(2)} ms | ${perMib.toFixed(1)} ms | ${ratio} |`
      }),
      '',
    ].join('\n'),
  )
}
