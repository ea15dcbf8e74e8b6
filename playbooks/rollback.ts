#!/usr/bin/env node
/**
 * Playbook: roll back the recording service (seed, Versioning > Recording service, "Rollback"):
 * stop the service; downgrade the package to the previous version; restore the database backup only
 * if the schema changed; start the service. Made lossless: recordings written after the backup are
 * exported before the restore and re-created after it, and every host is verified. The steps are in
 * playbooks/rollback-procedure.ts (the upgrade's failure policy runs them too).
 *
 *   npx zx playbooks/rollback.ts --env lab [--run ID | --to VERSION] [--dry-run] [--yes]
 *
 * Run by node or zx, this file is `svcops rollback recording` (its options:
 * playbooks/lib/recording-commands.ts; what it does: playbooks/lib/recording-actions.ts): the newest
 * (or given) upgrade run rolled back from its journal, or every host moved to VERSION through the
 * upgrade path.
 */
import { rollbackRecordingCommand } from './lib/recording-actions.ts'
import { ROLLBACK_RECORDING } from './lib/recording-commands.ts'
import { runScript, startedAsScript } from '../src/edge/script.ts'
import { recording } from './upgrade.ts'

if (startedAsScript(import.meta)) await runScript(import.meta, ROLLBACK_RECORDING, rollbackRecordingCommand(recording))
