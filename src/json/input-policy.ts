/**
 * What every JSONL reader of gymrecipe accepts (docs/input-policy.md). The same rules hold
 * for `tasks`, `rollouts ingest`, `call` and the data rung, so a file one command accepts is not
 * refused by another, and nothing is silently rewritten:
 *
 * - UTF-8 only; a line that is not valid UTF-8 is refused (never replaced by U+FFFD).
 * - A byte order mark is refused: Python's json.loads (the converter, Gym) rejects it.
 * - A key given twice keeps its last value, as Python's json.loads does.
 * - A float that overflows a double (`1e400`, which Python reads as inf) is refused: JSON cannot
 *   carry it back out. `-0` and integers of any size are kept exactly as written.
 * - Nesting deeper than MAX_NESTING levels is refused (Python's json.loads gives up near 1000).
 * - A line longer than maxLineBytes() is refused before it is held in memory.
 */

import {BACKSLASH, CLOSE_BRACE, CLOSE_BRACKET, OPEN_BRACE, OPEN_BRACKET, QUOTE} from './chars.js'

export const MAX_NESTING = 512

export const DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024

/** Raise the line limit for files whose rows really are that large. */
export const MAX_LINE_BYTES_VARIABLE = 'GYMRECIPE_MAX_LINE_BYTES'

export function maxLineBytes(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[MAX_LINE_BYTES_VARIABLE]
  if (raw === undefined || raw.trim() === '') return DEFAULT_MAX_LINE_BYTES
  const value = Number(raw)
  return Number.isSafeInteger(value) && value > 0 ? value : DEFAULT_MAX_LINE_BYTES
}

export function formatBytes(bytes: number): string {
  if (bytes >= 1 << 20 && bytes % (1 << 20) === 0) return `${bytes / (1 << 20)} MiB`
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`
  return `${bytes} bytes`
}

export const POLICY_MESSAGES = {
  bom: 'the file starts with a UTF-8 byte order mark, which Python\'s json.loads (the converter, Gym) rejects',
  bomHint: "remove it, e.g. sed -i '1s/^\\xEF\\xBB\\xBF//' FILE",
  utf8: 'line is not valid UTF-8',
  nesting: `nested deeper than ${MAX_NESTING} levels (Python's json.loads fails near 1000)`,
  nonFinite: 'must be a finite number: this float overflows a double (Python reads it as inf, which JSON cannot carry)',
  lineTooLong: (limit: number) => `line is longer than the ${formatBytes(limit)} limit`,
  lineTooLongHint: `split the row, or raise the limit with ${MAX_LINE_BYTES_VARIABLE}=<bytes>`,
} as const


/**
 * Whether JSON text nests deeper than limit. Runs over the text once, skipping strings; text too
 * short to hold that many brackets is answered without looking.
 */
export function nestsDeeperThan(text: string, limit: number = MAX_NESTING): boolean {
  if (text.length <= limit) return false
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === BACKSLASH) i++
      else if (c === QUOTE) inString = false
    } else if (c === QUOTE) {
      inString = true
    } else if (c === OPEN_BRACKET || c === OPEN_BRACE) {
      if (++depth > limit) return true
    } else if (c === CLOSE_BRACKET || c === CLOSE_BRACE) {
      depth--
    }
  }
  return false
}

/** Only a float with a three-digit exponent or 309+ digits can overflow; this finds candidates cheaply. */
const OVERFLOW_CANDIDATE = /[eE]\+?\d{3}|\d{309}/

/** Whether some number in JSON text is a float that overflows a double (strings may give false candidates; the check is exact). */
export function mayHoldNonFinite(text: string): boolean {
  return OVERFLOW_CANDIDATE.test(text)
}
