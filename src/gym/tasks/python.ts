import {isFloatLiteral, isLosslessNumber, type JsonValue} from '../../json/index.js'

/**
 * The few Python behaviours the Data Designer Gym plugin's results depend on.
 * Matching them exactly is what keeps scenario IDs byte-compatible.
 */

/** Characters for which Python's str.isspace() is true (not the same set as JS trim()). */
const PYTHON_SPACE = '\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000'
const STRIP = new RegExp(`^[${PYTHON_SPACE}]+|[${PYTHON_SPACE}]+$`, 'g')

/** Python's str.strip(). */
export function pythonStrip(text: string): string {
  return text.replace(STRIP, '')
}

/** Python's bool(value) for a JSON value; a missing value is falsy. */
export function pythonTruthy(value: JsonValue | undefined): boolean {
  if (value === undefined || value === null) return false
  if (typeof value === 'boolean') return value
  if (typeof value === 'string') return value.length > 0
  if (isLosslessNumber(value)) return Number(value.value) !== 0
  if (Array.isArray(value)) return value.length > 0
  return Object.keys(value).length > 0
}

/**
 * Python's repr() of a float: the shortest digits that round-trip (as in JS),
 * spelled with a `.0` for whole numbers and a signed two-digit exponent below
 * 1e-4 and from 1e16 on: `1.0`, `1e+16`, `1e-05`, `-0.0`.
 */
export function pythonFloatRepr(value: number): string {
  if (!Number.isFinite(value)) throw new RangeError(`not a finite number: ${value}`)
  if (value === 0) return Object.is(value, -0) ? '-0.0' : '0.0'
  const sign = value < 0 ? '-' : ''
  const [mantissa, exponentText] = Math.abs(value).toExponential().split('e')
  const digits = mantissa.replace('.', '')
  const exponent = Number(exponentText)
  if (exponent < -4 || exponent >= 16) {
    const scaled = digits.length === 1 ? digits : `${digits[0]}.${digits.slice(1)}`
    const magnitude = String(Math.abs(exponent)).padStart(2, '0')
    return `${sign}${scaled}e${exponent < 0 ? '-' : '+'}${magnitude}`
  }
  if (exponent < 0) return `${sign}0.${'0'.repeat(-exponent - 1)}${digits}`
  const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, '0')
  return `${sign}${whole}.${digits.slice(exponent + 1) || '0'}`
}

/** Python's repr() of the number a JSON literal denotes; int and float literals stay distinct. */
export function pythonNumberRepr(literal: string): string {
  return isFloatLiteral(literal) ? pythonFloatRepr(Number(literal)) : BigInt(literal).toString()
}

const SURROGATE = /[\ud800-\udfff]/

/** Order of Python's sorted() on str: by code point (JS sort compares UTF-16 units). */
export function compareCodePoints(a: string, b: string): number {
  if (SURROGATE.test(a) || SURROGATE.test(b)) {
    const left = Array.from(a, (c) => c.codePointAt(0) as number)
    const right = Array.from(b, (c) => c.codePointAt(0) as number)
    for (let i = 0; i < Math.min(left.length, right.length); i++) {
      if (left[i] !== right[i]) return left[i] - right[i]
    }
    return left.length - right.length
  }
  return a < b ? -1 : a > b ? 1 : 0
}

/** Python's str() for the scalar kinds an ID column may hold; undefined for the rest. */
export function pythonStr(value: JsonValue): string | undefined {
  if (typeof value === 'string') return value
  if (isLosslessNumber(value)) return pythonNumberRepr(value.value)
  return undefined
}
