/**
 * A rehearsal's section of its report: the prediction (downtime per host and for the rollout beside
 * the window, rollback, database size) or why it failed with the service's log lines, read from the
 * journal by the `rehearsal` report value of the predict step. Beside the run's own timeline (the
 * report's), it shows what the real rollout would take.
 */
import { escapeHtml as esc, defineSection, fencedBlock } from '../../reports/report-section.ts'
import { describePrediction, predictionSchema, type Prediction } from './prediction.ts'

/** The report value the predict step journals. */
export const REHEARSAL_REPORT = 'rehearsal'

/**
 * The prediction as markdown: its own lines as list items; a failed rehearsal's cause and the
 * service's log lines (text svcops does not write) in a fenced block, so a log line holding a link,
 * an image or inline HTML shows as the text it is.
 */
function markdownLines(p: Prediction): string[] {
  const [head = '', ...rest] = describePrediction(p)
  if (p.verdict !== 'failed') return [head, ...rest].map((l) => `- ${l.trim()}`)
  return [`- ${head.trim()}`, '', ...fencedBlock('', rest.map((l) => l.trim()).join('\n'))]
}

export const rehearsalSection = defineSection<Prediction>({
  key: 'rehearsal',
  build(entries) {
    const entry = entries.filter((e) => e.report === REHEARSAL_REPORT && e.status === 'ok').at(-1)
    // Read back from a store, the data may have any shape: only a prediction is shown.
    const parsed = predictionSchema.safeParse(entry?.data)
    return parsed.success ? parsed.data : undefined
  },
  headline: (p) => `rehearsal verdict: ${p.verdict}${p.cause ? ` — ${p.cause}` : ''}`,
  markdown: (p) => ['', '## Rehearsal: the predicted upgrade', '', ...markdownLines(p)],
  html: (p) => ({
    title: 'Rehearsal: the predicted upgrade',
    body: `<ul id="rehearsal">${describePrediction(p)
      .map((l) => `<li>${esc(l.trim())}</li>`)
      .join('')}</ul>`,
  }),
})
