import {isLosslessNumber, parse} from 'lossless-json'

/**
 * Lossless JSON: numbers are kept as their source text (LosslessNumber), so
 * integers above 2^53 and decimal forms survive a read/write round trip.
 * A repeated key keeps its last value, as Python's json module (and
 * JSON.parse) do.
 */
const PARSE_OPTIONS = {onDuplicateKey: ({newValue}: {newValue: unknown}) => newValue}

export function parseLossless(text: string): unknown {
  return parse(text, null, PARSE_OPTIONS as any)
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
 * Parse JSON text with the same result as parseLossless: native JSON.parse
 * when no number in the text could change its spelling (every number is then
 * a plain integer of at most 15 digits, which a JS number keeps exactly), the
 * lossless parser otherwise. Both accept the same grammar and both keep the
 * last value of a repeated key.
 */
export function parseFast(text: string): unknown {
  return RISKY_NUMBER.test(text) ? parseLossless(text) : JSON.parse(text)
}

/**
 * Compact JSON text, numbers exactly as read. Same output as lossless-json's
 * stringify (bigints become JSON strings), without its per-value replacer and
 * number-stringifier hooks.
 */
export function stringifyLossless(value: unknown): string {
  return write(value) ?? 'null'
}

function write(value: unknown): string | undefined {
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
          out += write(value[i]) ?? 'null'
        }
        return `${out}]`
      }
      if (isLosslessNumber(value)) return value.value
      if (value instanceof Date || value instanceof Boolean || value instanceof Number || value instanceof String) return JSON.stringify(value)
      const record = value as Record<string, unknown>
      if (typeof record.toJSON === 'function') return write(record.toJSON())
      let out = '{'
      let first = true
      for (const key of Object.keys(record)) {
        const item = write(record[key])
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

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !isLosslessNumber(value)
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

/** Shorten text for messages, keeping the beginning. */
export function clip(text: string, max = 2000): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`
}
