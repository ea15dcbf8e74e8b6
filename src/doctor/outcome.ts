/** Small builders of check outcomes, so each cause reads as its rule. */
import type { CheckOutcome, Finding, HostView } from './doctor-types.ts'

type Found = Omit<Finding, 'cause' | 'host'>

export function fine(checked: string, findings: Found[] = []): CheckOutcome {
  return { findings, checked }
}

export function skipped(reason: string): CheckOutcome {
  return { skipped: reason }
}

/** The config, or the reason every check that needs it is skipped. */
export function configOf(view: HostView): NonNullable<HostView['config']> | undefined {
  return view.config
}

export const NO_CONFIG = 'the configuration file cannot be read or parsed (see config-syntax)'

/** Line and column of a character offset in `text`. */
export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset).split('\n')
  return { line: before.length, column: (before.at(-1)?.length ?? 0) + 1 }
}
