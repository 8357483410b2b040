/**
 * Raw members: an object's members as their exact source text. The streaming commands validate
 * and split a line in one pass here instead of building objects with JSON.parse, then copy member
 * text to the output unchanged.
 */
import {isLosslessNumber} from 'lossless-json'

import {BACKSLASH, CLOSE_BRACE, CLOSE_BRACKET, COLON, COMMA, DOT, ESCAPABLE, IS_DIGIT, IS_HEX, IS_SPACE, isIn, MINUS, OPEN_BRACE, OPEN_BRACKET, PLUS, QUOTE} from './chars.js'
import {MAX_NESTING, POLICY_MESSAGES} from './input-policy.js'
import type {JsonValue} from './values.js'


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

export class JsonSyntaxError extends Error {}
/** Valid JSON the input policy refuses. */
export class JsonPolicyViolation extends JsonSyntaxError {}

function syntaxError(what: string, at: number): never {
  throw new JsonSyntaxError(`${what} at column ${at + 1}`)
}

function skipWhitespace(text: string, i: number): number {
  while (isIn(IS_SPACE, text.charCodeAt(i))) i++
  return i
}

function isDigit(c: number): boolean {
  return isIn(IS_DIGIT, c)
}

function isHexDigit(c: number): boolean {
  return isIn(IS_HEX, c)
}

/** Escapes complete in two characters: every escapable character but `u`. */
function isSimpleEscape(c: number): boolean {
  return c !== 0x75 && isIn(ESCAPABLE, c)
}

/** Validate the string token opening at i; index just past its closing quote. */
function scanString(text: string, i: number): number {
  let j = i + 1
  for (;;) {
    const c = text.charCodeAt(j)
    if (c === QUOTE) return j + 1
    if (c === BACKSLASH) {
      const escaped = text.charCodeAt(j + 1)
      if (isSimpleEscape(escaped)) j += 2
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

/** What one scan found besides the members: a float literal that overflows a double. */
interface Findings {
  nonFinite: boolean
}

/** Validate the number opening at i: -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)? */
function scanNumber(text: string, i: number, found: Findings): number {
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
    const digitsStart = sign === PLUS || sign === MINUS ? i + 2 : i + 1
    i = scanDigits(text, digitsStart)
    exponentDigits = i - digitsStart
    float = true
  }
  // Only a float with a 3-digit exponent or 309+ digits can overflow a double.
  if (float && (exponentDigits >= 3 || wholeDigits >= 309) && !Number.isFinite(Number(text.slice(start, i)))) found.nonFinite = true
  return i
}

const LITERALS = ['true', 'false', 'null']

function scanScalar(text: string, i: number, found: Findings): number {
  const c = text.charCodeAt(i)
  if (c === QUOTE) return scanString(text, i)
  if (c === MINUS || isDigit(c)) return scanNumber(text, i, found)
  for (const literal of LITERALS) if (text.startsWith(literal, i)) return i + literal.length
  return syntaxError('JSON value expected', i)
}

/** Index just past the closing quote of the key scanKey validated last. */
let keyEnd = 0

/** Validate `"key" :` at i; index of the value that follows (the key's end is in keyEnd). */
function scanKey(text: string, i: number): number {
  if (text.charCodeAt(i) !== QUOTE) syntaxError('quoted object key expected', i)
  keyEnd = scanString(text, i)
  const colon = skipWhitespace(text, keyEnd)
  if (text.charCodeAt(colon) !== COLON) syntaxError("':' expected", colon)
  return skipWhitespace(text, colon + 1)
}

/**
 * Validate the value at i (nesting handled with an explicit stack); index just past it.
 * `depth`: containers already open around it (for the nesting limit; a member of the line's
 * object has 1).
 */
function scanValue(text: string, i: number, found: Findings, depth = 0): number {
  const closers: number[] = []
  for (;;) {
    const c = text.charCodeAt(i)
    if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (closers.length + depth >= MAX_NESTING) throw new JsonPolicyViolation(POLICY_MESSAGES.nesting)
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
      i = scanScalar(text, i, found)
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
  /** The members of the object value of the key asked for (scanObjectMembers' `nested`), when it is one. */
  nested?: Map<string, string>
}

/**
 * Validate a JSON text that must be an object, in one pass, and return its
 * members as key → exact value text in source order (a repeated key keeps its
 * first position and last value, like a Python dict). With `nested`, the
 * members of that key's value are split in the same pass when it is an object
 * (what rawMembers would return for it, without reading it twice). Returns
 * undefined when the text is valid JSON but not an object; throws on invalid
 * JSON.
 */
export function scanObjectMembers(text: string, nested?: string): ScannedObject | undefined {
  const found: Findings = {nonFinite: false}
  const start = skipWhitespace(text, 0)
  if (text.charCodeAt(start) !== OPEN_BRACE) {
    const end = skipWhitespace(text, scanValue(text, start, found))
    if (end !== text.length) syntaxError('end of input expected', end)
    return undefined
  }
  const split = scanMembers(text, start, found, 1, nested)
  const end = skipWhitespace(text, split.end)
  if (end !== text.length) syntaxError('end of input expected', end)
  return {members: split.members, hasNonFinite: found.nonFinite, nested: split.nested}
}

interface Split {
  members: Map<string, string>
  /** Index just past the object's closing brace. */
  end: number
  /** The members of key `nested`'s value, when it is an object. */
  nested?: Map<string, string>
}

/**
 * Validate the object opening at i and split it into its members; `depth` is the nesting of its
 * member values, and the value of key `nested` is split the same way when it is an object.
 */
function scanMembers(text: string, i: number, found: Findings, depth: number, nested?: string): Split {
  const members = new Map<string, string>()
  let nestedMembers: Map<string, string> | undefined
  i = skipWhitespace(text, i + 1)
  if (text.charCodeAt(i) !== CLOSE_BRACE) {
    for (;;) {
      const valueStart = scanKey(text, i)
      const key = keyOf(text.slice(i, keyEnd))
      let valueEnd: number
      if (key === nested && text.charCodeAt(valueStart) === OPEN_BRACE) {
        const inner = scanMembers(text, valueStart, found, depth + 1)
        valueEnd = inner.end
        nestedMembers = inner.members
      } else {
        valueEnd = scanValue(text, valueStart, found, depth)
        // a repeated key keeps its last value
        if (key === nested) nestedMembers = undefined
      }
      members.set(key, text.slice(valueStart, valueEnd))
      i = skipWhitespace(text, valueEnd)
      if (text.charCodeAt(i) !== COMMA) break
      i = skipWhitespace(text, i + 1)
    }
    if (text.charCodeAt(i) !== CLOSE_BRACE) syntaxError("',' or '}' expected", i)
  }
  return {members, end: i + 1, nested: nestedMembers}
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
