import {isLosslessNumber, parse, stringify} from 'lossless-json'

/**
 * Lossless JSON: numbers are kept as their source text (LosslessNumber), so
 * integers above 2^53 and decimal forms survive a read/write round trip.
 */
export function parseLossless(text: string): unknown {
  return parse(text)
}

export function stringifyLossless(value: unknown): string {
  const out = stringify(value, (_key, v) => (typeof v === 'bigint' ? v.toString() : v))
  return out === undefined ? 'null' : out
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
