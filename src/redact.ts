/**
 * One redaction path for everything a command prints or keeps: the values of configured secrets
 * (secret-bearing environment variables, variables the user names in GYMRECIPE_SECRET_VARS,
 * RAY_JOB_HEADERS values, the userinfo and query values of URL-valued variables), in every form a
 * service or a log may echo them (as written, JSON-escaped, `\u`-escaped, percent-encoded,
 * base64), and credentials written inline (`Authorization: Bearer …`, `TOKEN=…`, `user:pw@host`).
 */
import {Writable} from 'node:stream'
import {StringDecoder} from 'node:string_decoder'

export const REDACTED = '<redacted>'

const SECRET_NAME = /TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_KEY|PRIVATE_KEY|AUTH|COOKIE|SESSION|CREDENTIAL|HEADERS/i
/** Names that match SECRET_NAME but hold a setting, a path or an address, not a secret. */
const SETTING_NAME = /_(?:MODE|FILE|PATH|DIR|HOST|PORT|ENABLED|TYPE|KIND|URL|ADDRESS)$/i
/** Whether a variable of this name holds a secret (its value is redacted wherever it appears). */
export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name) && !SETTING_NAME.test(name)
}
/** Values this short would turn ordinary text into "<redacted>"; below it a value is not looked for. */
export const MIN_SECRET_LENGTH = 4
/** Names of further variables whose values are secret, comma or space separated. */
export const SECRET_VARS = 'GYMRECIPE_SECRET_VARS'

const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^/@\s"'<>]+@/gi
/** Credentials written inline, whatever their value: a header, a scheme, a secret-named assignment. */
const INLINE_CREDENTIALS: Array<[RegExp, string]> = [
  [/\b((?:proxy-)?authorization\s*[:=]\s*["']?(?:(?:bearer|basic|token|digest)\s+)?)(?![<[$]|(?:bearer|basic|token|digest)\s)[^\s"',;]+/gi, `$1${REDACTED}`],
  [/\b(bearer|basic)\s+(?![<[$])[A-Za-z0-9._~+/=-]{8,}/gi, `$1 ${REDACTED}`],
  [/\b([A-Za-z_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_KEY)[A-Za-z_]*\s*[=:]\s*["']?)(?![<[$])[^\s"']{4,}/g, `$1${REDACTED}`],
]

const hex2 = (n: number) => {
  const h = n.toString(16).padStart(2, '0')
  return `[${h[0].toLowerCase()}${h[0].toUpperCase()}][${h[1].toLowerCase()}${h[1].toUpperCase()}]`
}
const regexEscape = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')

/** A pattern for one character as written, `\u`-escaped (JSON) or percent-encoded (URL). */
function charPattern(ch: string): string {
  const unit = ch.charCodeAt(0)
  const u = `\\\\u${hex2(unit >> 8)}${hex2(unit & 0xff)}`
  const utf8 = [...Buffer.from(ch, 'utf8')].map((b) => `%${hex2(b)}`).join('')
  const json = JSON.stringify(ch).slice(1, -1)
  const literal = json === ch ? regexEscape(ch) : `${regexEscape(ch)}|${regexEscape(json)}`
  return `(?:${literal}|${u}|${utf8}${ch === ' ' ? '|\\+' : ''})`
}

/**
 * The base64 text a secret always produces inside a longer encoded string, at each of the three
 * alignments (standard and URL-safe alphabets). Only long enough cores are kept: shorter ones
 * would match unrelated base64.
 */
function base64Cores(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8')
  const cores = new Set<string>()
  for (let skip = 0; skip < 3; skip++) {
    const whole = bytes.subarray(skip, skip + Math.floor((bytes.length - skip) / 3) * 3)
    if (whole.length < 9) continue
    const core = whole.toString('base64')
    cores.add(core)
    cores.add(core.replaceAll('+', '-').replaceAll('/', '_'))
  }
  return [...cores]
}

/**
 * Finds a set of secret values in text, in every form they are echoed in. Literal forms are
 * replaced with plain string operations; the per-character pattern (mixed `\u` and `%` escapes)
 * only runs on text that holds an escape at all.
 */
export class SecretScrubber {
  private readonly literals: string[]
  private readonly escaped: RegExp | undefined

  constructor(secrets: Iterable<string>) {
    const values = [...new Set([...secrets].filter((s) => s.length >= MIN_SECRET_LENGTH))].sort((a, b) => b.length - a.length)
    const literals = new Set<string>()
    for (const secret of values) {
      literals.add(secret)
      literals.add(JSON.stringify(secret).slice(1, -1))
      literals.add(encodeURIComponent(secret))
      for (const core of base64Cores(secret)) literals.add(core)
    }
    this.literals = [...literals].sort((a, b) => b.length - a.length)
    this.escaped = values.length > 0 ? new RegExp(values.map((s) => [...s].map(charPattern).join('')).join('|'), 'g') : undefined
  }

  get empty(): boolean {
    return this.literals.length === 0
  }

  scrub(text: string, replacement = REDACTED): string {
    if (this.literals.length === 0) return text
    let out = text
    for (const form of this.literals) if (out.includes(form)) out = out.split(form).join(replacement)
    if (this.escaped && (out.includes('\\u') || out.includes('%'))) out = out.replace(this.escaped, replacement)
    return out
  }

  /** Whether text holds any of the secrets, in any form. */
  holds(text: string): boolean {
    return this.scrub(text, '\u0000') !== text
  }
}

/** The secret values a process environment configures. */
export function secretValues(env: NodeJS.ProcessEnv): string[] {
  const found = new Set<string>()
  const add = (value: string) => {
    for (const piece of [value, ...value.split(/\r?\n|\r/), value.replace(/^(?:Bearer|Basic|Token)\s+/i, '')]) {
      const v = piece.trim()
      if (v.length >= MIN_SECRET_LENGTH) found.add(v)
    }
  }
  const marked = new Set((env[SECRET_VARS] ?? '').split(/[\s,]+/).filter(Boolean))
  for (const [name, value] of Object.entries(env)) {
    if (!value) continue
    for (const part of urlSecrets(value)) add(part)
    if (!marked.has(name) && !isSecretName(name)) continue
    add(value)
    // RAY_JOB_HEADERS and the like: a JSON object whose values are the secrets.
    try {
      const parsed = JSON.parse(value)
      if (parsed && typeof parsed === 'object') for (const v of Object.values(parsed)) if (typeof v === 'string') add(v)
    } catch {
      // not JSON: the value itself is the secret
    }
  }
  return [...found]
}

/**
 * The secret parts of a URL-valued setting: its userinfo (however it is spelled: an `@`, `/` or
 * quote inside a password defeats pattern matching, so the text up to the last `@` of the
 * authority is taken), each of user and password, decoded too, and every query value.
 */
export function urlSecrets(value: string): string[] {
  const m = /^\s*[a-z][a-z0-9+.-]*:\/\/(.*)$/is.exec(value)
  if (!m) return []
  const rest = m[1]
  const out: string[] = []
  const authorityEnd = rest.search(/[?#]/)
  const authority = authorityEnd === -1 ? rest : rest.slice(0, authorityEnd)
  const at = authority.lastIndexOf('@')
  if (at > 0) {
    const userinfo = authority.slice(0, at)
    out.push(userinfo)
    for (const part of userinfo.split(':')) {
      out.push(part)
      try {
        out.push(decodeURIComponent(part))
      } catch {
        // not percent-encoded text
      }
    }
  }
  const query = rest.indexOf('?')
  if (query !== -1) {
    for (const pair of rest.slice(query + 1).split('#')[0].split('&')) {
      const v = pair.slice(pair.indexOf('=') + 1)
      if (pair.includes('=') && v) {
        out.push(v)
        try {
          out.push(decodeURIComponent(v.replaceAll('+', ' ')))
        } catch {
          // not percent-encoded text
        }
      }
    }
  }
  return out.filter((s) => s.length >= MIN_SECRET_LENGTH)
}

/** Whether a line writes a credential inline (a header, a bearer value, a secret-named assignment). */
export function holdsInlineCredential(text: string): boolean {
  return INLINE_CREDENTIALS.some(([pattern]) => new RegExp(pattern.source, pattern.flags.replace('g', '')).test(text))
}

const forEnvironment = new WeakMap<NodeJS.ProcessEnv, Redactor>()

/** The Redactor of an environment, built once: its secrets and patterns do not change during a run. */
export function redactorFor(env: NodeJS.ProcessEnv): Redactor {
  let redactor = forEnvironment.get(env)
  if (redactor === undefined) {
    redactor = new Redactor(env)
    forEnvironment.set(env, redactor)
  }
  return redactor
}

export class Redactor {
  private readonly scrubber: SecretScrubber

  constructor(env: NodeJS.ProcessEnv, extraSecrets: Iterable<string> = []) {
    this.scrubber = new SecretScrubber([...secretValues(env), ...extraSecrets])
  }

  text(input: string): string {
    let out = this.scrubber.scrub(input)
    out = out.replace(URL_USERINFO, `$1${REDACTED}@`)
    for (const [pattern, replacement] of INLINE_CREDENTIALS) out = out.replace(pattern, replacement)
    return out
  }

  /** Whether text holds a configured secret or an inline credential. */
  holdsSecret(input: string): boolean {
    return this.text(input) !== input
  }

  /** A JSON-able value with every string redacted (keys included); other values are kept as they are. */
  value<T>(input: T): T {
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

/**
 * A stream that redacts what passes through it, for output relayed as it arrives (a script, a
 * container's logs). Text is held until its line ends, so a secret cut in two by a chunk
 * boundary is still found; a line longer than `maxHeld` is passed on without waiting (redacted
 * as it is), and what is left is written when the stream ends.
 */
export function redactingStream(redactor: Redactor, target: NodeJS.WritableStream, maxHeld = 64 * 1024): Writable {
  let held = ''
  const decoder = new StringDecoder('utf8')
  const pass = (text: string) => {
    if (text !== '') target.write(redactor.text(text))
  }
  return new Writable({
    decodeStrings: false,
    write(chunk: Buffer | string, _encoding, done) {
      held += typeof chunk === 'string' ? chunk : decoder.write(chunk)
      const end = held.lastIndexOf('\n') + 1
      if (end > 0) {
        pass(held.slice(0, end))
        held = held.slice(end)
      }
      if (held.length > maxHeld) {
        pass(held)
        held = ''
      }
      done()
    },
    final(done) {
      pass(held + decoder.end())
      held = ''
      done()
    },
  })
}
