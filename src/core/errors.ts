/**
 * Typed domain errors. They are thrown deep and caught only at the edge (the CLI or a playbook),
 * where `exitCodeFor` maps them to an exit code. This file is the one place that mapping lives.
 */

/** Exit codes of every svcops command. */
export const ExitCode = {
  ok: 0,
  /** The operation was attempted and failed (a service did not start, a backup did not verify). */
  failed: 1,
  /** Bad input: arguments, configuration or an answer that does not have the expected shape. Nothing was changed. */
  badInput: 2,
  /** Another run holds the lock of this environment or host. */
  locked: 3,
  /** The operation failed and an automatic rollback restored the previous state. */
  rolledBack: 4,
  /** Something was found that needs a person (a scanner finding, a failed check). */
  findings: 5,
  /** Interrupted by a signal; the run can be resumed from its journal. */
  interrupted: 130,
} as const
export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode]

/**
 * Base class: `message` is one sentence a person can act on; `hint` is the command to run next;
 * `facts` are what a machine needs to act on it (run id, report, lock holder), printed as fields of
 * the `--json` answer next to the error.
 */
export class SvcopsError extends Error {
  readonly exitCode: ExitCodeValue = ExitCode.failed
  facts: Record<string, unknown> = {}
  /** Set once where the error is made, or at the edge by `withHint` (a run's closing line). */
  hint?: string
  constructor(message: string, hint?: string, options?: { cause?: unknown }) {
    super(message, options)
    this.hint = hint
    this.name = new.target.name
  }
}

/** Bad arguments, configuration or input files. Raised before anything is changed. */
export class BadInputError extends SvcopsError {
  override readonly exitCode = ExitCode.badInput
}

/** A remote answer (HTTP, a command's output) did not have the documented shape. */
export class ProtocolError extends SvcopsError {}

/** An operation was attempted and failed. */
export class OperationError extends SvcopsError {}

/** A command exited non-zero. Carries the redacted command line and the tail of its output. */
export class CommandError extends OperationError {
  readonly code: number | null
  readonly stderrTail: string
  constructor(message: string, code: number | null, stderrTail: string, hint?: string) {
    super(message, hint)
    this.code = code
    this.stderrTail = stderrTail
  }
}

/** An HTTP call failed; `status` is the HTTP status when there was one. */
export class HttpError extends OperationError {
  readonly status: number | undefined
  constructor(message: string, status: number | undefined, hint?: string) {
    super(message, hint)
    this.status = status
  }
}

/** Authentication or authorization failed (wrong password, missing scopes). */
export class AuthError extends OperationError {
  readonly missingScopes: string[]
  constructor(message: string, missingScopes: string[] = [], hint?: string) {
    super(message, hint)
    this.missingScopes = missingScopes
  }
}

/** A lock is held by another run. */
export class LockedError extends SvcopsError {
  override readonly exitCode = ExitCode.locked
}

/** Something only a person can clear stops the operation before it changes anything (an unacknowledged gate). */
export class BlockedError extends SvcopsError {
  override readonly exitCode = ExitCode.findings
}

/** A failure after which svcops rolled back successfully. */
export class RolledBackError extends SvcopsError {
  override readonly exitCode = ExitCode.rolledBack
}

/** A run stopped at a safe point on a signal; it can be resumed or rolled back from its journal. */
export class InterruptedError extends SvcopsError {
  override readonly exitCode = ExitCode.interrupted
}

/** A required system binary is missing; the message names the install command. */
export class MissingBinaryError extends SvcopsError {
  constructor(binary: string, aptPackage: string) {
    super(`The program '${binary}' is not installed.`, `Install it with: sudo apt-get update && sudo apt-get install -y ${aptPackage}`)
  }
}

/** Adds machine-readable facts to an error on its way to the edge; returns it for `throw`. */
export function withFacts<E>(error: E, facts: Record<string, unknown>): E {
  if (error instanceof SvcopsError) error.facts = { ...error.facts, ...facts }
  return error
}

/** Gives `error` another hint (the edge knows the run's closing line); other values are returned as they are. */
export function withHint<E>(error: E, hint: string): E {
  if (error instanceof SvcopsError) error.hint = hint
  return error
}

/** Maps any thrown value to an exit code. Unknown errors are failures, never "bad input". */
export function exitCodeFor(error: unknown): ExitCodeValue {
  if (error instanceof SvcopsError) return error.exitCode
  return ExitCode.failed
}

/** True for errors we expect and explain; the CLI prints no stack trace for these. */
export function isExpected(error: unknown): error is SvcopsError {
  return error instanceof SvcopsError
}

/** The one way to turn anything thrown into the sentence a person reads. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
