import {once} from 'node:events'
import {promises as fsp} from 'node:fs'
import {finished} from 'node:stream/promises'

import {isLosslessNumber, LosslessNumber, parse} from 'lossless-json'

import {ExitCode, GymError} from '../errors.js'
import {openAtomicTarget} from '../runtime/fs.js'
import {MAX_NESTING, mayHoldNonFinite, nestsDeeperThan, POLICY_MESSAGES} from './input-policy.js'
import {JsonlPolicyError, LineReader} from './jsonl-reader.js'

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

/**
 * Compact JSON text, numbers exactly as read. Same output as lossless-json's stringify (bigints
 * become JSON strings), without its per-value replacer and number-stringifier hooks: this is on
 * the hot path of export, ingest and every Gym call.
 */
export function stringifyJson(value: unknown): string {
  return writeJson(value) ?? 'null'
}

function writeJson(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
    case 'number':
      return JSON.stringify(value)
    case 'boolean':
      return value ? 'true' : 'false'
    case 'bigint':
      return JSON.stringify(value.toString())
    case 'object': {
      if (value === null) return 'null'
      if (Array.isArray(value)) {
        if (value.length === 0) return '[]'
        let out = '['
        for (let i = 0; i < value.length; i++) {
          if (i > 0) out += ','
          out += writeJson(value[i]) ?? 'null'
        }
        return `${out}]`
      }
      if (isLosslessNumber(value)) return value.value
      if (value instanceof Date || value instanceof Boolean || value instanceof Number || value instanceof String) return JSON.stringify(value)
      const record = value as Record<string, unknown>
      if (typeof record.toJSON === 'function') return writeJson(record.toJSON())
      let out = '{'
      let first = true
      for (const key of Object.keys(record)) {
        const item = writeJson(record[key])
        if (item === undefined) continue
        out += first ? `${JSON.stringify(key)}:${item}` : `,${JSON.stringify(key)}:${item}`
        first = false
      }
      return `${out}}`
    }
    default:
      return undefined
  }
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !isLosslessNumber(value)
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

const PLAIN_INTEGER = /^(?:0|-?[1-9]\d{0,399})$/
const NUMBER_PARTS = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/
/** Literals with more digits than this are not treated as integers (keeps `1e999999999` from allocating). */
const MAX_INTEGER_DIGITS = 400

/**
 * The exact integer a JSON number literal denotes (`5`, `5.0`, `5e0` all give
 * "5"), or undefined when it is not a whole number. Decimal, so values above
 * 2^53 stay exact.
 */
export function integerText(literal: string): string | undefined {
  if (PLAIN_INTEGER.test(literal)) return literal
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

function childPath(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`
}

/** The dotted path of the first number a float would turn into inf, under path ('' for the root). */
export function findNonFinite(value: JsonValue, path: string): string | undefined {
  if (isLosslessNumber(value)) return isFiniteLiteral(value.value) ? undefined : path
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = findNonFinite(item, `${path}[${i}]`)
      if (found) return found
    }
  } else if (isJsonObject(value)) {
    for (const [key, item] of Object.entries(value)) {
      const found = findNonFinite(item, childPath(path, key))
      if (found) return found
    }
  }
  return undefined
}

/** findNonFinite on JSON text (for the error path, after a scan reported a non-finite number). */
export function nonFiniteField(text: string, path: string): string | undefined {
  return findNonFinite(parseJson(text), path)
}

// ---------------------------------------------------------------------------
// Raw members: an object's members as their exact source text. The streaming
// commands validate and split a line in one pass here instead of building
// objects with JSON.parse, then copy member text to the output unchanged.

const QUOTE = 0x22
const BACKSLASH = 0x5c
const COMMA = 0x2c
const COLON = 0x3a
const MINUS = 0x2d
const DOT = 0x2e
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d

/** What a member value is, read from its first character. */
export type JsonKind = 'object' | 'array' | 'string' | 'number' | 'boolean' | 'null'

export function jsonKind(rawValue: string): JsonKind {
  switch (rawValue.charCodeAt(0)) {
    case OPEN_BRACE:
      return 'object'
    case OPEN_BRACKET:
      return 'array'
    case QUOTE:
      return 'string'
    case 0x6e:
      return 'null'
    case 0x74:
    case 0x66:
      return 'boolean'
    default:
      return 'number'
  }
}

/** The kind of a parsed (lossless) value. */
export function valueKind(value: JsonValue): JsonKind {
  if (value === null) return 'null'
  if (typeof value === 'string') return 'string'
  if (typeof value === 'boolean') return 'boolean'
  if (isLosslessNumber(value)) return 'number'
  return Array.isArray(value) ? 'array' : 'object'
}

class JsonSyntaxError extends Error {}
/** Valid JSON the input policy refuses. */
class JsonPolicyViolation extends JsonSyntaxError {}

function syntaxError(what: string, at: number): never {
  throw new JsonSyntaxError(`${what} at column ${at + 1}`)
}

function skipWhitespace(text: string, i: number): number {
  let c = text.charCodeAt(i)
  while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = text.charCodeAt(++i)
  return i
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39
}

function isHexDigit(c: number): boolean {
  return isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)
}

const SIMPLE_ESCAPES = new Set([QUOTE, BACKSLASH, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74])

/** Validate the string token opening at i; index just past its closing quote. */
function scanString(text: string, i: number): number {
  let j = i + 1
  for (;;) {
    const c = text.charCodeAt(j)
    if (c === QUOTE) return j + 1
    if (c === BACKSLASH) {
      const escaped = text.charCodeAt(j + 1)
      if (SIMPLE_ESCAPES.has(escaped)) j += 2
      else if (escaped === 0x75 && isHexDigit(text.charCodeAt(j + 2)) && isHexDigit(text.charCodeAt(j + 3)) && isHexDigit(text.charCodeAt(j + 4)) && isHexDigit(text.charCodeAt(j + 5))) j += 6
      else syntaxError('invalid escape in string', j)
    } else if (c < 0x20) {
      syntaxError('control character in string', j)
    } else if (j >= text.length) {
      syntaxError('unterminated string', i)
    } else {
      j++
    }
  }
}

function scanDigits(text: string, i: number): number {
  if (!isDigit(text.charCodeAt(i))) syntaxError('digit expected', i)
  while (isDigit(text.charCodeAt(i))) i++
  return i
}

/** Set by scanNumber when a float literal overflows a double; reset by each scanObjectMembers call. */
let sawNonFinite = false

/** Validate the number opening at i: -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)? */
function scanNumber(text: string, i: number): number {
  const start = i
  if (text.charCodeAt(i) === MINUS) i++
  i = text.charCodeAt(i) === 0x30 ? i + 1 : scanDigits(text, i)
  const wholeDigits = i - start
  let float = false
  if (text.charCodeAt(i) === DOT) {
    i = scanDigits(text, i + 1)
    float = true
  }
  const e = text.charCodeAt(i)
  let exponentDigits = 0
  if (e === 0x65 || e === 0x45) {
    const sign = text.charCodeAt(i + 1)
    const digitsStart = sign === 0x2b || sign === MINUS ? i + 2 : i + 1
    i = scanDigits(text, digitsStart)
    exponentDigits = i - digitsStart
    float = true
  }
  // Only a float with a 3-digit exponent or 309+ digits can overflow a double.
  if (float && (exponentDigits >= 3 || wholeDigits >= 309) && !Number.isFinite(Number(text.slice(start, i)))) sawNonFinite = true
  return i
}

const LITERALS = ['true', 'false', 'null']

function scanScalar(text: string, i: number): number {
  const c = text.charCodeAt(i)
  if (c === QUOTE) return scanString(text, i)
  if (c === MINUS || isDigit(c)) return scanNumber(text, i)
  for (const literal of LITERALS) if (text.startsWith(literal, i)) return i + literal.length
  return syntaxError('JSON value expected', i)
}

/** Validate `"key" :` at i; index of the value that follows. */
function scanKey(text: string, i: number): number {
  if (text.charCodeAt(i) !== QUOTE) syntaxError('quoted object key expected', i)
  const colon = skipWhitespace(text, scanString(text, i))
  if (text.charCodeAt(colon) !== COLON) syntaxError("':' expected", colon)
  return skipWhitespace(text, colon + 1)
}

/** Validate the value at i (nesting handled with an explicit stack); index just past it. */
function scanValue(text: string, i: number): number {
  const closers: number[] = []
  for (;;) {
    const c = text.charCodeAt(i)
    if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (closers.length >= MAX_NESTING) throw new JsonPolicyViolation(POLICY_MESSAGES.nesting)
      const closer = c === OPEN_BRACE ? CLOSE_BRACE : CLOSE_BRACKET
      i = skipWhitespace(text, i + 1)
      if (text.charCodeAt(i) === closer) {
        i++
      } else {
        closers.push(closer)
        if (closer === CLOSE_BRACE) i = scanKey(text, i)
        continue
      }
    } else {
      i = scanScalar(text, i)
    }
    // After a complete value: close finished containers until one continues with a comma.
    for (;;) {
      if (closers.length === 0) return i
      i = skipWhitespace(text, i)
      const next = text.charCodeAt(i)
      const closer = closers[closers.length - 1]
      if (next === closer) {
        closers.pop()
        i++
      } else if (next === COMMA) {
        i = skipWhitespace(text, i + 1)
        if (closer === CLOSE_BRACE) i = scanKey(text, i)
        break
      } else {
        syntaxError(`',' or '${String.fromCharCode(closer)}' expected`, i)
      }
    }
  }
}

function keyOf(token: string): string {
  return token.includes('\\') ? (JSON.parse(token) as string) : token.slice(1, -1)
}

/** An object line split into its members; see scanObjectMembers. */
export interface ScannedObject {
  /** Key → exact value text, in source order. */
  members: Map<string, string>
  /** Some float literal in the text overflows a double (Python would read inf). */
  hasNonFinite: boolean
}

/**
 * Validate a JSON text that must be an object, in one pass, and return its
 * members as key → exact value text in source order (a repeated key keeps its
 * first position and last value, like a Python dict). Returns undefined when
 * the text is valid JSON but not an object; throws on invalid JSON.
 */
export function scanObjectMembers(text: string): ScannedObject | undefined {
  sawNonFinite = false
  const start = skipWhitespace(text, 0)
  if (text.charCodeAt(start) !== OPEN_BRACE) {
    const end = skipWhitespace(text, scanValue(text, start))
    if (end !== text.length) syntaxError('end of input expected', end)
    return undefined
  }
  const members = new Map<string, string>()
  let i = skipWhitespace(text, start + 1)
  if (text.charCodeAt(i) !== CLOSE_BRACE) {
    for (;;) {
      const valueStart = scanKey(text, i)
      const valueEnd = scanValue(text, valueStart)
      members.set(keyOf(text.slice(i, endOfString(text, i))), text.slice(valueStart, valueEnd))
      i = skipWhitespace(text, valueEnd)
      if (text.charCodeAt(i) !== COMMA) break
      i = skipWhitespace(text, i + 1)
    }
    if (text.charCodeAt(i) !== CLOSE_BRACE) syntaxError("',' or '}' expected", i)
  }
  const end = skipWhitespace(text, i + 1)
  if (end !== text.length) syntaxError('end of input expected', end)
  return {members, hasNonFinite: sawNonFinite}
}

/** Index just past the (already validated) string token opening at i. */
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

/** Index just past the (already validated) value that starts at i. */
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
 * The members of an object text that is already known to be valid (a member
 * value returned by scanObjectMembers), without validating it again.
 */
export function rawMembers(objectText: string): Map<string, string> {
  const members = new Map<string, string>()
  let i = skipWhitespace(objectText, skipWhitespace(objectText, 0) + 1)
  if (objectText.charCodeAt(i) === CLOSE_BRACE) return members
  for (;;) {
    const keyEnd = endOfString(objectText, i)
    const valueStart = skipWhitespace(objectText, skipWhitespace(objectText, keyEnd) + 1)
    const valueEnd = endOfValue(objectText, valueStart)
    members.set(keyOf(objectText.slice(i, keyEnd)), objectText.slice(valueStart, valueEnd))
    i = skipWhitespace(objectText, valueEnd)
    if (objectText.charCodeAt(i) !== COMMA) return members
    i = skipWhitespace(objectText, i + 1)
  }
}

/** The string a raw JSON string token denotes. */
export function rawString(token: string): string {
  return keyOf(token)
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

/** Fail early (exit 2) unless path is an existing regular file; returns its size in bytes. */
export async function assertJsonlFile(file: string, flag: string): Promise<number> {
  const stat = await fsp.stat(file).catch(() => undefined)
  if (stat?.isFile()) return stat.size
  const what = stat === undefined ? undefined : stat.isDirectory() ? 'a directory' : stat.isFIFO() ? 'a pipe' : stat.isCharacterDevice() ? 'a character device' : 'not a regular file'
  throw new GymError(what === undefined ? `JSONL file does not exist: ${file}` : `${file} is ${what}, not a JSONL file`, {
    code: what === undefined ? 'E_JSONL_MISSING' : 'E_JSONL_NOT_FILE',
    exit: ExitCode.usage,
    hint: what === undefined ? `Check the path given to ${flag}.` : `Pass a regular file to ${flag} (inputs are read more than once; save a stream to a file first).`,
    location: {field: flag},
  })
}

const BLANK = /^\s*$/

/** How far a read has come; told once per chunk (about every MiB). */
export interface ReadProgress {
  file: string
  bytes: number
  totalBytes: number
  /** Lines before the chunk now being read. */
  lines: number
}

/**
 * Stream the non-blank lines of a JSONL file (a trailing CR dropped) through the one line reader,
 * so the input policy's byte-level rules hold: memory holds one chunk plus the current line.
 */
export async function* readJsonlLines(file: string, flag: string, onProgress?: (progress: ReadProgress) => void): AsyncGenerator<JsonlLine> {
  const totalBytes = await assertJsonlFile(file, flag)
  const reader = await LineReader.open(file)
  try {
    for (let texts = await nextTexts(reader, file); texts; texts = await nextTexts(reader, file)) {
      const first = reader.firstLine
      onProgress?.({file, bytes: reader.bytesRead, totalBytes, lines: first - 1})
      for (let n = 0; n < texts.length; n++) {
        const text = texts[n].endsWith('\r') ? texts[n].slice(0, -1) : texts[n]
        if (!BLANK.test(text)) yield {line: first + n, text}
      }
    }
  } finally {
    await reader.close()
  }
}

async function nextTexts(reader: LineReader, file: string): Promise<string[] | undefined> {
  try {
    return await reader.nextTexts()
  } catch (error) {
    if (error instanceof JsonlPolicyError) throw inputError('E_JSONL_INVALID', error.message, {file, line: error.line}, error.hint)
    throw error
  }
}

/** Validate a line as a JSON object and split it into raw members (see scanObjectMembers). */
export function scanObjectLine({line, text}: JsonlLine, file: string): ScannedObject {
  let scanned: ScannedObject | undefined
  try {
    scanned = scanObjectMembers(text)
  } catch (error) {
    if (!(error instanceof JsonSyntaxError)) throw error
    throw inputError('E_JSONL_INVALID', error instanceof JsonPolicyViolation ? error.message : `invalid JSON: ${error.message}`, {file, line})
  }
  if (!scanned) throw inputError('E_JSONL_INVALID', 'line must contain a JSON object', {file, line})
  return scanned
}

/** Parse a line losslessly as a JSON object. */
export function parseLosslessObjectLine({line, text}: JsonlLine, file: string): JsonObject {
  if (nestsDeeperThan(text)) throw inputError('E_JSONL_INVALID', POLICY_MESSAGES.nesting, {file, line})
  let value: JsonValue
  try {
    value = parseJson(text)
  } catch (error) {
    throw inputError('E_JSONL_INVALID', `invalid JSON: ${(error as Error).message}`, {file, line})
  }
  if (!isJsonObject(value)) throw inputError('E_JSONL_INVALID', 'line must contain a JSON object', {file, line})
  if (mayHoldNonFinite(text)) {
    const field = findNonFinite(value, '')
    if (field !== undefined) throw inputError('E_JSONL_INVALID', POLICY_MESSAGES.nonFinite, {file, line, field})
  }
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

const CHUNK = 1 << 20
/** Up to this much may wait in the stream, so writing overlaps with producing the next lines. */
const QUEUED = 4 << 20

/**
 * A JSONL output that becomes visible only on commit(): lines are streamed to
 * a temporary sibling (fsynced on close) and renamed at the end. A dry run
 * counts lines and writes nothing.
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
  const stream = atomic.createStream({flush: !atomic.direct, highWaterMark: QUEUED})
  let failure: Error | undefined
  stream.on('error', (error) => (failure ??= error))
  let chunk = ''
  let lines = 0
  const send = async (data: string) => {
    if (failure) throw failure
    if (!stream.write(data)) await once(stream, 'drain')
  }
  return {
    get lines() {
      return lines
    },
    async write(line: string) {
      chunk += `${line}\n`
      lines++
      if (chunk.length >= CHUNK) {
        const data = chunk
        chunk = ''
        await send(data)
      }
    },
    async commit() {
      stream.end(chunk)
      await finished(stream)
      await atomic.commit()
    },
    async abort() {
      stream.destroy()
      await finished(stream).catch(() => undefined)
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
