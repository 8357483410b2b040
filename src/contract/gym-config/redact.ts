import {isMapping} from './tree.js'
import {isVerbatim, verbatim} from '../../json-document.js'

/** Last words of keys that hold credentials: hf_token, openai_api_key, mlflow_tracking_token, ... (not max_output_tokens). */
const SECRET_WORDS = new Set(['token', 'secret', 'password', 'passwd', 'cookie', 'cookies', 'authorization', 'credential', 'credentials', 'apikey'])

function isSecretKey(key: string): boolean {
  const words = key.toLowerCase().split(/[_\-.]/)
  const last = words[words.length - 1]
  return SECRET_WORDS.has(last) || (last === 'key' && words[words.length - 2] === 'api')
}

export const REDACTED = '<redacted>'

/**
 * A copy with every literal secret value replaced, for output. An unresolved reference such as
 * `${policy_api_key}` is kept: it names where the secret comes from without revealing it.
 */
export function redactSecrets<T>(value: T): T {
  return redact(value, false) as T
}

function redact(value: unknown, secretKey: boolean): unknown {
  if (Array.isArray(value)) return value.map((item) => redact(item, secretKey))
  if (isMapping(value)) {
    const copy: Record<string, unknown> = {}
    for (const [key, item] of Object.entries(value)) {
      Object.defineProperty(copy, key, {value: redact(item, secretKey || isSecretKey(key)), enumerable: true, writable: true, configurable: true})
    }
    return isVerbatim(value) ? verbatim(copy) : copy
  }
  if (!secretKey || value === null || value === '' || isReference(value)) return value
  return REDACTED
}

function isReference(value: unknown): boolean {
  return typeof value === 'string' && /^\$\{[^}]+\}$/.test(value)
}
