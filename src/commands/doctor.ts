/**
 * `svcops doctor recording`: the seed's common upgrade problems, diagnosed by cause on every host, or
 * the Deployment's pods on Kubernetes.
 * Declared from the playbook's option table (playbooks/lib/recording-commands.ts); it calls the
 * function playbooks/doctor.ts run as a script calls too.
 */
import type { Command } from 'commander'
import { declareCommand } from '../core/option-table.ts'
import { DOCTOR_RECORDING, type DoctorRecordingFlags } from '../../playbooks/lib/recording-commands.ts'
import { ioOf } from './run-output.ts'

/** Registers `doctor` and its `recording` subcommand. */
export function register(program: Command): void {
  const doctor = program.command('doctor').description('Diagnose the common upgrade problems by cause, with evidence and the fix.')
  declareCommand(doctor, DOCTOR_RECORDING).action(async (flags: DoctorRecordingFlags, command: Command) => {
    const play = await import('../../playbooks/doctor.ts')
    await play.doctorRecordingCommand(flags, ioOf(command))
  })
}
