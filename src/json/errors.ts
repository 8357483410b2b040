import {ExitCode, GymError} from '../errors.js'

// Errors with a location.

export interface RecordLocation {
  file: string
  line?: number
  field?: string
}

/** A problem with one field of a record; the caller adds the file and line. */
export class FieldError extends Error {
  constructor(
    readonly field: string | undefined,
    message: string,
  ) {
    super(message)
    this.name = 'FieldError'
  }
}

/** Bad input: exit 2, "file:line: field: message". */
export function inputError(code: string, message: string, location: RecordLocation, hint?: string): GymError {
  const text = location.field ? `${location.field}: ${message}` : message
  return new GymError(text, {code, exit: ExitCode.usage, hint, location})
}

/** Turn a FieldError raised while handling one line into a located GymError. */
export function locate(error: unknown, code: string, file: string, line: number, hint?: string): unknown {
  return error instanceof FieldError ? inputError(code, error.message, {file, line, field: error.field}, hint) : error
}
