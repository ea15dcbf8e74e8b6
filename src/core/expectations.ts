/**
 * How a declared check's expectation meets an answer, the same for every system's checks
 * (src/live/live-checks.ts, src/recording/recording-checks.ts): a JSON value contained in an answer,
 * a metric's line in a Prometheus text exposition.
 */

/** Whether `answer` contains `wanted`: equal scalars; an object with the wanted members; an array with one element that contains it. */
export function containsValue(answer: unknown, wanted: unknown): boolean {
  if (Array.isArray(answer) && !Array.isArray(wanted)) return answer.some((a) => containsValue(a, wanted))
  if (Array.isArray(wanted)) return Array.isArray(answer) && wanted.every((w) => answer.some((a) => containsValue(a, w)))
  if (wanted && typeof wanted === 'object') {
    if (!answer || typeof answer !== 'object') return false
    return Object.entries(wanted).every(([k, v]) => containsValue((answer as Record<string, unknown>)[k], v))
  }
  return answer === wanted
}

/** The line of metric `name` (with or without labels) in an exposition's trimmed lines, if any. */
export function metricLine(lines: string[], name: string): string | undefined {
  return lines.find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`) || l === name)
}

/** The trimmed lines of a Prometheus text answer (nothing for a body that is not text). */
export function expositionLines(body: unknown): string[] {
  return (typeof body === 'string' ? body : '').split('\n').map((l) => l.trim())
}
