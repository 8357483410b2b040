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

/** What the operating system said, in words, and whether it is the user's input (2) or the machine (1). */
const SYSTEM_ERRORS: Record<string, {says: string; exit: number; hint: string}> = {
  ENOSPC: {says: 'no space left on device', exit: ExitCode.failure, hint: 'Free space on that file system (or write elsewhere) and run again.'},
  EDQUOT: {says: 'disk quota exceeded', exit: ExitCode.failure, hint: 'Free space within your quota (or write elsewhere) and run again.'},
  EROFS: {says: 'read-only file system', exit: ExitCode.failure, hint: 'Choose a location on a writable file system.'},
  EACCES: {says: 'permission denied', exit: ExitCode.failure, hint: 'Check the permissions of the path and its folders.'},
  EPERM: {says: 'operation not permitted', exit: ExitCode.failure, hint: 'Check the permissions of the path and its folders.'},
  EIO: {says: 'input/output error', exit: ExitCode.failure, hint: 'The device reported an I/O error; check it and run again.'},
  EMFILE: {says: 'too many open files', exit: ExitCode.failure, hint: 'Raise the open-file limit (ulimit -n) and run again.'},
  ENFILE: {says: 'too many open files in the system', exit: ExitCode.failure, hint: 'Close other programs or raise the system file limit.'},
  ENOENT: {says: 'no such file or directory', exit: ExitCode.usage, hint: 'Check the path.'},
  EISDIR: {says: 'is a directory', exit: ExitCode.usage, hint: 'Pass a file, not a directory.'},
  ENOTDIR: {says: 'a part of the path is not a directory', exit: ExitCode.usage, hint: 'Check the path.'},
  ENAMETOOLONG: {says: 'file name too long', exit: ExitCode.usage, hint: 'Use a shorter path.'},
  ELOOP: {says: 'too many levels of symbolic links', exit: ExitCode.usage, hint: 'Check the symbolic links on the path.'},
  EEXIST: {says: 'already exists', exit: ExitCode.failure, hint: 'Remove it or choose another path.'},
  ENXIO: {says: 'no such device or address', exit: ExitCode.usage, hint: 'Pass a regular file, a pipe or -.'},
}

const SYSCALL_WORDS: Record<string, string> = {
  open: 'open',
  read: 'read',
  write: 'write',
  mkdir: 'create the folder',
  rmdir: 'remove the folder',
  rename: 'rename',
  unlink: 'remove',
  scandir: 'list',
  stat: 'read',
  lstat: 'read',
  fsync: 'write',
  copyfile: 'copy to',
  symlink: 'create the link',
  chmod: 'change the mode of',
}

export interface SystemError extends Error {
  code: string
  syscall?: string
  path?: string
  dest?: string
}

export function isSystemError(error: unknown): error is SystemError {
  return error instanceof Error && typeof (error as SystemError).code === 'string' && Object.hasOwn(SYSTEM_ERRORS, (error as SystemError).code)
}

/**
 * A file-system error from Node as one line: what could not be done, to which path, why, and
 * the documented exit status (2 when the path given is wrong, 1 when the machine refused).
 */
export function fromSystemError(error: SystemError): GymError {
  const known = SYSTEM_ERRORS[error.code]
  const action = SYSCALL_WORDS[error.syscall ?? ''] ?? 'use'
  const target = error.path ? ` ${error.path}` : ''
  return new GymError(`cannot ${action}${target}: ${known.says} (${error.code})`, {
    code: `E_FS_${error.code}`,
    exit: known.exit,
    hint: known.hint,
    details: {path: error.path ?? null, syscall: error.syscall ?? null, errno: error.code},
    cause: error,
  })
}

/** The message of anything thrown. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** The `code` of a thrown error (an errno such as ENOENT, a GymError code), if it has one. */
export function codeOf(error: unknown): string | undefined {
  const code = error instanceof Error || (typeof error === 'object' && error !== null) ? (error as {code?: unknown}).code : undefined
  return typeof code === 'string' ? code : undefined
}

/** The hint of a thrown GymError, if it has one. */
export function hintOf(error: unknown): string | undefined {
  return isGymError(error) ? error.hint : undefined
}

/** A numeric field of a thrown error (dockerode's `statusCode`, execa's `exitCode`), if it has one. */
export function numberField(error: unknown, field: string): number | undefined {
  const value = typeof error === 'object' && error !== null ? (error as Record<string, unknown>)[field] : undefined
  return typeof value === 'number' ? value : undefined
}

/** Why a network call failed: the code or message of its cause (fetch wraps the socket error), else its name. */
export function causeOf(error: unknown): string | undefined {
  const cause = error instanceof Error ? error.cause : undefined
  return codeOf(cause) ?? (cause instanceof Error ? cause.message : undefined) ?? (error instanceof Error ? error.name : undefined)
}
