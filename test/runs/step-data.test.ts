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
import { defineStep } from '../../src/runs/step.ts'

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

/** A journal (in memory) whose run finished `choose` with `data`. */
function journalWith(data: Record<string, unknown>): Journal {
  const journal = Journal.inMemory(
    newRunRecord({ kind: 'upgrade', system: 'recording', environment: 'lab', envFile: 'lab.yaml', params: {} }),
  )
  journal.append({ step: 'choose', status: 'ok', data })
  return journal
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
