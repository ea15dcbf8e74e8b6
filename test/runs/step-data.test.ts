/**
 * A step's journaled data, reused by a resume, is followed only when it matches the step's declared
 * shape (src/runs/step.ts `data`): the engine checks the finished entry of a `once` step before it
 * hands its data on instead of acting again, in the run and in the dry run, and refuses one that
 * does not match with one sentence naming the run, the step and the field.
 */
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { BadInputError } from '../../src/core/errors.ts'
import { Run } from '../../src/runs/engine.ts'
import { Journal } from '../../src/runs/journal.ts'
import { newRunRecord } from '../../src/runs/run-record.ts'
import { defineStep, finishedData, Phase, type Step } from '../../src/runs/step.ts'
import { checkGates, restoreConfig, writeConfig } from '../../src/live/live-steps.ts'
import { backupAndVerify } from '../../src/recording/backup-step.ts'
import { snapshotContent } from '../../src/recording/content-steps.ts'

const chosen = z.object({ backup: z.string().regex(/^[a-z]+-\d{4}$/, 'expected a backup id like lab-0001') })

/** A step journaled once whose data later steps follow; it counts how often it acted. */
function choosing(): { step: ReturnType<typeof defineStep<object, [], z.infer<typeof chosen>>>; acted: () => number } {
  let acted = 0
  const step = defineStep<object, [], z.infer<typeof chosen>>({
    id: 'choose',
    title: 'choose a backup',
    once: true,
    data: chosen,
    describe: () => ['choose the newest backup'],
    act: () => {
      acted++
      return Promise.resolve({ data: { backup: 'lab-0002' } })
    },
  })
  return { step, acted: () => acted }
}

/** A journal (in memory) whose run finished `step` (default `choose`) with `data`. */
function journalWith(data: Record<string, unknown>, step = 'choose'): Journal {
  const journal = Journal.inMemory(
    newRunRecord({ kind: 'upgrade', system: 'recording', environment: 'lab', envFile: 'lab.yaml', params: {} }),
  )
  journal.append({ step, status: 'ok', data })
  return journal
}

/** What resuming `step` over a journal that finished it with `data` ends with: its result, or the error it was refused with. */
async function resumed<C>(
  step: Step<C>,
  data: Record<string, unknown>,
  mode: 'act' | 'plan' = 'act',
): Promise<{ journal: Journal; outcome: unknown }> {
  const journal = journalWith(data, step.id)
  // No context: a reused or refused entry is decided before the step could touch one.
  const outcome = await new Run({} as C, journal, { mode, resumed: true }).step(step).then(
    (r) => r,
    (e: unknown) => e,
  )
  return { journal, outcome }
}

/** The sentence an entry of `step` is refused with, naming `field` and why. */
function refusal(journal: Journal, step: string, field: string, why: string): string {
  return `Run ${journal.run.id}: the journal's entry of step ${step} is refused: ${field}: ${why}; svcops did not write it so, and does not follow it.`
}

describe("a once step's journaled data on resume", () => {
  it('is reused when it has the shape the step writes: the step does not act again', async () => {
    const { step, acted } = choosing()
    const result = await new Run({}, journalWith({ backup: 'lab-0001' }), { mode: 'act', resumed: true }).step(step)
    expect(result.data).toEqual({ backup: 'lab-0001' })
    expect(acted()).toBe(0)
  })

  for (const mode of ['act', 'plan'] as const)
    it(`is refused, naming run, step and field, when it does not (${mode === 'act' ? 'the run' : 'the dry run'})`, async () => {
      const { step, acted } = choosing()
      const journal = journalWith({ backup: '../../etc/passwd' })
      const error = await new Run({}, journal, { mode, resumed: true }).step(step).then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(error).toBeInstanceOf(BadInputError)
      expect((error as Error).message).toBe(
        `Run ${journal.run.id}: the journal's entry of step choose is refused: data.backup: expected a backup id like lab-0001; svcops did not write it so, and does not follow it.`,
      )
      expect(acted()).toBe(0)
    })
})

describe("the playbooks' once steps and the data a resume or a rollback reads", () => {
  const fingerprint = 'a'.repeat(64)

  it("recording backup: a reused entry naming the store's backup is handed on without a new backup", async () => {
    const { outcome } = await resumed(backupAndVerify, { backupId: 'lab-20260101T020000Z-1a2b', fingerprint })
    expect(outcome).toMatchObject({ data: { backupId: 'lab-20260101T020000Z-1a2b', fingerprint }, skipped: 'done before the interruption' })
  })

  for (const mode of ['act', 'plan'] as const)
    it(`recording backup: an entry whose backupId is no id of the store is refused (${mode === 'act' ? 'the run' : 'the dry run'})`, async () => {
      const { journal, outcome } = await resumed(backupAndVerify, { backupId: '../../etc/passwd', fingerprint }, mode)
      expect(outcome).toBeInstanceOf(BadInputError)
      expect((outcome as Error).message).toBe(
        refusal(journal, 'backup', 'data.backupId', 'expected an id of the backup store, like lab-20260101T020000Z-1a2b'),
      )
    })

  it('recording snapshot: an entry whose count is no count is refused', async () => {
    const { journal, outcome } = await resumed(snapshotContent, { count: 'every', takenAt: '2026-01-01T02:00:00.000Z' })
    expect(outcome).toBeInstanceOf(BadInputError)
    expect((outcome as Error).message).toMatch(
      new RegExp(`^Run ${journal.run.id}: the journal's entry of step snapshot is refused: data\\.count: `),
    )
  })

  it('live gates: an entry whose gate is in a state svcops never writes is refused', async () => {
    const { journal, outcome } = await resumed(checkGates, { gates: [{ id: 'psk-2.0', state: 'open', detail: '' }] })
    expect(outcome).toBeInstanceOf(BadInputError)
    expect((outcome as Error).message).toMatch(
      new RegExp(`^Run ${journal.run.id}: the journal's entry of step gates is refused: data\\.gates\\.0\\.state: `),
    )
  })

  it('live configuration: a pskRotation that is not the change write-config journals is refused, one that is is read', () => {
    const forged = journalWith({ pskRotation: true }, 'write-config')
    expect(() => finishedData(forged, writeConfig)).toThrow(
      new RegExp(`^Run ${forged.run.id}: the journal's entry of step write-config is refused: data\\.pskRotation: `),
    )
    const restored = journalWith({ pskRotation: { from: 'svcops-20260101T020000Z-1a2b', to: 'initial' } }, 'rollback:restore-config')
    expect(finishedData(restored, restoreConfig, { phase: Phase.rollback })?.pskRotation).toEqual({
      from: 'svcops-20260101T020000Z-1a2b',
      to: 'initial',
    })
  })
})
