/**
 * The one table of JSON's characters, shared by every scanner: the byte scanners (UTF-8 lines as
 * Uint8Array: byte-scan.ts, the data rung's streaming scanner) and the text scanners (charCodeAt:
 * text-scan.ts, input-policy.ts). Every character JSON gives a meaning to is below 0x80, where a
 * byte and a UTF-16 code unit are the same number; the tables answer 0 for anything else.
 */
export const TAB = 0x09
export const NEWLINE = 0x0a
export const CARRIAGE_RETURN = 0x0d
export const SPACE = 0x20
export const QUOTE = 0x22
export const PLUS = 0x2b
export const COMMA = 0x2c
export const MINUS = 0x2d
export const DOT = 0x2e
export const SLASH = 0x2f
export const DIGIT_ZERO = 0x30
export const COLON = 0x3a
export const OPEN_BRACKET = 0x5b
export const BACKSLASH = 0x5c
export const CLOSE_BRACKET = 0x5d
export const OPEN_BRACE = 0x7b
export const CLOSE_BRACE = 0x7d

function table(codes: Iterable<number>): Uint8Array {
  const t = new Uint8Array(256)
  for (const c of codes) t[c] = 1
  return t
}

const codesOf = (text: string): number[] => [...text].map((c) => c.charCodeAt(0))

/** Whitespace inside one JSONL line (a newline ends the line, so it is not here). */
export const IS_LINE_SPACE = table([SPACE, TAB, CARRIAGE_RETURN])
/** JSON's four whitespace characters. */
export const IS_SPACE = table([SPACE, TAB, CARRIAGE_RETURN, NEWLINE])
export const IS_DIGIT = table(codesOf('0123456789'))
export const IS_HEX = table(codesOf('0123456789abcdefABCDEF'))
/** The characters that may follow a backslash in a string. */
export const ESCAPABLE = table(codesOf('"\\/bfnrtu'))
/** Characters that end a run of plain string content: a quote, a backslash, a control character. */
export const STRING_STOP = table([...Array.from({length: 0x20}, (_, b) => b), QUOTE, BACKSLASH])

/** Look a UTF-16 code unit up in a table (the text scanners' side: code units run past 255). */
export function isIn(codes: Uint8Array, code: number): boolean {
  return code < 256 && codes[code] === 1
}
