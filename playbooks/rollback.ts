#!/usr/bin/env node
/**
 * Playbook: roll back the recording service. The procedure is playbooks/rollback-procedure.ts (the
 * seed's four steps, made lossless, and the downgrade across a schema change); this file runs it
 * with the recording service's system, as `svcops rollback recording` does.
 *
 *   npx zx playbooks/rollback.ts --env lab [--run ID | --to VERSION] [--dry-run] [--yes]
 *
 * Its options: playbooks/lib/recording-commands.ts; what it does: playbooks/lib/recording-actions.ts.
 */
import { runScript, startedAsScript } from '../src/edge/script.ts'
import { ROLLBACK_RECORDING } from './lib/recording-commands.ts'
import { rollbackRecordingCommand } from './lib/recording-actions.ts'
import { recording } from './upgrade.ts'

if (startedAsScript(import.meta)) await runScript(import.meta, ROLLBACK_RECORDING, rollbackRecordingCommand(recording))
