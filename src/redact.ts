/**
 * One redaction path for everything a command prints: the values of secret-bearing environment
 * variables (tokens, keys, passwords, cookies, RAY_JOB_HEADERS values) and the user:password part
 * of any URL are replaced before text or JSON leaves the process.
 */

export const REDACTED = '<redacted>'

const SECRET_NAME = /TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_KEY|PRIVATE_KEY|AUTH|COOKIE|SESSION|CREDENTIAL|HEADERS/i
// Shorter values, and plain lowercase words (AUTH_MODE=default), would turn ordinary text into
// "<redacted>"; real secrets are longer and mix digits, capitals or symbols in.
const MIN_SECRET_LENGTH = 6
const PLAIN_WORD = /^[a-z]+$/
const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^/@\s"'<>]+@/gi

export class Redactor {
  private readonly secrets: string[]

  constructor(env: NodeJS.ProcessEnv) {
    const found = new Set<string>()
    const add = (value: string) => {
      for (const piece of [value, ...value.split(/\r?\n|\r/), value.replace(/^(?:Bearer|Basic|Token)\s+/i, '')]) {
        const v = piece.trim()
        if (v.length >= MIN_SECRET_LENGTH && !PLAIN_WORD.test(v)) found.add(v)
      }
    }
    for (const [name, value] of Object.entries(env)) {
      if (!value || !SECRET_NAME.test(name)) continue
      add(value)
      // RAY_JOB_HEADERS and the like: a JSON object whose values are the secrets.
      try {
        const parsed = JSON.parse(value)
        if (parsed && typeof parsed === 'object') for (const v of Object.values(parsed)) if (typeof v === 'string') add(v)
      } catch {
        // not JSON: the value itself is the secret
      }
    }
    // Longest first, so a secret that contains another is replaced whole.
    this.secrets = [...found].sort((a, b) => b.length - a.length)
  }

  text(input: string): string {
    let out = input.replace(URL_USERINFO, `$1${REDACTED}@`)
    for (const secret of this.secrets) if (out.includes(secret)) out = out.split(secret).join(REDACTED)
    // A secret JSON-escaped inside a document (quotes, backslashes, control characters).
    for (const secret of this.secrets) {
      const escaped = JSON.stringify(secret).slice(1, -1)
      if (escaped !== secret && out.includes(escaped)) out = out.split(escaped).join(REDACTED)
    }
    return out
  }

  /** A JSON-able value with every string redacted (keys included); other values are kept as they are. */
  value<T>(input: T): T {
    if (this.secrets.length === 0 && !containsUserinfo(input)) return input
    return this.walk(input) as T
  }

  private walk(input: unknown): unknown {
    if (typeof input === 'string') return this.text(input)
    if (Array.isArray(input)) return input.map((item) => this.walk(item))
    if (input && typeof input === 'object' && Object.getPrototypeOf(input) === Object.prototype) {
      return Object.fromEntries(Object.entries(input).map(([k, v]) => [this.text(k), this.walk(v)]))
    }
    return input
  }
}

function containsUserinfo(input: unknown): boolean {
  if (typeof input === 'string') return new RegExp(URL_USERINFO.source, 'i').test(input)
  if (Array.isArray(input)) return input.some(containsUserinfo)
  if (input && typeof input === 'object') return Object.entries(input).some(([k, v]) => containsUserinfo(k) || containsUserinfo(v))
  return false
}
