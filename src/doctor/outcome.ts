/** Small builders of check outcomes, so each cause reads as its rule. */
import type { CheckOutcome, Finding } from './doctor-types.ts'

type Found = Omit<Finding, 'cause' | 'host'>

export function fine(checked: string, findings: Found[] = []): CheckOutcome {
  return { findings, checked }
}

export function skipped(reason: string): CheckOutcome {
  return { skipped: reason }
}

/** Line and column of a character offset in `text`. */
export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset).split('\n')
  return { line: before.length, column: (before.at(-1)?.length ?? 0) + 1 }
}
