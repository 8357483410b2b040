import {open} from 'node:fs/promises'

import {MAX_NESTING, maxLineBytes, mayHoldNonFinite, POLICY_MESSAGES} from '../../json/input-policy.js'
import {skipStringBody} from '../../json/byte-scan.js'
import {BACKSLASH, ESCAPABLE, IS_HEX, IS_LINE_SPACE, NEWLINE, QUOTE} from '../../json/chars.js'
import {FieldTrie} from './fields.js'
import {builtStringSkipper, newStringSkipper, type StringSkipper} from './string-skip.js'
import {Utf8Validator} from './utf8.js'

/**
 * A streaming, byte-level JSONL checker. It validates every line against the JSON grammar
 * (RFC 8259) without building strings or objects, finds the verifier fields by walking object
 * keys through a FieldTrie, and holds no more than one read chunk plus a few small buffers, so
 * memory stays flat however long the file or any single line is. JSON.parse on every row would
 * cost more than Python's json.loads; skipping over string bodies byte by byte costs far less.
 */

export interface LineProblem {
  line: number
  /** 1-based byte column where the problem was detected, when there is one. */
  column: number | null
  reason: string
}

export interface MissingField {
  field: string
  /** Rows (valid JSON objects) that lack the field or hold null there. */
  rows: number
  /** Line numbers of the first such rows. */
  lines: number[]
}

export interface JsonlStats {
  bytes: number
  /** What `wc -l` prints: the number of newline bytes. */
  newlines: number
  /** Physical lines, counting a last line that has no newline. */
  lines: number
  /** Non-blank lines: the robust row count (what convert_dataset.py and `awk NF` count). */
  rows: number
  blankLines: number
  /** Rows that are valid JSON objects. */
  objectRows: number
  /** Rows that are not (invalid UTF-8, invalid JSON, or not an object). */
  badRows: number
  crlfLines: number
  bom: boolean
  finalNewline: boolean
  /** The first bad lines (up to the limit), in file order. */
  problems: LineProblem[]
  missing: MissingField[]
}

/** Chooses rows to keep (parsed later for the conversion check); sees only valid object rows. */
export interface RowSampler {
  wants(row: number): boolean
  take(line: number, row: number, bytes: Uint8Array): void
}

export interface ScanOptions {
  fields: readonly string[]
  maxProblems?: number
  maxMissingLines?: number
  sampler?: RowSampler
  /** Rows longer than this are not sampled (their checks still run). */
  maxSampleBytes?: number
  /** Rows longer than this are bad rows (default: the input policy's maxLineBytes()). */
  maxLineBytes?: number
  /**
   * Where in the file this scan starts (a line start). Line numbers then count from 1 at this
   * point and are shifted by the caller; byte offsets stay absolute. Only offset 0 may hold a BOM.
   */
  startOffset?: number
  /** Chunks that are views of this skipper's memory have their string bodies skipped by it. */
  skipper?: Pick<StringSkipper, 'memory' | 'skip'>
}

// Scanner modes: what the next byte may be.
const LINE_START = 0
const VALUE = 1
const ARRAY_FIRST = 2
const OBJECT_FIRST = 3
const OBJECT_KEY = 4
const COLON = 5
const AFTER_VALUE = 6
const DONE = 7
const STRING = 8
const STRING_ESCAPE = 9
const STRING_UNICODE = 10
const NUMBER = 11
const LITERAL = 12
const BAD = 13

// Number states (RFC 8259 §6). Terminal: ZERO, INT, FRAC, EXP.
const N_MINUS = 0
const N_ZERO = 1
const N_INT = 2
const N_DOT = 3
const N_FRAC = 4
const N_E = 5
const N_E_SIGN = 6
const N_EXP = 7

const OBJECT = 1
const ARRAY = 2


const LITERALS: Record<number, Uint8Array> = {
  0x74: new TextEncoder().encode('true'),
  0x66: new TextEncoder().encode('false'),
  0x6e: new TextEncoder().encode('null'),
}

const TYPE_NAMES: Record<number, string> = {0x7b: 'an object', 0x5b: 'an array', 0x22: 'a string', 0x74: 'a boolean', 0x66: 'a boolean', 0x6e: 'null'}
const BOM = [0xef, 0xbb, 0xbf]
/** Keys longer than this are not verifier fields; stop collecting their bytes. */
const MAX_KEY_BYTES = 4096
/** Longer numbers are not checked for overflow (Python refuses integers of more than 4300 digits anyway). */
const MAX_NUMBER_BYTES = 4400

function describeByte(byte: number): string {
  if (byte >= 0x20 && byte < 0x7f) return `'${String.fromCharCode(byte)}'`
  return `byte 0x${byte.toString(16).padStart(2, '0')}`
}

function numberNext(state: number, byte: number): number {
  const digit = byte >= 0x30 && byte <= 0x39
  switch (state) {
    case N_MINUS:
      return byte === 0x30 ? N_ZERO : digit ? N_INT : -1
    case N_ZERO:
      return byte === 0x2e ? N_DOT : byte === 0x65 || byte === 0x45 ? N_E : -1
    case N_INT:
      return digit ? N_INT : byte === 0x2e ? N_DOT : byte === 0x65 || byte === 0x45 ? N_E : -1
    case N_DOT:
    case N_FRAC:
      return digit ? N_FRAC : state === N_FRAC && (byte === 0x65 || byte === 0x45) ? N_E : -1
    case N_E:
      return digit ? N_EXP : byte === 0x2b || byte === 0x2d ? N_E_SIGN : -1
    default:
      return digit ? N_EXP : -1
  }
}

function numberComplete(state: number): boolean {
  return state === N_ZERO || state === N_INT || state === N_FRAC || state === N_EXP
}

function containsByte(bytes: Uint8Array, byte: number, start: number, end: number): boolean {
  for (let k = start; k < end; k++) if (bytes[k] === byte) return true
  return false
}

/** A copy (Buffer#slice would return a view of a buffer the reader reuses). */
function copyBytes(view: Uint8Array): Uint8Array {
  return new Uint8Array(view)
}

function concatParts(parts: Uint8Array[], total: number): Uint8Array {
  if (parts.length === 1) return parts[0]
  const out = new Uint8Array(total)
  let at = 0
  for (const part of parts) {
    out.set(part, at)
    at += part.length
  }
  return out
}

export class JsonlScanner {
  private readonly trie: FieldTrie
  private readonly maxProblems: number
  private readonly maxMissingLines: number
  private readonly sampler?: RowSampler
  private readonly maxSampleBytes: number
  private readonly maxLineBytes: number
  private readonly skipper?: Pick<StringSkipper, 'memory' | 'skip'>
  private readonly utf8 = new Utf8Validator()
  private readonly utf8Bad: number[] = []
  private utf8Head = 0

  // Position.
  private offset = 0
  private readonly startOffset: number
  private line = 1
  private lineStart = 0
  private lastByte = -1

  // Grammar state of the current line.
  private mode = LINE_START
  private stack = new Uint8Array(64)
  private trieAt = new Int32Array(64)
  private depth = 0
  private numberState = 0
  /** Absolute offset of the number being read, and its bytes from earlier chunks. */
  private numberStart = 0
  private numberParts: Uint8Array[] = []
  private numberBytes = 0
  private literal: Uint8Array = LITERALS[0x74]
  private literalAt = 0
  private unicodeLeft = 0
  private stringIsKey = false
  private topByte = 0
  private pendingNode = -1
  private lineError: {column: number; reason: string} | null = null

  // Verifier fields of the current row.
  private readonly found: Uint8Array
  private keyTracking = false
  private keyStart = 0
  private keyParts: Uint8Array[] = []
  private keyBytes = 0

  // Sampling of the current row.
  private capturing = false
  private captureStart = 0
  private captureParts: Uint8Array[] = []
  private captureBytes = 0

  private bomMatched = 0
  private readonly stats: JsonlStats

  constructor(options: ScanOptions) {
    this.offset = this.lineStart = this.startOffset = options.startOffset ?? 0
    this.trie = new FieldTrie(options.fields)
    this.found = new Uint8Array(options.fields.length)
    this.maxProblems = options.maxProblems ?? 20
    this.maxMissingLines = options.maxMissingLines ?? 20
    this.sampler = options.sampler
    this.maxSampleBytes = options.maxSampleBytes ?? 32 * 1024 * 1024
    this.maxLineBytes = options.maxLineBytes ?? maxLineBytes()
    this.skipper = options.skipper
    this.stats = {
      bytes: 0,
      newlines: 0,
      lines: 0,
      rows: 0,
      blankLines: 0,
      objectRows: 0,
      badRows: 0,
      crlfLines: 0,
      bom: false,
      finalNewline: false,
      problems: [],
      missing: options.fields.map((field) => ({field, rows: 0, lines: []})),
    }
  }

  /** Consume the next chunk of the file. The chunk may be reused by the caller afterwards. */
  push(chunk: Uint8Array): void {
    for (const offset of this.utf8.push(chunk, this.offset)) this.utf8Bad.push(offset)
    const end = chunk.length
    // 32-bit reads let string bodies be skipped four bytes at a time.
    const view = new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    let i = this.startOffset === 0 && this.offset < BOM.length ? this.skipBom(chunk) : 0
    // A chunk in the skipper's memory has its string bodies skipped there (16 bytes a step).
    const skip = this.skipper !== undefined && chunk.buffer === this.skipper.memory ? this.skipper.skip : undefined
    const base = chunk.byteOffset
    // The hot state lives in locals; it is written back before any method that reads it.
    let mode = this.mode
    let depth = this.depth
    while (i < end) {
      if (mode === STRING) {
        i = skip === undefined ? skipStringBody(chunk, view, i) : skip(base + i, base + end) - base
        if (i === end) break
        if (chunk[i] === QUOTE && !this.keyTracking) {
          // The end of a value, or of a key no verifier field goes through.
          if (this.stringIsKey) {
            mode = COLON
            this.pendingNode = -1
          } else {
            mode = depth === 0 ? DONE : AFTER_VALUE
          }
          i++
          continue
        }
        this.mode = mode
        i = this.stringStop(chunk, i)
        mode = this.mode
        continue
      }
      const byte = chunk[i]
      // Fast paths for the common structural bytes; everything else goes through step().
      if (mode < STRING && byte === 0x20) {
        i++
      } else if (mode === AFTER_VALUE && byte === 0x2c) {
        mode = this.stack[depth] === OBJECT ? OBJECT_KEY : VALUE
        i++
      } else if (mode === AFTER_VALUE && (byte === 0x7d || byte === 0x5d) && this.stack[depth] === (byte === 0x7d ? OBJECT : ARRAY)) {
        depth--
        mode = depth === 0 ? DONE : AFTER_VALUE
        i++
      } else if (mode === COLON && byte === 0x3a) {
        mode = VALUE
        i++
      } else if (mode === OBJECT_KEY && byte === QUOTE && this.trieAt[depth] < 0) {
        mode = STRING
        this.stringIsKey = true
        this.keyTracking = false
        i++
      } else if (mode === VALUE && byte === QUOTE && this.pendingNode === -1) {
        mode = STRING
        this.stringIsKey = false
        i++
      } else if (mode === NUMBER && byte >= 0x30 && byte <= 0x39 && this.numberState !== N_ZERO && this.numberState !== N_E) {
        // Digits keep every number state except a leading zero; a digit after e/E moves to the exponent.
        if (this.numberState === N_MINUS) this.numberState = N_INT
        else if (this.numberState === N_DOT) this.numberState = N_FRAC
        else if (this.numberState === N_E_SIGN) this.numberState = N_EXP
        i++
      } else if (mode === BAD && byte !== NEWLINE) {
        const newline = chunk.indexOf(NEWLINE, i)
        i = newline === -1 ? end : newline
      } else {
        this.mode = mode
        this.depth = depth
        if (byte === NEWLINE) {
          this.endLine(chunk, i)
          i++
        } else {
          i = this.step(chunk, i, byte, mode)
        }
        mode = this.mode
        depth = this.depth
      }
    }
    this.mode = mode
    this.depth = depth
    if (this.lineError === null && mode !== LINE_START && this.offset + end - this.lineStart > this.maxLineBytes) {
      this.lineError = this.tooLong()
      this.mode = BAD
      this.keyTracking = false
    }
    this.carryPartials(chunk)
    if (end > 0) this.lastByte = chunk[end - 1]
    this.offset += end
    this.stats.bytes = this.offset - this.startOffset
  }

  /** chunk[i] ends a run of plain string bytes: a quote, an escape, or a byte a string may not hold. */
  private stringStop(chunk: Uint8Array, i: number): number {
    const byte = chunk[i]
    if (byte === QUOTE) {
      if (this.stringIsKey) this.endKey(chunk, i)
      else this.afterValue()
      return i + 1
    }
    if (byte === BACKSLASH) {
      // Complete escapes are skipped here; one cut by the chunk end goes through the escape states.
      const escaped = i + 1 < chunk.length ? chunk[i + 1] : -1
      if (escaped === -1) {
        this.mode = STRING_ESCAPE
        return i + 1
      }
      if (escaped !== 0x75) {
        return ESCAPABLE[escaped] === 1 ? i + 2 : this.fail(chunk, i + 1, `invalid escape \\${String.fromCharCode(escaped)} in a string`)
      }
      if (i + 5 < chunk.length && IS_HEX[chunk[i + 2]] & IS_HEX[chunk[i + 3]] & IS_HEX[chunk[i + 4]] & IS_HEX[chunk[i + 5]]) return i + 6
      this.mode = STRING_UNICODE
      this.unicodeLeft = 4
      return i + 2
    }
    if (byte === NEWLINE) return this.fail(chunk, i, 'the line ends inside a string (truncated row?)')
    return this.fail(chunk, i, `raw control character ${describeByte(byte)} inside a string (must be escaped)`)
  }

  /** End of file: finish a last line that has no newline, and return the statistics. */
  end(): JsonlStats {
    for (const offset of this.utf8.end()) this.utf8Bad.push(offset)
    this.stats.finalNewline = this.lastByte === NEWLINE
    const lastLineHasBytes = this.offset > this.lineStart
    if (lastLineHasBytes) this.endLine(new Uint8Array(0), 0)
    return this.stats
  }

  /** One byte outside a string body; returns the next index. */
  private step(chunk: Uint8Array, i: number, byte: number, mode: number): number {
    if (IS_LINE_SPACE[byte] === 1 && mode !== NUMBER && mode !== LITERAL && mode !== STRING_ESCAPE && mode !== STRING_UNICODE) return i + 1
    switch (mode) {
      case LINE_START:
        this.startRow(i, byte)
        return this.startValue(chunk, i, byte)
      case VALUE:
        return this.startValue(chunk, i, byte)
      case ARRAY_FIRST:
        if (byte === 0x5d) return this.close(chunk, i, ARRAY)
        return this.startValue(chunk, i, byte)
      case OBJECT_FIRST:
        if (byte === 0x7d) return this.close(chunk, i, OBJECT)
        return this.startKey(chunk, i, byte)
      case OBJECT_KEY:
        return this.startKey(chunk, i, byte)
      case COLON:
        if (byte !== 0x3a) return this.fail(chunk, i, `expected ':' after an object key, found ${describeByte(byte)}`)
        this.mode = VALUE
        return i + 1
      case AFTER_VALUE:
        return this.afterValueByte(chunk, i, byte)
      case DONE:
        return this.fail(chunk, i, `extra data after the JSON value: ${describeByte(byte)}`)
      case STRING_ESCAPE:
        if (ESCAPABLE[byte] === 0) return this.fail(chunk, i, `invalid escape \\${String.fromCharCode(byte)} in a string`)
        if (byte === 0x75) {
          this.mode = STRING_UNICODE
          this.unicodeLeft = 4
        } else {
          this.mode = STRING
        }
        return i + 1
      case STRING_UNICODE:
        if (IS_HEX[byte] === 0) return this.fail(chunk, i, `invalid \\u escape: ${describeByte(byte)} is not a hex digit`)
        if (--this.unicodeLeft === 0) this.mode = STRING
        return i + 1
      case NUMBER: {
        const next = numberNext(this.numberState, byte)
        if (next !== -1) {
          this.numberState = next
          return i + 1
        }
        if (!numberComplete(this.numberState)) return this.fail(chunk, i, `malformed number before ${describeByte(byte)}`)
        if ((this.numberState === N_FRAC || this.numberState === N_EXP) && this.overflows(chunk, i)) return this.refuse(chunk, this.numberStart - this.offset, POLICY_MESSAGES.nonFinite)
        this.afterValue()
        return i // the byte after the number is read in the new mode
      }
      default: {
        // LITERAL
        if (byte !== this.literal[this.literalAt]) return this.fail(chunk, i, `invalid literal: expected ${decoder.decode(this.literal)}`)
        if (++this.literalAt === this.literal.length) this.afterValue()
        return i + 1
      }
    }
  }

  private startRow(i: number, byte: number): void {
    const row = this.stats.rows + 1
    this.topByte = byte
    this.found.fill(0)
    this.capturing = this.sampler?.wants(row) ?? false
    this.captureStart = i
    this.captureParts = []
    this.captureBytes = 0
  }

  private startValue(chunk: Uint8Array, i: number, byte: number): number {
    const node = this.pendingNode
    this.pendingNode = -1
    if (node >= 0) {
      // A key given twice keeps its last value, as Python's json.loads (and the converter) do:
      // whatever the earlier value provided is forgotten before this one is read.
      for (const f of this.trie.fieldsUnder[node]) this.found[f] = 0
      if (this.trie.fieldAt[node] >= 0 && byte !== 0x6e) this.found[this.trie.fieldAt[node]] = 1
    }
    if (byte === QUOTE) {
      this.mode = STRING
      this.stringIsKey = false
      return i + 1
    }
    if ((byte === 0x7b || byte === 0x5b) && this.depth >= MAX_NESTING) return this.refuse(chunk, i, POLICY_MESSAGES.nesting)
    if (byte === 0x7b) {
      const tracked = this.depth === 0 ? 0 : node >= 0 && this.trie.hasChildren(node) ? node : -1
      this.open(OBJECT, tracked)
      this.mode = OBJECT_FIRST
      return i + 1
    }
    if (byte === 0x5b) {
      this.open(ARRAY, -1)
      this.mode = ARRAY_FIRST
      return i + 1
    }
    if (byte === 0x2d || (byte >= 0x30 && byte <= 0x39)) {
      this.mode = NUMBER
      this.numberState = byte === 0x2d ? N_MINUS : byte === 0x30 ? N_ZERO : N_INT
      this.numberStart = this.offset + i
      if (this.numberBytes > 0) {
        this.numberParts = []
        this.numberBytes = 0
      }
      return i + 1
    }
    const literal = LITERALS[byte]
    if (literal) {
      this.mode = LITERAL
      this.literal = literal
      this.literalAt = 1
      return i + 1
    }
    const hint = byte === 0x4e || byte === 0x49 ? ' (NaN and Infinity are not JSON)' : byte === 0x27 ? " (JSON strings use double quotes)" : ''
    return this.fail(chunk, i, `expected a value, found ${describeByte(byte)}${hint}`)
  }

  private startKey(chunk: Uint8Array, i: number, byte: number): number {
    if (byte !== QUOTE) return this.fail(chunk, i, `expected an object key in double quotes, found ${describeByte(byte)}`)
    this.mode = STRING
    this.stringIsKey = true
    this.keyTracking = this.trieAt[this.depth] >= 0
    this.keyStart = i + 1
    if (this.keyParts.length > 0) this.keyParts = []
    this.keyBytes = 0
    return i + 1
  }

  /** The closing quote of a key is at `quote`. */
  private endKey(chunk: Uint8Array, quote: number): void {
    this.mode = COLON
    this.pendingNode = -1
    if (!this.keyTracking) return
    this.keyTracking = false
    const node = this.trieAt[this.depth]
    if (this.keyParts.length === 0) {
      // The usual case: the whole key is in this chunk and has no escapes.
      const escaped = containsByte(chunk, BACKSLASH, this.keyStart, quote)
      this.pendingNode = escaped ? this.childOfEscaped(node, chunk.subarray(this.keyStart, quote)) : this.trie.childByBytes(node, chunk, this.keyStart, quote)
      return
    }
    const last = chunk.subarray(this.keyStart, quote)
    const bytes = concatParts([...this.keyParts, last], this.keyBytes + last.length)
    this.keyParts = []
    this.pendingNode = bytes.length > MAX_KEY_BYTES ? -1 : this.childOfEscaped(node, bytes)
  }

  private childOfEscaped(node: number, bytes: Uint8Array): number {
    const key = decodeKey(bytes)
    return key === undefined ? -1 : this.trie.child(node, key)
  }

  private afterValueByte(chunk: Uint8Array, i: number, byte: number): number {
    const container = this.stack[this.depth]
    if (byte === 0x2c) {
      this.mode = container === OBJECT ? OBJECT_KEY : VALUE
      return i + 1
    }
    if (byte === 0x7d || byte === 0x5d) return this.close(chunk, i, byte === 0x7d ? OBJECT : ARRAY)
    return this.fail(chunk, i, `expected ',' or '${container === OBJECT ? '}' : ']'}', found ${describeByte(byte)}`)
  }

  private open(kind: number, trieNode: number): void {
    this.depth++
    if (this.depth === this.stack.length) {
      const stack = new Uint8Array(this.stack.length * 2)
      stack.set(this.stack)
      this.stack = stack
      const trieAt = new Int32Array(this.trieAt.length * 2)
      trieAt.set(this.trieAt)
      this.trieAt = trieAt
    }
    this.stack[this.depth] = kind
    this.trieAt[this.depth] = trieNode
  }

  private close(chunk: Uint8Array, i: number, kind: number): number {
    if (this.stack[this.depth] !== kind) return this.fail(chunk, i, `unexpected ${describeByte(chunk[i])}`)
    this.depth--
    this.afterValue()
    return i + 1
  }

  private afterValue(): void {
    this.mode = this.depth === 0 ? DONE : AFTER_VALUE
  }

  private tooLong(): {column: number; reason: string} {
    return {column: this.maxLineBytes + 1, reason: POLICY_MESSAGES.lineTooLong(this.maxLineBytes)}
  }

  /** Whether the float that ends before chunk[end] overflows a double (Python reads it as inf). */
  private overflows(chunk: Uint8Array, end: number): boolean {
    const start = Math.max(0, this.numberStart - this.offset)
    const length = this.numberBytes + end - start
    if (length < 5 || length > MAX_NUMBER_BYTES) return false
    const text = decoder.decode(this.numberBytes === 0 ? chunk.subarray(start, end) : concatParts([...this.numberParts, chunk.subarray(start, end)], length))
    return mayHoldNonFinite(text) && !Number.isFinite(Number(text))
  }

  /** Mark the current line bad (the first problem wins) and skip to its end; returns the next index. */
  private fail(chunk: Uint8Array, i: number, reason: string): number {
    return this.refuse(chunk, i, `invalid JSON: ${reason}`)
  }

  /** fail() for valid JSON the input policy refuses. */
  private refuse(chunk: Uint8Array, i: number, reason: string): number {
    this.lineError ??= {column: this.offset + i - this.lineStart + 1, reason}
    this.mode = BAD
    this.keyTracking = false
    const newline = chunk.indexOf(NEWLINE, i)
    return newline === -1 ? chunk.length : newline
  }

  /** The newline at chunk[i] (or the end of the file) ends the current line. */
  private endLine(chunk: Uint8Array, i: number): void {
    const stats = this.stats
    const lineEnd = this.offset + i
    stats.lines++
    if (i < chunk.length) stats.newlines++
    const previous = i > 0 ? chunk[i - 1] : this.lastByte
    if (i < chunk.length && previous === 0x0d) stats.crlfLines++
    const utf8Error = this.takeUtf8Error(lineEnd)
    if (this.lineError === null && this.mode !== LINE_START && lineEnd - this.lineStart > this.maxLineBytes) this.lineError = this.tooLong()

    if (this.mode === LINE_START && utf8Error === null && this.lineError === null) {
      stats.blankLines++
    } else {
      stats.rows++
      const problem = utf8Error ?? this.lineError ?? this.completeness()
      if (problem) this.recordBadRow(problem)
      else this.recordObjectRow(chunk, i)
    }
    this.resetLine(lineEnd + 1)
  }

  /** Why a line whose bytes all scanned cleanly is still not a JSON object row, or null. */
  private completeness(): {column: number | null; reason: string} | null {
    if (this.mode === NUMBER && this.depth === 0 && numberComplete(this.numberState)) this.mode = DONE
    if (this.mode === LITERAL && this.literalAt === this.literal.length) this.mode = DONE
    if (this.mode !== DONE) return {column: null, reason: 'invalid JSON: the line ends before the value is complete (truncated row?)'}
    if (this.topByte !== 0x7b) return {column: 1, reason: `expected a JSON object, got ${TYPE_NAMES[this.topByte] ?? 'a number'}`}
    return null
  }

  private takeUtf8Error(lineEnd: number): {column: number; reason: string} | null {
    let error: {column: number; reason: string} | null = null
    while (this.utf8Head < this.utf8Bad.length && this.utf8Bad[this.utf8Head] < lineEnd) {
      const offset = this.utf8Bad[this.utf8Head++]
      error ??= {column: offset - this.lineStart + 1, reason: `invalid UTF-8 at byte ${offset - this.lineStart + 1}`}
    }
    if (this.utf8Head > 1024 && this.utf8Head === this.utf8Bad.length) {
      this.utf8Bad.length = 0
      this.utf8Head = 0
    }
    return error
  }

  private recordBadRow(problem: {column: number | null; reason: string}): void {
    this.stats.badRows++
    if (this.stats.problems.length < this.maxProblems) this.stats.problems.push({line: this.line, column: problem.column, reason: problem.reason})
  }

  private recordObjectRow(chunk: Uint8Array, i: number): void {
    const stats = this.stats
    stats.objectRows++
    for (let f = 0; f < this.found.length; f++) {
      if (this.found[f] === 1) continue
      const missing = stats.missing[f]
      missing.rows++
      if (missing.lines.length < this.maxMissingLines) missing.lines.push(this.line)
    }
    if (this.capturing) {
      const last = chunk.subarray(this.captureStart, i)
      if (this.captureBytes + last.length <= this.maxSampleBytes) {
        const bytes = concatParts([...this.captureParts, copyBytes(last)], this.captureBytes + last.length)
        this.sampler!.take(this.line, stats.rows, bytes)
      }
    }
  }

  private resetLine(nextLineStart: number): void {
    this.line++
    this.lineStart = nextLineStart
    this.mode = LINE_START
    this.depth = 0
    this.lineError = null
    this.pendingNode = -1
    this.keyTracking = false
    this.capturing = false
    this.captureParts = []
  }

  /** Copy the parts of a key or a sampled row that continue into the next chunk. */
  private carryPartials(chunk: Uint8Array): void {
    if (this.mode === NUMBER) {
      const part = chunk.subarray(Math.max(0, this.numberStart - this.offset))
      this.numberBytes += part.length
      if (this.numberBytes <= MAX_NUMBER_BYTES) this.numberParts.push(copyBytes(part))
    }
    if (this.keyTracking) {
      const part = copyBytes(chunk.subarray(this.keyStart))
      this.keyBytes += part.length
      if (this.keyBytes > MAX_KEY_BYTES) this.keyTracking = false
      else this.keyParts.push(part)
      this.keyStart = 0
    }
    if (this.capturing) {
      const part = chunk.subarray(this.captureStart)
      this.captureBytes += part.length
      if (this.captureBytes > this.maxSampleBytes) this.capturing = false
      else this.captureParts.push(copyBytes(part))
      this.captureStart = 0
    }
  }

  /** Skip a UTF-8 byte order mark at the very start of the file (it is reported, not parsed). */
  private skipBom(chunk: Uint8Array): number {
    let i = 0
    while (this.offset + i < BOM.length && i < chunk.length) {
      if (chunk[i] !== BOM[this.offset + i]) {
        if (this.bomMatched > 0) return this.fail(chunk, i, `a broken byte order mark (${describeByte(chunk[i])})`)
        return i
      }
      this.bomMatched++
      i++
    }
    if (this.bomMatched === BOM.length) {
      this.stats.bom = true
      this.lineStart = BOM.length
    }
    return i
  }
}

const decoder = new TextDecoder()

/** Decode the raw bytes of a key; undefined when its escapes are invalid (the scanner reports them). */
function decodeKey(bytes: Uint8Array): string | undefined {
  const text = decoder.decode(bytes)
  if (!text.includes('\\')) return text
  try {
    return JSON.parse(`"${text}"`) as string
  } catch {
    return undefined
  }
}

/**
 * Stream a file through a JsonlScanner. Two buffers alternate: the next read is in flight
 * (on libuv's thread pool) while the current chunk is scanned, so reading costs almost nothing.
 */
export async function scanJsonlFile(
  file: string,
  options: ScanOptions & {
    chunkBytes?: number
    signal?: AbortSignal
    end?: number
    /** The compiled string skipper (default: the build's; null: the JavaScript path only). */
    wasm?: WebAssembly.Module | null
  },
): Promise<JsonlStats> {
  const size = options.chunkBytes ?? 1024 * 1024
  const wasm = options.wasm === undefined ? builtStringSkipper() : (options.wasm ?? undefined)
  const skipper = wasm ? newStringSkipper(wasm, 2, size) : undefined
  const scanner = new JsonlScanner({...options, skipper})
  const handle = await open(file, 'r')
  let pending: Promise<number> | undefined
  try {
    const buffers = skipper?.buffers ?? [Buffer.allocUnsafeSlow(size), Buffer.allocUnsafeSlow(size)]
    let position = options.startOffset ?? 0
    const end = options.end ?? Number.MAX_SAFE_INTEGER
    const readInto = (buffer: Buffer) => {
      const length = Math.min(size, end - position)
      if (length <= 0) return Promise.resolve(0)
      return handle.read(buffer, 0, length, position).then(({bytesRead}) => {
        position += bytesRead
        return bytesRead
      })
    }
    let current = 0
    pending = readInto(buffers[current])
    for (;;) {
      const bytesRead = await pending
      if (bytesRead === 0) break
      options.signal?.throwIfAborted()
      const chunk = buffers[current]
      current ^= 1
      pending = readInto(buffers[current])
      scanner.push(chunk.subarray(0, bytesRead))
    }
  } finally {
    await pending?.catch(() => 0) // never close the file under a read still in flight
    await handle.close()
  }
  return scanner.end()
}
