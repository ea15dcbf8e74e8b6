/**
 * A soak killed midway resumes counting the samples it had journaled, not from the start: the
 * first attempt journals three samples of a six-sample soak and stops there (as a kill would leave
 * its journal); the soak step, run again on the journal read back from disk, takes the three
 * samples left and judges all six. The instances are HTTP expositions served by this test and read
 * by the soak's own sampler.
 */
import { mkdtempSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { metricSampler, type AnalysisInstance } from '../../src/analysis/analysis-samplers.ts'
import { soakStep, type SoakData } from '../../src/analysis/canary-soak.ts'
import { appendProgress } from '../../src/analysis/soak-progress.ts'
import { runSoak } from '../../src/analysis/soak.ts'
import { analysisMetricSchema, analysisSchema } from '../../src/config/analysis.ts'
import { Journal } from '../../src/runs/journal.ts'
import { newRunRecord } from '../../src/runs/run-record.ts'

let server: Server
let url = ''
let reads = 0

beforeAll(async () => {
  server = createServer((_req, res) => {
    reads++
    res.writeHead(200, { 'content-type': 'text/plain' }).end('# TYPE queue gauge\nqueue 7\n')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}/metrics`
})

afterAll(async () => {
  await new Promise((r) => server.close(r))
})

const settings = analysisSchema.parse({ interval: '1s', minSamples: 3 })
const metric = analysisMetricSchema.parse({ name: 'queue', metric: 'queue' })
/** Both sides read from the test's exposition (its URL is known once the server listens). */
const instances = (): AnalysisInstance[] => [
  { name: 'canary-host', side: 'canary', metricsUrl: url },
  { name: 'baseline-host', side: 'baseline', metricsUrl: url },
]

describe('a soak killed midway', () => {
  it('resumes counting the samples it journaled: six samples judged, three taken after the resume', async () => {
    const base = mkdtempSync(join(tmpdir(), 'svcops-soak-resume-'))
    const record = newRunRecord({ kind: 'upgrade', system: 'recording', environment: 'lab', envFile: '/x', params: {} })
    const first = Journal.create(record, base)
    const sampled = () => [metricSampler([metric], instances(), undefined)]
    // The first attempt: three samples journaled, then the process is gone.
    await expect(
      runSoak({
        soakMs: 6000,
        settings,
        rules: [metric],
        samplers: sampled(),
        onSample: (p) => {
          appendProgress(first, 'soak', p, `sample ${p.sample} of ${p.of}`)
          if (p.sample === 3) throw new Error('killed')
        },
      }),
    ).rejects.toThrow('killed')
    expect(reads).toBe(3)

    const journal = Journal.open(record.id, base)
    const step = soakStep<{ journal: Journal }, { name: string }>({
      journalOf: (ctx) => ctx.journal,
      settingsOf: () => settings,
      soakMsOf: () => 6000,
      subjectOf: () => ({ canary: ['canary-host'], baseline: ['baseline-host'], rules: [metric], samplers: sampled() }),
    })
    const done = await step.act({ journal }, [{ name: 'canary-host' }], [{ name: 'baseline-host' }])
    const data = done.data as SoakData & { result: { samples: number; verdict: { metrics: Array<{ canary: { samples: number } }> } } }
    expect(data.outcome).toBe('pass')
    expect(data.result.samples).toBe(6)
    expect(data.result.verdict.metrics[0]?.canary.samples).toBe(6)
    expect(reads).toBe(6)
    const progress = journal.entries().filter((e) => e.step === 'soak' && e.status === 'start' && e.detail?.startsWith('sample '))
    expect(progress.map((e) => e.detail?.split(':')[0])).toEqual([1, 2, 3, 4, 5, 6].map((n) => `sample ${n} of 6`))
  })
})
