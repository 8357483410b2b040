import {isLosslessNumber} from 'lossless-json'

import {parseJson} from '../json.js'

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

/** Shorten text for messages, keeping the beginning. */
export function clip(text: string, max = 2000): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`
}
