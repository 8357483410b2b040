import {MIN_SECRET_LENGTH, SecretScrubber} from '../../redact.js'
import {Cancel, type HttpRequest, type HttpResponse, type RowHttpClient} from '../../runtime/call-transport.js'

const REDACTED = '[redacted]'
const REDACTED_JSON = JSON.stringify(REDACTED)
const BASE_HEADERS_JSON = '{"content-type":"application/json","accept":"application/json"'

/** A response header name as the evidence writes it, with the JSON text of its latest value. */
interface HeaderText {
  lower: string
  /** Always redacted, whatever the row. */
  credential: boolean
  /** `"name":` */
  nameJson: string
  value: string | undefined
  valueJson: string
}

/** Header names seen in responses; bounded, since a service may send any names. */
const headerTexts = new Map<string, HeaderText>()
const MAX_HEADER_TEXTS = 256
const MAX_KEPT_VALUE = 256

function headerText(name: string): HeaderText {
  let known = headerTexts.get(name)
  if (known === undefined) {
    const lower = name.toLowerCase()
    known = {
      lower,
      credential: lower === 'authorization' || lower === 'cookie' || lower === 'set-cookie' || lower === 'proxy-authorization',
      nameJson: `${JSON.stringify(name)}:`,
      value: undefined,
      valueJson: '',
    }
    if (headerTexts.size < MAX_HEADER_TEXTS) headerTexts.set(name, known)
  }
  return known
}

/**
 * The client state one row owns: its cookie jar, its session headers and the
 * mapping of bearer tokens to endpoints, used for every request of the row
 * (initialize, execute, cleanup) and dropped when the row ends. Connections
 * come from the transport's shared per-origin pool and carry no state of
 * their own: every header of a request is built here, from this row only.
 * Cookies set by any configured service are sent to every configured service
 * of the same row (and nowhere else: requests only ever go to configured
 * endpoints and redirects are not followed). Bearer tokens are sent only to
 * the endpoint that declared them.
 */
export class RowSession {
  // created when the row first gets a cookie or a session header (stateless rows never do)
  private cookies: Map<string, string> | undefined
  private sessionHeaders: Map<string, string> | undefined
  /** Lower-case names of the session headers (redacted in evidence). */
  private sessionNames: Set<string> | undefined
  /** The Cookie header value, rebuilt only when the jar changes. */
  private cookieHeader: string | undefined
  private secrets: readonly string[]
  private ownSecrets = false
  /** Built on first use, and again after the row learns a secret. */
  private scrubber: SecretScrubber | undefined

  constructor(
    private readonly client: RowHttpClient,
    private readonly bearerTokens: ReadonlyMap<string, string>,
    globalSecrets: readonly string[],
  ) {
    // shared until this row learns a secret of its own (copy on write)
    this.secrets = globalSecrets
  }

  /**
   * POST a JSON body to endpoint + route with this row's cookies, session
   * headers and the endpoint's own bearer token. `headersJson` is the request's
   * headers as the evidence keeps them (every credential redacted).
   */
  async post(endpoint: string, route: string, body: string, signal: AbortSignal | Cancel): Promise<{request: HttpRequest; response: HttpResponse; headersJson: string}> {
    const sent = this.send(endpoint, route, body, signal)
    const response = await sent.response
    this.received(response)
    return {request: sent.request, response, headersJson: sent.headersJson}
  }

  /** post() in two halves: send now, then hand the response to received() (cookies). */
  send(endpoint: string, route: string, body: string, signal: AbortSignal | Cancel): {request: HttpRequest; url: string; headersJson: string; response: Promise<HttpResponse>} {
    // every header is built from this row's state alone: nothing is inherited from the pooled connection
    const headers: Record<string, string> = {'content-type': 'application/json', accept: 'application/json'}
    let headersJson = BASE_HEADERS_JSON
    if (this.sessionHeaders !== undefined) {
      for (const [name, value] of this.sessionHeaders) {
        headers[name] = value
        headersJson += `,${JSON.stringify(name)}:${REDACTED_JSON}`
      }
    }
    if (this.cookieHeader !== undefined) {
      headers.cookie = this.cookieHeader
      headersJson += `,"cookie":${REDACTED_JSON}`
    }
    const token = this.bearerTokens.get(endpoint)
    if (token !== undefined) {
      headers.authorization = `Bearer ${token}`
      headersJson += `,"authorization":${REDACTED_JSON}`
    }
    const url = endpoint + route
    const request: HttpRequest = {method: 'POST', url, headers, body}
    const response =
      signal instanceof Cancel ? (this.client.send ? this.client.send(request, signal) : this.client.request(request, signal.toSignal())) : this.client.request(request, signal)
    return {request, url, headersJson: `${headersJson}}`, response}
  }

  /** Keep the cookies a response sets (for this row only). */
  received(response: HttpResponse): void {
    const setCookie = response.headers['set-cookie']
    if (setCookie !== undefined) this.storeCookies(setCookie)
  }

  setSessionHeader(name: string, value: string): void {
    ;(this.sessionHeaders ??= new Map()).set(name, value)
    ;(this.sessionNames ??= new Set()).add(name.toLowerCase())
    this.addSecret(value)
  }

  /** Whether scrub() has anything to replace. */
  get hasSecrets(): boolean {
    return this.secrets.length > 0
  }

  get hasSessionState(): boolean {
    return (this.cookies?.size ?? 0) > 0 || (this.sessionHeaders?.size ?? 0) > 0
  }

  close(): void {
    this.client.close()
  }

  /** Headers safe to keep as evidence: credentials, cookies and session headers are replaced. */
  redactHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string | string[]> {
    const out: Record<string, string | string[]> = {}
    for (const name in headers) {
      const value = headers[name]
      if (value === undefined) continue
      if (this.redacted(headerText(name))) {
        out[name] = REDACTED
      } else if (this.secrets.length === 0) {
        out[name] = value
      } else {
        out[name] = Array.isArray(value) ? value.map((v) => this.scrub(v)) : this.scrub(value)
      }
    }
    return out
  }

  /** redactHeaders written straight to JSON text (what the attempt artifact records). */
  redactedHeadersJson(headers: Record<string, string | string[] | undefined>): string {
    let out = '{'
    for (const name in headers) {
      const value = headers[name]
      if (value === undefined) continue
      const known = headerText(name)
      let text: string
      if (this.redacted(known)) {
        text = REDACTED_JSON
      } else if (Array.isArray(value)) {
        text = JSON.stringify(this.secrets.length === 0 ? value : value.map((v) => this.scrub(v)))
      } else if (this.secrets.length > 0 || value.length > MAX_KEPT_VALUE) {
        text = JSON.stringify(this.scrub(value))
      } else {
        // most responses repeat most header values: the JSON text of a name's latest value is kept
        if (value !== known.value) {
          known.value = value
          known.valueJson = JSON.stringify(value)
        }
        text = known.valueJson
      }
      out += out.length > 1 ? `,${known.nameJson}${text}` : `${known.nameJson}${text}`
    }
    return `${out}}`
  }

  /** A header whose value is never kept: a credential, a cookie, or one of this row's session headers. */
  private redacted(header: HeaderText): boolean {
    return header.credential || this.sessionNames?.has(header.lower) === true
  }

  /**
   * Replace every known secret (bearer tokens, session header values, cookie values) in text, in
   * every form a service may echo it: as sent, JSON- or `\u`-escaped, percent-encoded, base64.
   */
  scrub(text: string): string {
    if (this.secrets.length === 0) return text
    this.scrubber ??= scrubberFor(this.secrets)
    return this.scrubber.scrub(text, REDACTED)
  }

  private addSecret(value: string): void {
    if (value.length < MIN_SECRET_LENGTH || this.secrets.includes(value)) return
    this.scrubber = undefined
    if (!this.ownSecrets) {
      this.secrets = [...this.secrets]
      this.ownSecrets = true
    }
    ;(this.secrets as string[]).push(value)
  }

  private storeCookies(setCookie: string | string[]): void {
    const cookies = (this.cookies ??= new Map())
    for (const line of Array.isArray(setCookie) ? setCookie : [setCookie]) {
      const [pair, ...attrs] = line.split(';')
      const eq = pair.indexOf('=')
      if (eq <= 0) continue
      const name = pair.slice(0, eq).trim()
      const value = pair.slice(eq + 1).trim()
      let expired = false
      for (const attr of attrs) {
        const [key, val = ''] = attr.split('=')
        const k = key.trim().toLowerCase()
        if (k === 'max-age' && Number(val.trim()) <= 0) expired = true
        if (k === 'expires') {
          const when = Date.parse(val.trim())
          if (Number.isFinite(when) && when <= Date.now()) expired = true
        }
      }
      if (expired) {
        cookies.delete(name)
      } else {
        cookies.set(name, value)
        this.addSecret(value)
      }
    }
    this.cookieHeader = cookies.size > 0 ? [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') : undefined
  }
}

/** Rows share the run's secrets until one learns its own: their scrubber is built once. */
const sharedScrubbers = new WeakMap<readonly string[], SecretScrubber>()
function scrubberFor(secrets: readonly string[]): SecretScrubber {
  let scrubber = sharedScrubbers.get(secrets)
  if (scrubber === undefined) {
    scrubber = new SecretScrubber(secrets)
    sharedScrubbers.set(secrets, scrubber)
  }
  return scrubber
}
