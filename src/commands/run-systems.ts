/**
 * The wiring of the observers of runs and the systems' descriptions, shared with the playbooks run
 * as scripts: it lives with them (playbooks/lib/run-systems.ts) so that both edges wire the same, once.
 */
export { runSystems, useRunSystems } from '../../playbooks/lib/run-systems.ts'
