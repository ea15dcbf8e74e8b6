/**
 * The wiring of the systems and the observers of runs, shared with the playbooks run as scripts:
 * it lives with them (playbooks/lib/run-systems.ts) so that both edges wire the same, once.
 */
export { useRunSystems } from '../../playbooks/lib/run-systems.ts'
