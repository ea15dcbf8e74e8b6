/**
 * supervisorctl against a lab host's own supervisord: what the tests use to look at and steer the
 * service independently of the upgrade's driver (which speaks XML-RPC through curl, src/drivers/services.ts).
 */
import { join } from 'node:path'
import type { RecordingHostConfig } from '../../src/config/schema.ts'

/** The supervisorctl command line for a host (the sandbox's own supervisord on a lab host). */
export function supervisorctlArgv(host: Pick<RecordingHostConfig, 'root'>, args: string[]): string[] {
  return host.root ? ['supervisorctl', '-c', join(host.root, 'etc/supervisor/supervisord.conf'), ...args] : ['supervisorctl', ...args]
}
