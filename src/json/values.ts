/**
 * Lossless JSON values for Gym data: numbers are kept as their source text (LosslessNumber), so
 * 60-bit task indices, `1.0` versus `1` and every other spelling survive a read/join/write round
 * trip; and the number rules (integers, finiteness) the readers apply to them.
 */
import {isLosslessNumber, LosslessNumber, parse} from 'lossless-json'

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

/**
 * Number spellings that JSON.parse would not give back unchanged: 16 or more
 * digits (may exceed 2^53), a fraction or an exponent (`1.0`, `1e5`), `-0`.
 * The test runs over the whole text, strings included, so it can only err on
 * the safe side (a date or version string may send a row to the lossless
 * parser; nothing sends a risky number to JSON.parse).
 */
const RISKY_NUMBER = /\d{16}|\d[.eE]|-0(?!\d)/u

/**
 * Parse JSON text with the same result as parseJson: native JSON.parse
 * when no number in the text could change its spelling (every number is then
 * a plain integer of at most 15 digits, which a JS number keeps exactly), the
 * lossless parser otherwise. Both accept the same grammar and both keep the
 * last value of a repeated key.
 */
export function parseFast(text: string): unknown {
  return RISKY_NUMBER.test(text) ? parseJson(text) : JSON.parse(text)
}

export function isJsonNumber(value: unknown): boolean {
  return typeof value === 'number' || isLosslessNumber(value)
}

/** A finite JS number for a parsed JSON number, or undefined. */
export function numberValue(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined
  if (isLosslessNumber(value)) {
    const n = Number(value.value)
    return Number.isFinite(n) ? n : undefined
  }
  return undefined
}
