import {isJsonObject, isLosslessNumber, type JsonObject, type JsonValue, LosslessNumber, parseJson} from '../../json/index.js'

/**
 * The Relax conversion of a raw Gym row (what
 * examples/nemo_gym_agentic/scripts/convert_dataset.py does), on losslessly parsed rows so
 * numbers keep their spelling.
 */

export interface RelaxRow {
  input: JsonValue
  metadata: JsonObject
}

/** Above this size a row is parsed natively: the lossless parser takes about a second per 10 MB. */
const LOSSLESS_LIMIT = 1024 * 1024

/**
 * Parse a sampled row keeping number spellings (`1.0` stays `1.0`, as Python's str() needs for
 * expected_answer). Giant rows, which are text, are parsed natively and their numbers re-spelled.
 */
export function parseRow(text: string): JsonValue {
  if (text.length <= LOSSLESS_LIMIT) return parseJson(text)
  return toLossless(JSON.parse(text))
}

function toLossless(value: unknown): JsonValue {
  if (typeof value === 'number') return new LosslessNumber(String(value))
  if (Array.isArray(value)) return value.map(toLossless)
  if (value && typeof value === 'object') {
    const out: JsonObject = {}
    for (const [key, item] of Object.entries(value)) define(out, key, toLossless(item))
    return out
  }
  return value as JsonValue
}

export const GSM8K_PROMPT = 'Solve the following math problem. Make sure to put the answer (and only answer) inside \\boxed{}.\n\n'
const LIFTED = new Set(['input', 'tools', 'parallel_tool_calls', 'instructions'])

export class ConversionError extends Error {}

export function convertRow(row: JsonObject): RelaxRow {
  const metadata: JsonObject = {}
  for (const [key, value] of Object.entries(row)) if (key !== 'responses_create_params') define(metadata, key, value)
  const rcp = row.responses_create_params
  if (!isJsonObject(rcp)) {
    if (typeof row.question === 'string' && Object.hasOwn(row, 'expected_answer')) {
      define(metadata, 'expected_answer', pythonStr(row.expected_answer))
      return {input: [{role: 'user', content: GSM8K_PROMPT + row.question}], metadata}
    }
    throw new ConversionError('row has no responses_create_params object (and is not a question/expected_answer row)')
  }
  if (!Object.hasOwn(rcp, 'input')) throw new ConversionError('responses_create_params.input is required')
  let input: JsonValue = typeof rcp.input === 'string' ? [{role: 'user', content: rcp.input}] : rcp.input
  const rest: JsonObject = {}
  for (const [key, value] of Object.entries(rcp)) if (!LIFTED.has(key)) define(rest, key, value)
  for (const key of ['tools', 'parallel_tool_calls']) if (Object.hasOwn(rcp, key)) define(metadata, key, rcp[key])
  if (truthy(rcp.instructions)) define(metadata, 'developer_message', rcp.instructions)
  const problem = row.problem_statement
  if (Array.isArray(input) && input.length === 0 && typeof problem === 'string' && problem !== '') {
    input = [{role: 'user', content: problem}]
    define(rest, 'input', [])
  }
  if (Object.keys(rest).length > 0) define(metadata, 'responses_create_params', rest)
  return {input, metadata}
}

/**
 * Where Relax's conversion puts a raw verifier field in the converted row, and the value it must have there.
 * Undefined when the raw row does not hold the field (the fields check reports that).
 */
export function expectedInConverted(row: JsonObject, field: string): {path: string[]; value: JsonValue} | undefined {
  const segments = field.split('.')
  const raw = valueAtPath(row, segments)
  if (raw === undefined) return undefined
  if (segments[0] !== 'responses_create_params') {
    if (field === 'expected_answer' && !isJsonObject(row.responses_create_params)) return {path: ['metadata', 'expected_answer'], value: pythonStr(raw)}
    return {path: ['metadata', ...segments], value: raw}
  }
  const [, key, ...deeper] = segments
  if (key === undefined) return undefined // the object itself is spread over input and metadata; its parts are checked
  if (key === 'input' && deeper.length === 0) {
    const problem = row.problem_statement
    if (Array.isArray(raw) && raw.length === 0 && typeof problem === 'string' && problem !== '') return {path: ['metadata', 'responses_create_params', 'input'], value: []}
    return {path: ['input'], value: typeof raw === 'string' ? [{role: 'user', content: raw}] : raw}
  }
  if (key === 'input') return {path: ['input', ...deeper], value: raw}
  if (key === 'tools' || key === 'parallel_tool_calls') return {path: ['metadata', key, ...deeper], value: raw}
  if (key === 'instructions') return {path: ['metadata', 'developer_message', ...deeper], value: raw}
  return {path: ['metadata', 'responses_create_params', key, ...deeper], value: raw}
}

export function valueAtPath(value: JsonValue | undefined, segments: readonly string[]): JsonValue | undefined {
  let node = value
  for (const segment of segments) {
    if (!isJsonObject(node) || !Object.hasOwn(node, segment)) return undefined
    node = node[segment]
  }
  return node
}

/**
 * Where two JSON values differ (dot paths, at most `limit`). Numbers are compared by value
 * (Python rewrites `1e5` as `100000.0`), everything else exactly.
 */
export function jsonDifferences(a: JsonValue | undefined, b: JsonValue | undefined, limit = 5, at = ''): string[] {
  if (a === undefined || b === undefined) return a === b ? [] : [at || '(root)']
  if (isLosslessNumber(a) || isLosslessNumber(b)) return isLosslessNumber(a) && isLosslessNumber(b) && sameNumber(a, b) ? [] : [at || '(root)']
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return [at || '(root)']
    const out: string[] = []
    for (let k = 0; k < a.length && out.length < limit; k++) out.push(...jsonDifferences(a[k], b[k], limit - out.length, `${at}[${k}]`))
    return out
  }
  if (isJsonObject(a) || isJsonObject(b)) {
    if (!isJsonObject(a) || !isJsonObject(b)) return [at || '(root)']
    const out: string[] = []
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
      if (out.length >= limit) break
      out.push(...jsonDifferences(a[key], b[key], limit - out.length, at ? `${at}.${key}` : key))
    }
    return out
  }
  return a === b ? [] : [at || '(root)']
}

function sameNumber(a: LosslessNumber, b: LosslessNumber): boolean {
  if (a.value === b.value) return true
  const integer = /^-?\d+$/
  if (integer.test(a.value) && integer.test(b.value)) return BigInt(a.value) === BigInt(b.value)
  return Number(a.value) === Number(b.value)
}

/** Python's truthiness, as `if rcp.get("instructions")` sees the value. */
function truthy(value: JsonValue | undefined): boolean {
  if (value === undefined || value === null || value === false || value === '') return false
  if (isLosslessNumber(value)) return Number(value.value) !== 0
  if (Array.isArray(value)) return value.length > 0
  if (isJsonObject(value)) return Object.keys(value).length > 0
  return true
}

/** What Python's str() gives for a JSON value read by json.loads (the converter stringifies expected_answer). */
export function pythonStr(value: JsonValue | undefined): string {
  if (value === null || value === undefined) return 'None'
  if (value === true) return 'True'
  if (value === false) return 'False'
  if (typeof value === 'string') return value
  if (isLosslessNumber(value)) return /^-?\d+$/.test(value.value) ? BigInt(value.value).toString() : pythonFloatRepr(Number(value.value))
  return JSON.stringify(value) // dicts and lists: rare for an answer; compared as-is
}

/** repr() of a Python float: shortest round-trip digits, exponent form below 1e-4 and from 1e16. */
export function pythonFloatRepr(x: number): string {
  if (Number.isNaN(x)) return 'nan'
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf'
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0'
  const [mantissa, exponentText] = Math.abs(x).toExponential().split('e')
  const exponent = Number(exponentText)
  const digits = mantissa.replace('.', '')
  const sign = x < 0 ? '-' : ''
  if (exponent < -4 || exponent >= 16) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits
    return `${sign}${m}e${exponent < 0 ? '-' : '+'}${String(Math.abs(exponent)).padStart(2, '0')}`
  }
  if (exponent < 0) return `${sign}0.${'0'.repeat(-exponent - 1)}${digits}`
  const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, '0')
  const fraction = digits.slice(exponent + 1) || '0'
  return `${sign}${whole}.${fraction}`
}

function define(target: JsonObject, key: string, value: JsonValue | undefined): void {
  if (value === undefined) return
  if (key === '__proto__') Object.defineProperty(target, key, {value, enumerable: true, writable: true, configurable: true})
  else target[key] = value
}
