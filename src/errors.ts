/**
 * One error type for every expected failure. Commands turn it into a clean message,
 * a stable code and an exit status; no stack trace is shown for these.
 */
export const ExitCode = {
  ok: 0,
  failure: 1,
  usage: 2,
  precondition: 3,
  rungFailed: 4,
  interrupted: 130,
} as const

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode]

export interface GymErrorOptions {
  /** Stable machine-readable code, e.g. E_CONTRACT_INVALID. */
  code: string
  /** Process exit status; defaults to 1. */
  exit?: number
  /** What the user can do about it. */
  hint?: string
  /** Where the problem is: file, line, JSON pointer, field. */
  location?: {file?: string; line?: number; pointer?: string; field?: string}
  /** Structured details for --json output (never secrets). */
  details?: Record<string, unknown>
  cause?: unknown
}

export class GymError extends Error {
  readonly code: string
  readonly exit: number
  readonly hint?: string
  readonly location?: GymErrorOptions['location']
  readonly details?: Record<string, unknown>

  constructor(message: string, options: GymErrorOptions) {
    super(message, options.cause === undefined ? undefined : {cause: options.cause})
    this.name = 'GymError'
    this.code = options.code
    this.exit = options.exit ?? ExitCode.failure
    this.hint = options.hint
    this.location = options.location
    this.details = options.details
  }

  /** "file:line: message" when a location is known. */
  get located(): string {
    const loc = this.location
    if (!loc?.file) return this.message
    const where = loc.line === undefined ? loc.file : `${loc.file}:${loc.line}`
    return `${where}: ${this.message}`
  }
}

export function isGymError(error: unknown): error is GymError {
  return error instanceof GymError
}

export function usageError(message: string, hint?: string, location?: GymErrorOptions['location']): GymError {
  return new GymError(message, {code: 'E_USAGE', exit: ExitCode.usage, hint, location})
}

export function preconditionError(code: string, message: string, hint?: string): GymError {
  return new GymError(message, {code, exit: ExitCode.precondition, hint})
}
