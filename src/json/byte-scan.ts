/**
 * JSON validated as UTF-8 bytes, for the hot paths that would otherwise decode every line only to
 * scan it: no string is built until a member's text is asked for. The byte scanner only accepts or
 * rejects; a rejected line is scanned again as text (./text-scan.ts), which words the error, so
 * both paths give one verdict and one message.
 */
import {BACKSLASH, CLOSE_BRACE, CLOSE_BRACKET, COLON, COMMA, DOT, ESCAPABLE, IS_HEX, MINUS, OPEN_BRACE, OPEN_BRACKET, QUOTE, STRING_STOP} from './chars.js'
import {MAX_NESTING} from './input-policy.js'

/**
 * Index of the first byte at or after i that ends plain string content (a quote, a backslash
 * or a byte below 0x20), or chunk.length. Four bytes are tested at once (an unaligned 32-bit
 * read): a word holds such a byte exactly when one of the has-less-than / has-zero bit tests fires.
 */
function skipPlainString(chunk: Uint8Array, view: DataView, i: number, base: number): number {
  const end = chunk.length
  const wordEnd = end - 3
  while (i < wordEnd) {
    const x = view.getInt32(base + i, true)
    const quote = x ^ 0x22222222
    const slash = x ^ 0x5c5c5c5c
    if ((((x - 0x20202020) & ~x) | ((quote - 0x01010101) & ~quote) | ((slash - 0x01010101) & ~slash)) & 0x80808080) break
    i += 4
  }
  while (i < end && STRING_STOP[chunk[i]] === 0) i++
  return i
}

/**
 * Skip string content including complete escapes; stops at a quote, a byte a string may not
 * hold, an escape that is invalid or cut by the chunk end, or chunk.length. `view` covers the
 * chunk's memory from `base` bytes before its first byte.
 */
export function skipStringBody(chunk: Uint8Array, view: DataView, i: number, base = 0): number {
  const end = chunk.length
  for (;;) {
    i = skipPlainString(chunk, view, i, base)
    if (i >= end || chunk[i] !== BACKSLASH || i + 1 >= end) return i
    const escaped = chunk[i + 1]
    if (escaped === 0x75) {
      if (i + 5 < end && IS_HEX[chunk[i + 2]] & IS_HEX[chunk[i + 3]] & IS_HEX[chunk[i + 4]] & IS_HEX[chunk[i + 5]]) i += 6
      else return i
    } else if (ESCAPABLE[escaped] === 1) {
      i += 2
    } else {
      return i
    }
  }
}

/** The scan in progress: the line, a view for word reads, and whether a float overflowed. */
interface Scan {
  bytes: Buffer
  /** A view of the memory the bytes are in, which starts `base` bytes before them. */
  view: DataView
  base: number
  nonFinite: boolean
  /** Index just past the closing quote of the key scanKey read last. */
  keyEnd: number
  /** The object to split the nested key's members into; a new one when undefined. */
  nestedMembers: ByteMembers | undefined
}

/** Returned instead of an index when the bytes are not valid JSON (or break the nesting limit). */
const REJECTED = -1

// Reads past the end give undefined, which must never index a table (a slow, generic lookup).
function skipSpace(bytes: Buffer, i: number): number {
  let c = bytes[i]
  while (c <= 0x20 && (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d)) c = bytes[++i]
  return i
}

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= 0x30 && c <= 0x39
}

/** The string token opening at i; index just past its closing quote. */
function scanString(scan: Scan, i: number): number {
  const j = skipStringBody(scan.bytes, scan.view, i + 1, scan.base)
  return scan.bytes[j] === QUOTE ? j + 1 : REJECTED
}

function scanDigits(bytes: Buffer, i: number): number {
  if (!isDigit(bytes[i])) return REJECTED
  while (isDigit(bytes[i])) i++
  return i
}

/** The number opening at i: -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)? */
function scanNumber(scan: Scan, i: number): number {
  const {bytes} = scan
  const start = i
  if (bytes[i] === MINUS) i++
  i = bytes[i] === 0x30 ? i + 1 : scanDigits(bytes, i)
  if (i === REJECTED) return REJECTED
  const wholeDigits = i - start
  let float = false
  if (bytes[i] === DOT) {
    i = scanDigits(bytes, i + 1)
    if (i === REJECTED) return REJECTED
    float = true
  }
  const e = bytes[i]
  let exponentDigits = 0
  if (e === 0x65 || e === 0x45) {
    const sign = bytes[i + 1]
    const digitsStart = sign === 0x2b || sign === MINUS ? i + 2 : i + 1
    i = scanDigits(bytes, digitsStart)
    if (i === REJECTED) return REJECTED
    exponentDigits = i - digitsStart
    float = true
  }
  // Only a float with a 3-digit exponent or 309+ digits can overflow a double.
  if (float && (exponentDigits >= 3 || wholeDigits >= 309) && !Number.isFinite(Number(bytes.toString('latin1', start, i)))) scan.nonFinite = true
  return i
}

function isLiteral(bytes: Buffer, i: number, literal: string): boolean {
  for (let k = 0; k < literal.length; k++) if (bytes[i + k] !== literal.charCodeAt(k)) return false
  return true
}

function scanScalar(scan: Scan, i: number): number {
  const c = scan.bytes[i]
  if (c === QUOTE) return scanString(scan, i)
  if (c === MINUS || isDigit(c)) return scanNumber(scan, i)
  if (c === 0x74) return isLiteral(scan.bytes, i, 'true') ? i + 4 : REJECTED
  if (c === 0x66) return isLiteral(scan.bytes, i, 'false') ? i + 5 : REJECTED
  if (c === 0x6e) return isLiteral(scan.bytes, i, 'null') ? i + 4 : REJECTED
  return REJECTED
}

/** `"key" :` at i; index of the value that follows. */
function scanKey(scan: Scan, i: number): number {
  if (scan.bytes[i] !== QUOTE) return REJECTED
  const end = scanString(scan, i)
  if (end === REJECTED) return REJECTED
  scan.keyEnd = end
  const colon = skipSpace(scan.bytes, end)
  return scan.bytes[colon] === COLON ? skipSpace(scan.bytes, colon + 1) : REJECTED
}

/**
 * The closing bytes of the containers scanValue has open. scanValue never runs inside another
 * scanValue, so one stack serves every scan (an array per value was most of a line's garbage).
 */
const closers = new Uint8Array(MAX_NESTING)

/** The value at i (`depth`: containers open around it); index just past it. */
function scanValue(scan: Scan, i: number, depth: number): number {
  const {bytes} = scan
  let c = bytes[i]
  if (c !== OPEN_BRACE && c !== OPEN_BRACKET) return scanScalar(scan, i)
  let open = 0
  for (;;) {
    c = bytes[i]
    if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (open + depth >= MAX_NESTING) return REJECTED
      const closer = c === OPEN_BRACE ? CLOSE_BRACE : CLOSE_BRACKET
      i = skipSpace(bytes, i + 1)
      if (bytes[i] === closer) {
        i++
      } else {
        closers[open++] = closer
        if (closer === CLOSE_BRACE) i = scanKey(scan, i)
        if (i === REJECTED) return REJECTED
        continue
      }
    } else {
      i = scanScalar(scan, i)
      if (i === REJECTED) return REJECTED
    }
    // After a complete value: close finished containers until one continues with a comma.
    for (;;) {
      if (open === 0) return i
      i = skipSpace(bytes, i)
      const next = bytes[i]
      const closer = closers[open - 1]
      if (next === closer) {
        open--
        i++
      } else if (next === COMMA) {
        i = skipSpace(bytes, i + 1)
        if (closer === CLOSE_BRACE) i = scanKey(scan, i)
        if (i === REJECTED) return REJECTED
        break
      } else {
        return REJECTED
      }
    }
  }
}

/**
 * An object's members as byte ranges of its line, decoded only when asked for: key → exact value
 * text, like the Map of scanObjectMembers (a repeated key has its last value). Keys are compared
 * as bytes, so none is decoded unless it holds an escape. Valid while the line's bytes are.
 */
export class ByteMembers {
  /**
   * keyStart, keyEnd (inside the quotes), valueStart, valueEnd of each member, in source order,
   * up to spanLength (past it: what an earlier object left, when the spans are reused).
   */
  readonly spans: number[] = []
  /** Where the spans end: four times the number of members. */
  spanLength = 0
  /** Decoded keys of the members whose key holds an escape, by their index in spans. */
  private escapedKeys?: Map<number, string>

  constructor(public bytes: Buffer) {}

  /** Start over, empty, for the members of another object. */
  reset(bytes: Buffer): void {
    this.bytes = bytes
    this.spanLength = 0
    this.escapedKeys = undefined
  }

  add(keyStart: number, keyEnd: number, valueStart: number, valueEnd: number): void {
    for (let k = keyStart; k < keyEnd; k++) {
      if (this.bytes[k] === BACKSLASH) {
        this.escapedKeys ??= new Map()
        this.escapedKeys.set(this.spanLength, JSON.parse(this.bytes.toString('utf8', keyStart - 1, keyEnd + 1)) as string)
        break
      }
    }
    const {spans} = this
    const at = this.spanLength
    // a reused array is written over, never shortened (V8 would give its memory back)
    if (at === spans.length) {
      spans.push(keyStart, keyEnd, valueStart, valueEnd)
    } else {
      spans[at] = keyStart
      spans[at + 1] = keyEnd
      spans[at + 2] = valueStart
      spans[at + 3] = valueEnd
    }
    this.spanLength = at + 4
  }

  /** Where the key of the member at m (an index into spans) starts and ends in bytes, inside its quotes. */
  keyStart(m: number): number {
    return this.spans[m]
  }

  keyEnd(m: number): number {
    return this.spans[m + 1]
  }

  /** Where the value of the member at m starts and ends in bytes. */
  valueStart(m: number): number {
    return this.spans[m + 2]
  }

  valueEnd(m: number): number {
    return this.spans[m + 3]
  }

  /** The exact text of the value of the member at m. */
  valueAt(m: number): string {
    return this.bytes.toString('utf8', this.spans[m + 2], this.spans[m + 3])
  }

  /** Whether the value of the member at m is null, an object or a string (read off its first byte: it is valid JSON). */
  isNullAt(m: number): boolean {
    return this.bytes[this.spans[m + 2]] === 0x6e
  }

  isObjectAt(m: number): boolean {
    return this.bytes[this.spans[m + 2]] === OPEN_BRACE
  }

  isStringAt(m: number): boolean {
    return this.bytes[this.spans[m + 2]] === QUOTE
  }

  /** The value's exact text, or undefined when the key is absent. */
  get(key: string): string | undefined {
    const m = this.indexOf(key)
    return m === -1 ? undefined : this.valueAt(m)
  }

  /** Where the key's (last) member starts in spans, or -1 when the key is absent. */
  indexOf(key: string): number {
    let ascii = true
    for (let k = 0; k < key.length; k++) if (key.charCodeAt(k) > 0x7f) ascii = false
    for (let m = this.spanLength - 4; m >= 0; m -= 4) {
      if (this.isKey(m, key, ascii)) return m
    }
    return -1
  }

  /**
   * True when every key is written without escapes and none repeats: then each member's key
   * bytes are its key as JSON.stringify writes it, and spans hold exactly the object's members.
   */
  hasPlainDistinctKeys(): boolean {
    if (this.escapedKeys) return false
    const {bytes, spans, spanLength} = this
    for (let m = 4; m < spanLength; m += 4) {
      const length = spans[m + 1] - spans[m]
      for (let other = 0; other < m; other += 4) {
        if (spans[other + 1] - spans[other] === length && bytes.compare(bytes, spans[m], spans[m + 1], spans[other], spans[other + 1]) === 0) return false
      }
    }
    return true
  }

  /** The decoded key of the member at m when its key holds an escape. */
  escapedKeyAt(m: number): string | undefined {
    return this.escapedKeys?.get(m)
  }

  private isKey(m: number, key: string, ascii: boolean): boolean {
    const escaped = this.escapedKeys?.get(m)
    if (escaped !== undefined) return escaped === key
    const start = this.spans[m]
    const end = this.spans[m + 1]
    if (!ascii) return this.bytes.toString('utf8', start, end) === key
    return isAsciiKey(this.bytes, start, end, key)
  }
}

/**
 * Finds a fixed set of ASCII keys among an object's members in one pass, instead of one search
 * per key: slots[k] is where the last member with keys[k] starts in ByteMembers.spans, or -1.
 */
export class KeySlots {
  /** Indices into keys, by key length. */
  private readonly byLength: number[][] = []

  constructor(readonly keys: readonly string[]) {
    for (const [k, key] of keys.entries()) {
      if (!/^[\x20-\x7e]*$/.test(key)) throw new Error(`KeySlots takes printable ASCII keys, not ${JSON.stringify(key)}`)
      ;(this.byLength[key.length] ??= []).push(k)
    }
  }

  /** Fill slots (length: keys.length) for the members. */
  locate(members: ByteMembers, slots: Int32Array): void {
    slots.fill(-1)
    const {bytes, spans, spanLength} = members
    for (let m = 0; m < spanLength; m += 4) {
      const escaped = members.escapedKeyAt(m)
      if (escaped !== undefined) {
        const k = this.keys.indexOf(escaped)
        if (k !== -1) slots[k] = m
        continue
      }
      const candidates = this.byLength[spans[m + 1] - spans[m]]
      if (candidates === undefined) continue
      for (let c = 0; c < candidates.length; c++) {
        if (isAsciiKey(bytes, spans[m], spans[m + 1], this.keys[candidates[c]])) {
          slots[candidates[c]] = m
          break
        }
      }
    }
  }
}

/** Whether bytes[start, end) spell the ASCII key. */
function isAsciiKey(bytes: Buffer, start: number, end: number, key: string): boolean {
  if (end - start !== key.length) return false
  for (let k = 0; k < key.length; k++) if (bytes[start + k] !== key.charCodeAt(k)) return false
  return true
}

// The lines of one read share its memory, and so one view.
let lastMemory: ArrayBufferLike | undefined
let lastView: DataView | undefined

function viewOf(memory: ArrayBufferLike): DataView {
  if (memory !== lastMemory || lastView === undefined) {
    lastMemory = memory
    lastView = new DataView(memory)
  }
  return lastView
}

// Scans run one at a time, to the end, so they share one state object.
const NO_BYTES = Buffer.alloc(0)
const currentScan: Scan = {bytes: NO_BYTES, view: viewOf(NO_BYTES.buffer), base: 0, nonFinite: false, keyEnd: 0, nestedMembers: undefined}

function startScan(bytes: Buffer, nestedMembers: ByteMembers | undefined): Scan {
  currentScan.bytes = bytes
  currentScan.nestedMembers = nestedMembers
  currentScan.view = viewOf(bytes.buffer)
  currentScan.base = bytes.byteOffset
  currentScan.nonFinite = false
  currentScan.keyEnd = 0
  return currentScan
}

/** What scanObjectBytes found: the members, and those of the `nested` key's value when it is an object. */
export interface ScannedBytes {
  members: ByteMembers
  hasNonFinite: boolean
  nested?: ByteMembers
}

/**
 * Validate the object opening at i into `members` (`depth`: the nesting of its member values);
 * index just past its closing brace. With `nested` (an ASCII key), that key's value is split into
 * `found.nested` as well when it is an object (left undefined when the last such member is not).
 */
function scanMembers(scan: Scan, i: number, depth: number, members: ByteMembers, found: ScannedBytes, nested?: string): number {
  const {bytes} = scan
  i = skipSpace(bytes, i + 1)
  if (bytes[i] === CLOSE_BRACE) return i + 1
  for (;;) {
    const keyStart = i
    const valueStart = scanKey(scan, i)
    if (valueStart === REJECTED) return REJECTED
    const keyEnd = scan.keyEnd
    let valueEnd: number
    if (nested !== undefined && isAsciiKey(bytes, keyStart + 1, keyEnd - 1, nested)) {
      if (bytes[valueStart] === OPEN_BRACE) {
        const inner = scan.nestedMembers ?? new ByteMembers(bytes)
        inner.reset(bytes)
        valueEnd = scanMembers(scan, valueStart, depth + 1, inner, found)
        found.nested = inner
      } else {
        valueEnd = scanValue(scan, valueStart, depth)
        found.nested = undefined
      }
    } else {
      valueEnd = scanValue(scan, valueStart, depth)
    }
    if (valueEnd === REJECTED) return REJECTED
    members.add(keyStart + 1, keyEnd - 1, valueStart, valueEnd)
    i = skipSpace(bytes, valueEnd)
    if (bytes[i] !== COMMA) break
    i = skipSpace(bytes, i + 1)
  }
  return bytes[i] === CLOSE_BRACE ? i + 1 : REJECTED
}

/**
 * Validate a line's UTF-8 bytes (already known to be valid UTF-8) as a JSON object under the
 * input policy's nesting limit and split its members (and, with `nested`, those of that key's
 * object value, like scanObjectMembers). Undefined when the line is anything else: invalid JSON,
 * too deep, or not an object (scan its text to learn which).
 */
export function scanObjectBytes(bytes: Buffer, nested?: string): ScannedBytes | undefined {
  return scanInto({members: new ByteMembers(bytes), hasNonFinite: false}, bytes, nested)
}

/**
 * scanObjectBytes for a loop that is done with each line's members before it scans the next:
 * every scan fills the same objects, so a line costs no garbage. What scan() returns is valid
 * until the next call.
 */
export class ReusedObjectScan {
  private readonly found: ScannedBytes = {members: new ByteMembers(NO_BYTES), hasNonFinite: false}
  private readonly nestedMembers = new ByteMembers(NO_BYTES)

  scan(bytes: Buffer, nested?: string): ScannedBytes | undefined {
    this.found.members.reset(bytes)
    this.found.nested = undefined
    return scanInto(this.found, bytes, nested, this.nestedMembers)
  }
}

function scanInto(found: ScannedBytes, bytes: Buffer, nested?: string, nestedMembers?: ByteMembers): ScannedBytes | undefined {
  const start = skipSpace(bytes, 0)
  if (bytes[start] !== OPEN_BRACE) return undefined
  const scan = startScan(bytes, nestedMembers)
  const end = scanMembers(scan, start, 1, found.members, found, nested)
  scan.bytes = NO_BYTES
  if (end === REJECTED || skipSpace(bytes, end) !== bytes.length) return undefined
  found.hasNonFinite = scan.nonFinite
  return found
}
