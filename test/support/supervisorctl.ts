/**
 * supervisorctl against a lab host's own supervisord: what the tests use to look at and steer the
 * service independently of the upgrade's driver (which speaks XML-RPC through curl, src/drivers/services.ts).
 * A read the tests repeat (a state, a pid: in loops that wait) goes to the same socket as one
 * XML-RPC call through curl (`processInfo`): supervisorctl is a Python start-up each time, ~0.2 s of
 * CPU against curl's ~10 ms.
 */
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import type { RecordingHostConfig } from '../../src/config/schema.ts'
import { supervisorCall } from '../../src/drivers/services.ts'
import { parseAnswer } from '../../src/drivers/supervisor-rpc.ts'
import { supervisorSocketPath } from '../../src/drivers/transports.ts'

/** The supervisorctl command line for a host (the sandbox's own supervisord on a lab host). */
export function supervisorctlArgv(host: Pick<RecordingHostConfig, 'root'>, args: string[]): string[] {
  return host.root ? ['supervisorctl', '-c', join(host.root, 'etc/supervisor/supervisord.conf'), ...args] : ['supervisorctl', ...args]
}

/** What supervisord's getProcessInfo gives of a program: its state (RUNNING, EXITED, FATAL, STOPPED...) and pid (0 when none). */
export interface ProcessInfo {
  state: string
  pid: number
}

/**
 * getProcessInfo(`program`) from a lab host's supervisord, over its socket with curl (what
 * `supervisorctl status|pid` asks). A program supervisord does not know, or a supervisord that does
 * not answer, reads as state '?' and pid 0, as a failed supervisorctl's empty output did.
 */
export function processInfo(host: Pick<RecordingHostConfig, 'root'>, program: string): ProcessInfo {
  // The service driver's own call (src/drivers/services.ts), run here and now.
  const call = supervisorCall({ name: 'lab host', root: host.root }, 'supervisor.getProcessInfo', [program], false)
  const [curl = 'curl', ...args] = call.argv
  let xml: string
  try {
    xml = execFileSync(curl, args, { encoding: 'utf8', input: call.input?.data, stdio: ['pipe', 'pipe', 'ignore'] })
  } catch {
    return { state: '?', pid: 0 }
  }
  const answer = parseAnswer(xml, supervisorSocketPath(host))
  if (answer.fault || typeof answer.value !== 'object') return { state: '?', pid: 0 }
  return { state: String(answer.value.statename ?? '?'), pid: Number(answer.value.pid ?? 0) }
}
