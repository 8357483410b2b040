/**
 * The one document every command prints under --json:
 *
 *   {"status": "ok", "exit_code": 0, "result": {...}, "warnings": [], "error": null}
 *
 * `status` names the exit status in words (the README's exit-status table); `result` is the
 * command's own document (null when the command stopped before it had one), `error` is {code, message, hint, location, details}
 * (null on success). A ladder report inside `result` keeps its own pass/fail/incomplete words.
 */
export type EnvelopeStatus = 'ok' | 'failed' | 'bad-input' | 'precondition' | 'not-proven' | 'interrupted'

export interface EnvelopeError {
  code: string
  message: string
  hint: string | null
  location: {file?: string; line?: number; pointer?: string; field?: string} | null
  details: Record<string, unknown> | null
}

export interface Envelope {
  status: EnvelopeStatus
  exit_code: number
  result: unknown
  warnings: string[]
  error: EnvelopeError | null
}

const STATUS_OF_EXIT: Record<number, EnvelopeStatus> = {0: 'ok', 1: 'failed', 2: 'bad-input', 3: 'precondition', 4: 'not-proven', 130: 'interrupted'}

export function statusOfExit(exitCode: number): EnvelopeStatus {
  return STATUS_OF_EXIT[exitCode] ?? 'failed'
}

export function envelope(exitCode: number, result: unknown, warnings: string[], error: EnvelopeError | null): Envelope {
  return {status: statusOfExit(exitCode), exit_code: exitCode, result, warnings: [...warnings], error}
}
