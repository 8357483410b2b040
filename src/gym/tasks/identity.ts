import {hash} from 'node:crypto'

import {isLosslessNumber, type JsonObject, type JsonValue} from '../../json/index.js'
import {compareCodePoints, pythonNumberRepr} from './python.js'

/**
 * Scenario identity, byte-compatible with the Python plugin: the default
 * scenario ID hashes Python's `json.dumps(task, sort_keys=True,
 * separators=(",", ":"))` (ASCII-escaped), and the task index is the first 60
 * bits of SHA-256 over the scenario ID.
 */

const PLAIN_ASCII = /^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/
const SHORT_ESCAPES: Record<string, string> = {'"': '\\"', '\\': '\\\\', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t'}

/** A JSON string as Python's ensure_ascii writes it: every other character as lowercase \uXXXX per UTF-16 unit. */
function asciiString(text: string): string {
  if (PLAIN_ASCII.test(text)) return `"${text}"`
  let out = '"'
  for (let i = 0; i < text.length; i++) {
    const char = text[i]
    const code = text.charCodeAt(i)
    if (SHORT_ESCAPES[char]) out += SHORT_ESCAPES[char]
    else if (code >= 0x20 && code <= 0x7e) out += char
    else out += `\\u${code.toString(16).padStart(4, '0')}`
  }
  return `${out}"`
}

/** Python `json.dumps(value, sort_keys=True, separators=(",", ":"))`. */
export function canonicalJson(value: JsonValue): string {
  if (value === null) return 'null'
  if (typeof value === 'boolean') return value ? 'true' : 'false'
  if (typeof value === 'string') return asciiString(value)
  if (isLosslessNumber(value)) return pythonNumberRepr(value.value)
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item)).join(',')}]`
  const keys = Object.keys(value).sort(compareCodePoints)
  return `{${keys.map((key) => `${asciiString(key)}:${canonicalJson(value[key])}`).join(',')}}`
}

function sha256Hex(text: string | Uint8Array): string {
  return hash('sha256', text, 'hex')
}

/** `<namespace>-<first 16 hex of SHA-256(canonical task)>`; the task must already have its top-level nulls dropped. */
export function defaultScenarioId(task: JsonObject, namespace: string): string {
  return `${namespace}-${sha256Hex(canonicalJson(task)).slice(0, 16)}`
}

/**
 * `_ng_task_index`: the first 15 hex digits of SHA-256(scenario ID) as a 60-bit
 * integer. The ID must be well-formed Unicode (Python cannot encode a lone
 * surrogate; see isEncodableId), given as text or as its UTF-8 bytes.
 */
export function taskIndexOf(scenarioId: string | Uint8Array): bigint {
  // a string is hashed as UTF-8, so an ID's bytes as read give the same index
  return BigInt(`0x${sha256Hex(scenarioId).slice(0, 15)}`)
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/** Python raises on a lone surrogate when it encodes the ID as UTF-8; Node would silently replace it. */
export function isEncodableId(scenarioId: string): boolean {
  return !LONE_SURROGATE.test(scenarioId)
}
