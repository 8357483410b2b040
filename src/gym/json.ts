import {isUtf8} from 'node:buffer'
import {createReadStream, promises as fsp} from 'node:fs'

import {isLosslessNumber, LosslessNumber, parse, stringify} from 'lossless-json'

import {ExitCode, GymError} from '../errors.js'
import {openAtomicTarget} from '../runtime/fs.js'

/**
 * Lossless JSON for Gym data. Numbers are kept as their source text
 * (LosslessNumber), so 60-bit task indices, `1.0` versus `1` and every other
 * spelling survive a read/join/write round trip. JSONL files are streamed line
 * by line, and every problem is reported with its file, line and field.
 */

export {isLosslessNumber, LosslessNumber} from 'lossless-json'

export type JsonValue = null | boolean | string | LosslessNumber | JsonValue[] | JsonObject
export interface JsonObject {
  [key: string]: JsonValue
}

/** Parse JSON text losslessly. Duplicate keys keep the last value, as Python's json module does. */
export function parseJson(text: string): JsonValue {
  return parse(text, null, {onDuplicateKey: ({newValue}) => newValue}) as JsonValue
}

/** Compact JSON text; numbers are written exactly as they were read. */
export function stringifyJson(value: JsonValue): string {
  return stringify(value) as string
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !isLosslessNumber(value)
}

/** An object from JSON.parse (numbers lossy) or from parseJson (numbers lossless). */
export function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return isJsonObject(value)
}

/** Set a member without tripping the `__proto__` setter. */
export function setMember(target: JsonObject, key: string, value: JsonValue): void {
  if (key === '__proto__') Object.defineProperty(target, key, {value, enumerable: true, writable: true, configurable: true})
  else target[key] = value
}

export function isFloatLiteral(literal: string): boolean {
  return /[.eE]/.test(literal)
}

/** Python reads a float literal that overflows a double as inf; integers never overflow. */
export function isFiniteLiteral(literal: string): boolean {
  return !isFloatLiteral(literal) || Number.isFinite(Number(literal))
}

const NUMBER_PARTS = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/
/** Literals with more digits than this are not treated as integers (keeps `1e999999999` from allocating). */
const MAX_INTEGER_DIGITS = 400

/**
 * The exact integer a JSON number literal denotes (`5`, `5.0`, `5e0` all give
 * "5"), or undefined when it is not a whole number. Decimal, so values above
 * 2^53 stay exact.
 */
export function integerText(literal: string): string | undefined {
  const match = NUMBER_PARTS.exec(literal)
  if (!match) return undefined
  const [, sign, whole, fraction = '', exponent = '0'] = match
  let digits = (whole + fraction).replace(/^0+/, '')
  let shift = Number(exponent) - fraction.length
  if (digits === '') return '0'
  if (shift < 0) {
    const dropped = digits.slice(shift)
    if (!/^0*$/.test(dropped)) return undefined
    digits = digits.slice(0, shift)
    shift = 0
  }
  if (digits.length + shift > MAX_INTEGER_DIGITS) return undefined
  return `${sign}${digits}${'0'.repeat(shift)}`
}

/** The first number in a value that a float would turn into inf, as a dotted field path. */
export function findNonFinite(value: JsonValue, path: string): string | undefined {
  if (isLosslessNumber(value)) return isFiniteLiteral(value.value) ? undefined : path
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = findNonFinite(item, `${path}[${i}]`)
      if (found) return found
    }
  } else if (isJsonObject(value)) {
    for (const [key, item] of Object.entries(value)) {
      const found = findNonFinite(item, `${path}.${key}`)
      if (found) return found
    }
  }
  return undefined
}

/** Cheap pre-check on raw JSON text: only these shapes can overflow a double. */
const MAYBE_OVERFLOW = /\d[eE]\+?\d{3}|\d{309}/

/** Like findNonFinite, for raw JSON text; parses losslessly only when the text might overflow. */
export function findNonFiniteInText(text: string, path: string): string | undefined {
  return MAYBE_OVERFLOW.test(text) ? findNonFinite(parseJson(text), path) : undefined
}

// ---------------------------------------------------------------------------
// Raw members: exact source text of an object's members without re-serializing.

const QUOTE = 0x22
const BACKSLASH = 0x5c
const COMMA = 0x2c
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d

function skipWhitespace(text: string, i: number): number {
  let c = text.charCodeAt(i)
  while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = text.charCodeAt(++i)
  return i
}

/** Index just past the string token that opens at i. */
function endOfString(text: string, i: number): number {
  let from = i + 1
  for (;;) {
    const quote = text.indexOf('"', from)
    let backslashes = 0
    while (text.charCodeAt(quote - 1 - backslashes) === BACKSLASH) backslashes++
    if (backslashes % 2 === 0) return quote + 1
    from = quote + 1
  }
}

function isLiteralEnd(c: number): boolean {
  return c === COMMA || c === CLOSE_BRACE || c === CLOSE_BRACKET || c <= 0x20
}

/** Index just past the value that starts at i. */
function endOfValue(text: string, i: number): number {
  const first = text.charCodeAt(i)
  if (first === QUOTE) return endOfString(text, i)
  if (first === OPEN_BRACE || first === OPEN_BRACKET) {
    let depth = 0
    let j = i
    for (;;) {
      const c = text.charCodeAt(j)
      if (c === QUOTE) {
        j = endOfString(text, j)
        continue
      }
      if (c === OPEN_BRACE || c === OPEN_BRACKET) depth++
      else if ((c === CLOSE_BRACE || c === CLOSE_BRACKET) && --depth === 0) return j + 1
      j++
    }
  }
  let j = i + 1
  while (j < text.length && !isLiteralEnd(text.charCodeAt(j))) j++
  return j
}

/**
 * The members of a JSON object text as key → exact value text, in source
 * order (a repeated key keeps its first position and its last value, like a
 * Python dict). The text must already be known to be a valid JSON object.
 */
export function rawMembers(objectText: string): Map<string, string> {
  const members = new Map<string, string>()
  let i = skipWhitespace(objectText, skipWhitespace(objectText, 0) + 1)
  if (objectText.charCodeAt(i) === CLOSE_BRACE) return members
  for (;;) {
    const keyEnd = endOfString(objectText, i)
    const keyToken = objectText.slice(i, keyEnd)
    const key = keyToken.includes('\\') ? (JSON.parse(keyToken) as string) : keyToken.slice(1, -1)
    const valueStart = skipWhitespace(objectText, skipWhitespace(objectText, keyEnd) + 1)
    const valueEnd = endOfValue(objectText, valueStart)
    members.set(key, objectText.slice(valueStart, valueEnd))
    i = skipWhitespace(objectText, valueEnd)
    if (objectText.charCodeAt(i) !== COMMA) return members
    i = skipWhitespace(objectText, i + 1)
  }
}

// ---------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------
// JSONL reading.

export interface JsonlLine {
  /** 1-based line number in the file; blank lines are counted but not yielded. */
  line: number
  text: string
}

/** Fail early (exit 2) unless path is an existing regular file. */
export async function assertJsonlFile(file: string, flag: string): Promise<void> {
  const stat = await fsp.stat(file).catch(() => undefined)
  if (!stat?.isFile()) {
    throw new GymError(`JSONL file does not exist: ${file}`, {
      code: 'E_JSONL_MISSING',
      exit: ExitCode.usage,
      hint: `Check the path given to ${flag}.`,
      location: {field: flag},
    })
  }
}

const BLANK = /^\s*$/

function decodeLine(bytes: Buffer, file: string, line: number): string {
  if (!isUtf8(bytes)) throw inputError('E_JSONL_INVALID', 'line is not valid UTF-8', {file, line})
  const text = bytes.toString('utf8')
  return text.endsWith('\r') ? text.slice(0, -1) : text
}

/** Stream the non-blank lines of a JSONL file; memory holds one chunk plus the current line. */
export async function* readJsonlLines(file: string, flag: string): AsyncGenerator<JsonlLine> {
  await assertJsonlFile(file, flag)
  let pending: Buffer[] = []
  let line = 0
  for await (const chunk of createReadStream(file, {highWaterMark: 1 << 20}) as AsyncIterable<Buffer>) {
    let start = 0
    for (let newline = chunk.indexOf(10); newline !== -1; newline = chunk.indexOf(10, start)) {
      const piece = chunk.subarray(start, newline)
      const bytes = pending.length === 0 ? piece : Buffer.concat([...pending, piece])
      pending = []
      start = newline + 1
      const text = decodeLine(bytes, file, ++line)
      if (!BLANK.test(text)) yield {line, text}
    }
    if (start < chunk.length) pending.push(chunk.subarray(start))
  }
  if (pending.length > 0) {
    const text = decodeLine(Buffer.concat(pending), file, ++line)
    if (!BLANK.test(text)) yield {line, text}
  }
}

function invalidJson(text: string, file: string, line: number): GymError {
  let detail = 'not valid JSON'
  try {
    parseJson(text)
  } catch (error) {
    detail = (error as Error).message
  }
  return inputError('E_JSONL_INVALID', `invalid JSON: ${detail}`, {file, line})
}

/**
 * Validate a line as a JSON object with the native parser (fast; numbers in the
 * result are lossy, so take exact values from rawMembers or parseJson).
 */
export function parseObjectLine({line, text}: JsonlLine, file: string): Record<string, unknown> {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw invalidJson(text, file, line)
  }
  if (!isPlainRecord(value)) throw inputError('E_JSONL_INVALID', 'line must contain a JSON object', {file, line})
  return value
}

/** Parse a line losslessly as a JSON object. */
export function parseLosslessObjectLine({line, text}: JsonlLine, file: string): JsonObject {
  let value: JsonValue
  try {
    value = parseJson(text)
  } catch {
    throw invalidJson(text, file, line)
  }
  if (!isJsonObject(value)) throw inputError('E_JSONL_INVALID', 'line must contain a JSON object', {file, line})
  return value
}

// ---------------------------------------------------------------------------
// JSONL writing.

export interface JsonlOutput {
  /** Queue one line (without the newline); resolves when buffered data has been flushed. */
  write(line: string): Promise<void>
  /** Number of lines written so far. */
  readonly lines: number
  /** Flush, fsync and rename the temporary file over the target. */
  commit(): Promise<void>
  /** Drop everything written so far; the target is left untouched. */
  abort(): Promise<void>
}

const FLUSH_AT = 1 << 20

/**
 * A JSONL output that becomes visible only on commit(): lines are streamed to
 * a temporary sibling and renamed at the end. A dry run counts lines and
 * writes nothing.
 */
export async function openJsonlOutput(target: string, dryRun: boolean): Promise<JsonlOutput> {
  if (dryRun) {
    let lines = 0
    return {
      get lines() {
        return lines
      },
      async write() {
        lines++
      },
      async commit() {},
      async abort() {},
    }
  }
  const atomic = await openAtomicTarget(target)
  const handle = await fsp.open(atomic.tmpPath, 'w', 0o644)
  let buffer = ''
  let lines = 0
  let closed = false
  const close = async () => {
    if (!closed) {
      closed = true
      await handle.close()
    }
  }
  return {
    get lines() {
      return lines
    },
    async write(line: string) {
      buffer += `${line}\n`
      lines++
      if (buffer.length >= FLUSH_AT) {
        const chunk = buffer
        buffer = ''
        await handle.write(chunk)
      }
    },
    async commit() {
      if (buffer) await handle.write(buffer)
      buffer = ''
      await handle.sync()
      await close()
      await atomic.commit()
    },
    async abort() {
      await close()
      await atomic.abort()
    },
  }
}

/** Run fill() against an output, committing on success and removing the temporary file on failure. */
export async function withJsonlOutput<T>(target: string, dryRun: boolean, fill: (output: JsonlOutput) => Promise<T>): Promise<T> {
  const output = await openJsonlOutput(target, dryRun)
  try {
    const result = await fill(output)
    await output.commit()
    return result
  } catch (error) {
    await output.abort()
    throw error
  }
}
