/** `svcops doctor recording`: the seed's common upgrade problems, diagnosed by cause on every host, or the Deployment's pods. */
import type { Command } from 'commander'
import { ExitCode } from '../core/errors.ts'
import { environmentOf, printResult, setResultExitCode } from './context.ts'

export function register(program: Command): void {
  const doctor = program.command('doctor').description('Diagnose the common upgrade problems by cause, with evidence and the fix.')
  doctor
    .command('recording')
    .description(
      "Check every cause of the seed's common upgrade problems on every host, as the service sees it (its config file, its user, its database credentials).",
    )
    .option('--host <name...>', 'only these hosts')
    .addHelpText(
      'after',
      `
Causes (docs/doctor.md): config-syntax, config-options, file-permissions, database-access,
schema-change-permission, migration-history, storage-paths, storage-location-names, media-api,
content-info-cache, write-rate-limit, list-query, disk-io. On Kubernetes (recording.platform
kubernetes) the Deployment's pods through the API: config-syntax (its Secret), database-access,
image-pull, crash-loop, oom-killed, pod-logs, schema-change-permission, storage-claim. Read-only.
Exit codes: 0 nothing found, 5 findings that need a person, 2 bad input.

Examples:
  svcops doctor recording --env prod
  svcops doctor recording --env prod --host rec-2 --json | jq '.findings[] | .cause'`,
    )
    .action(async (options: { host?: string[] }, command: Command) => {
      const env = await environmentOf(command)
      const { doctorRecording } = await import('../../playbooks/doctor.ts')
      const { formatDiagnosis } = await import('../doctor/diagnose.ts')
      const diagnosis = await doctorRecording(env, options.host)
      printResult(command, { ok: diagnosis.findings.length === 0, ...diagnosis }, () => formatDiagnosis(diagnosis))
      if (diagnosis.findings.length) setResultExitCode(ExitCode.findings)
    })
}
