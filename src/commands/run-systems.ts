/**
 * The wiring of the observers of runs and the systems' descriptions, shared with the playbooks run
 * as scripts: it lives with them (src/edge/run-systems.ts) so that both edges wire the same, once.
 */
export { runSystems, useRunSystems } from '../edge/run-systems.ts'
