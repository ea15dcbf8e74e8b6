/**
 * Playbook: rotate the live production system's pre-shared key on its hosts (seed, Authentication
 * 6: every component that connects to the system controller uses the controller's PSK from
 * `SVC_SYSTEM_CONTROLLER_PSK`; from 6.0.0 a key with too low entropy stops the controller). Before
 * anything changes: the release every component runs, the files read, every file kept in the run
 * folder (0600: the old key lives only there). Then every component stops (control panels first,
 * the controller last), the new key is written (the controller's settings file first, then every
 * environment), and each component starts and is checked in dependency order: the controller,
 * ingest, the pipeline, the control panel. The whole system is verified with one strong key
 * everywhere, and the gap (how long components were disconnected) is measured and reported. Any
 * failure after the first stop puts the old key back everywhere and restarts on it (the rollback).
 * On Kubernetes stop and start are nothing, the write is a new `svcops:deploy.pskRotation` and
 * `apply-psk` is `pulumi up` of the live components, the controller first; the rollback puts the
 * previous pskRotation back and runs `pulumi up` again (src/live/kubernetes/psk-rotation.ts).
 *
 *   svcops psk rotate --env lab [--dry-run] [--json] [--yes]
 *
 * Every run is journaled: `svcops resume ID` continues a killed rotation with the key it already
 * gave the controller, `svcops resume ID --rollback` puts the old one back.
 */
import type { Run } from '../src/runs/engine.ts'
import type { Playbook } from '../src/runs/playbook.ts'
import type { LiveContext } from '../src/live/live-context.ts'
import type { LiveParams } from '../src/live/live-params.ts'
import { stopOrder } from '../src/live/layout.ts'
import { unitsByType } from '../src/live/live-placement.ts'
import { backupFiles, checkStarted, restoreConfig, startComponent, stopComponent, verifySystem } from '../src/live/live-steps.ts'
import {
  applyPsk,
  checkPskFiles,
  pskRotateSystem,
  releaseOf,
  rotationRelease,
  verifyRotation,
  writeNewPsk,
} from '../src/live/psk-rotate.ts'

/** The procedure, top to bottom. */
async function rotatePsk(run: Run<LiveContext>): Promise<void> {
  const { ctx } = run
  await run.step(rotationRelease) // one release on every component, one that reads a PSK
  await run.step(checkPskFiles) // the settings file with its PSK, every environment file
  await run.step(backupFiles) // every file the rotation touches, old key included, into the run folder (0600)
  for (const u of stopOrder(ctx.units)) await run.onHost(u, stopComponent) // control panels first, controller last
  await run.step(writeNewPsk) // the controller's settings file first, then every environment (Kubernetes: a new pskRotation)
  await run.step(applyPsk) // Kubernetes: pulumi up of the live components, the controller first; hosts: nothing
  for (const instances of unitsByType(ctx.units))
    // the controller first, then each type's instances
    await run.everyHost(instances, async (u) => {
      await run.onHost(u, startComponent)
      await run.onHost(u, checkStarted, releaseOf(ctx)) // running, no error lines, connected with the new key
    })
  await run.step(verifySystem, releaseOf(ctx), []) // the controller lists every component connected
  await run.step(verifyRotation) // one strong key everywhere; the gap measured
}

/** The way back: every component on the old key, restarted and checked. */
async function putBackOldKey(run: Run<LiveContext>): Promise<string> {
  const { ctx } = run
  for (const u of stopOrder(ctx.units)) await run.onHost(u, stopComponent)
  await run.step(restoreConfig) // settings file and environments (the old key) from the run's backup (Kubernetes: the old pskRotation)
  await run.step(applyPsk) // Kubernetes: pulumi up again; hosts: nothing
  for (const instances of unitsByType(ctx.units))
    await run.everyHost(instances, async (u) => {
      await run.onHost(u, startComponent)
      await run.onHost(u, checkStarted, releaseOf(ctx))
    })
  await run.step(verifySystem, releaseOf(ctx), [])
  return "the old PSK put back from the run's backup; every component restarted on it"
}

/** The playbook: this procedure, and the old key put back as its failure policy. */
export const pskRotatePlaybook: Playbook<LiveContext, LiveParams> = {
  kind: 'psk-rotate',
  what: () => 'The rotation of the live production system’s PSK',
  rollbackCommand: (record) => `svcops resume ${record.id} --rollback`,
  procedure: rotatePsk,
  rollback: putBackOldKey,
}

/** The live system as the engine runs a rotation. */
export const pskRotate = pskRotateSystem(pskRotatePlaybook)
