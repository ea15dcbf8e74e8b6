/**
 * The lab's environment file, stacks/Pulumi.lab.yaml (or under $SVCOPS_STACKS_DIR): what `--env lab`
 * reads, written last by `lab up` from each part's section and removed by `lab down`. A file of that
 * name that `lab up` did not write is someone's configuration and is never overwritten.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { stringify as toYaml } from 'yaml'
import { parseEnvironment } from '../config/load.ts'
import { OperationError } from '../core/errors.ts'
import type { LabManager } from './manager/lab-users.ts'
import type { LabSteps } from './state.ts'

const ENV_FILE_HEADER = '# Written by `svcops lab up`; removed by `svcops lab down`. Use it as --env lab.'

/** The `svcops:manager` section for the lab's manager, logging in as `user`. */
export function managerSection(manager: LabManager, user: keyof LabManager['users'] = 'operator'): Record<string, unknown> {
  return {
    url: manager.url,
    apiRevision: manager.apiRevision,
    email: manager.users[user].email,
    password: { file: manager.users[user].passwordFile },
  }
}

/**
 * Writes the lab environment file from `sections` (keys of the `svcops:` namespace without the
 * prefix: manager, recording, backup, ...), validated by the same schema `--env lab` uses.
 */
export function writeLabEnvironment(lab: LabSteps, sections: Record<string, unknown>): string {
  const file = lab.paths.envFile
  const config = Object.fromEntries(Object.entries(sections).map(([key, value]) => [`svcops:${key}`, value]))
  parseEnvironment(config, 'lab', file)
  refuseForeignEnvironmentFile(file)
  mkdirSync(dirname(file), { recursive: true })
  lab.record({ kind: 'files', name: 'environment file', info: {}, paths: [file], stop: 'nothing runs' })
  writeFileSync(file, `${ENV_FILE_HEADER}\n${toYaml({ config })}`)
  return file
}

/** A stacks/Pulumi.lab.yaml that lab up did not write is someone's configuration: never overwritten. */
export function refuseForeignEnvironmentFile(file: string): void {
  if (existsSync(file) && !readFileSync(file, 'utf8').startsWith(ENV_FILE_HEADER)) {
    throw new OperationError(
      `The environment file ${file} exists and was not written by svcops lab up; it is left alone.`,
      `Move it away, or set SVCOPS_STACKS_DIR to another directory.`,
    )
  }
}
