/**
 * The last step of an upgrade: every target of the run on the target version (but those whose
 * failure `--max-fail` tolerated), the platform's record of the version holding it (the stack file
 * on Kubernetes), and the schema fingerprint after the upgrade recorded in the run.
 */
import type { HostFailure } from '../runs/engine.ts'
import { defineStep } from '../runs/step.ts'
import type { RecordingContext } from './recording-context.ts'
import { judgeFleet, recordData } from './recording-judge.ts'

type Ctx = RecordingContext

export const verifyFleet = defineStep<Ctx, [HostFailure[]]>({
  id: 'verify',
  title: 'record the schema fingerprint; check every host runs the target version',
  describe: (ctx) => [
    'record the schema fingerprint after the upgrade; read the installed version on every host',
    ...ctx.platform.describeVersionRecord(),
  ],
  async act(ctx, tolerated) {
    const run = ctx.journal.run
    const fingerprintAfter = await ctx.deps.database.fingerprint()
    const versions = await ctx.platform.versions()
    const record = ctx.platform.versionRecord()
    const names = ctx.targets.map((t) => t.name)
    judgeFleet(
      names,
      versions,
      run.targetVersion,
      record,
      tolerated.map((f) => f.host),
    )
    ctx.journal.updateParams({ fingerprintAfter })
    return {
      data: {
        fingerprintAfter,
        versions,
        schemaChanged: fingerprintAfter !== run.params.fingerprintBefore,
        ...(record ? { stackFile: recordData(record, versions[names[0] ?? '']) } : {}),
      },
    }
  },
})
