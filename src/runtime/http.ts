/**
 * The HTTP client for the Gym service (Gateway /readyz and trials, resources server routes) and the
 * Ray dashboard. Built on node:http, which sends only what it is given: no `Sec-Fetch-*`, `Origin`
 * or `Referer` (Ray's dashboard refuses a POST that carries them as browser traffic), no proxy
 * (HTTP(S)_PROXY is never read, so the Gym host is reached directly, as NO_PROXY requires for the
 * scripts), and no redirect is ever followed: credentials stay with the origin they were given for.
 *
 * Every request has a byte cap on the answer and one deadline for the whole exchange, and a
 * failure says which limit was hit.
 */
import http from 'node:http'
import https from 'node:https'

import {messageOf} from '../errors.js'

/** Default cap on an answer's body: far above any JSON the Gateway or Ray sends. */
export const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024

export interface HttpAnswer {
  status: number
  /** Parsed JSON body, or undefined when the body is not JSON. */
  json: unknown
  text: string
  headers: http.IncomingHttpHeaders
}

export type HttpFailureKind = 'timeout' | 'too-large' | 'redirect' | 'aborted' | 'transport' | 'bad-url'

/** A request that produced no usable answer; `kind` says which limit or failure it was. */
export class HttpFailure extends Error {
  constructor(
    /** What happened, without the request: "connection refused (ECONNREFUSED)". */
    readonly reason: string,
    readonly kind: HttpFailureKind,
    /** The request it happened to: "GET http://127.0.0.1:8265/api/version". */
    readonly request: string,
    readonly details: {status?: number; location?: string; limitBytes?: number; timeoutMs?: number; code?: string} = {},
  ) {
    super(request ? `${request}: ${reason}` : reason)
    this.name = 'HttpFailure'
  }
}

export interface HttpOptions {
  body?: string
  headers?: Record<string, string>
  /** One deadline for connect, headers and the whole body (ms). */
  timeoutMs?: number
  maxBodyBytes?: number
  signal?: AbortSignal
}

/** An origin for messages: scheme, host and port, never userinfo, path or query. */
export function originOf(url: string): string {
  try {
    const parsed = new URL(url)
    return `${parsed.protocol}//${parsed.host}`
  } catch {
    return '(not a URL)'
  }
}

function transportWords(error: unknown): string {
  const code = (error as {code?: unknown})?.code
  const says: Record<string, string> = {
    ECONNREFUSED: 'connection refused',
    ECONNRESET: 'the connection was reset',
    EPIPE: 'the connection was closed while sending',
    ENOTFOUND: 'the host name does not resolve',
    EAI_AGAIN: 'the host name could not be resolved (temporary DNS failure)',
    EHOSTUNREACH: 'the host is unreachable',
    ENETUNREACH: 'the network is unreachable',
    ETIMEDOUT: 'the connection timed out',
    HPE_INVALID_CONSTANT: 'the answer is not HTTP',
    HPE_HEADER_OVERFLOW: 'the answer headers are too large',
  }
  if (typeof code === 'string' && says[code]) return `${says[code]} (${code})`
  if (typeof code === 'string' && code.startsWith('HPE_')) return `the answer is not valid HTTP (${code})`
  const message = messageOf(error)
  if (message === 'socket hang up') return 'the server closed the connection without answering'
  return message || 'the request failed'
}

/**
 * One request, answered or failed within its deadline and byte cap. A 3xx with a Location is a
 * failure of kind `redirect` naming where it pointed; it is never followed.
 */
export function boundedRequest(method: string, url: string, options: HttpOptions = {}): Promise<HttpAnswer> {
  const timeoutMs = options.timeoutMs ?? 5000
  const limit = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return Promise.reject(new HttpFailure('not a URL', 'bad-url', `${method} ${JSON.stringify(url)}`))
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return Promise.reject(new HttpFailure('not an http(s) URL', 'bad-url', `${method} ${originOf(url)}`))
  }
  const origin = originOf(url)
  const shown = `${method} ${origin}${parsed.pathname}`
  const headers: Record<string, string> = {...options.headers}
  if (options.body !== undefined) {
    if (!Object.keys(headers).some((k) => k.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json'
    headers['content-length'] = String(Buffer.byteLength(options.body))
  }
  // URL userinfo becomes Basic auth, as every HTTP client does; it never reaches a message.
  const auth = parsed.username || parsed.password ? `${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}` : undefined
  const transport = parsed.protocol === 'https:' ? https : http
  return new Promise<HttpAnswer>((resolve, reject) => {
    let settled = false
    const finish = (error: HttpFailure | undefined, answer?: HttpAnswer) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      options.signal?.removeEventListener('abort', onAbort)
      if (error) {
        request.destroy()
        reject(error)
      } else resolve(answer!)
    }
    const onAbort = () => finish(new HttpFailure('aborted', 'aborted', shown))
    const timer = setTimeout(() => finish(new HttpFailure(`no complete answer within ${timeoutMs / 1000} s`, 'timeout', shown, {timeoutMs})), timeoutMs)
    const request = transport.request(
      {
        protocol: parsed.protocol,
        hostname: parsed.hostname.replace(/^\[|\]$/g, ''),
        port: parsed.port || undefined,
        path: `${parsed.pathname}${parsed.search}`,
        method,
        headers,
        auth,
        agent: false,
      },
      (response) => {
        const status = response.statusCode ?? 0
        const location = response.headers.location
        if (status >= 300 && status < 400 && location) {
          let target = location
          try {
            target = originOf(new URL(location, url).href) + new URL(location, url).pathname
          } catch {
            // keep the raw value
          }
          finish(new HttpFailure(`answered ${status}, a redirect to ${target}; gymrecipe does not follow redirects (credentials stay with ${origin})`, 'redirect', shown, {status, location: target}))
          return
        }
        const declared = Number(response.headers['content-length'])
        if (Number.isFinite(declared) && declared > limit) {
          finish(new HttpFailure(`the answer declares ${declared} bytes, over the ${limit}-byte limit`, 'too-large', shown, {status, limitBytes: limit}))
          return
        }
        const chunks: Buffer[] = []
        let size = 0
        response.on('data', (chunk: Buffer) => {
          size += chunk.length
          if (size > limit) {
            finish(new HttpFailure(`the answer exceeded the ${limit}-byte limit`, 'too-large', shown, {status, limitBytes: limit}))
            return
          }
          chunks.push(chunk)
        })
        response.on('error', (error) => finish(new HttpFailure(transportWords(error), 'transport', shown, {code: (error as {code?: string}).code})))
        response.on('aborted', () => finish(new HttpFailure('the answer was cut short', 'transport', shown)))
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8')
          let json: unknown
          try {
            json = text ? JSON.parse(text) : undefined
          } catch {
            json = undefined
          }
          finish(undefined, {status, json, text, headers: response.headers})
        })
      },
    )
    request.on('error', (error) => finish(new HttpFailure(transportWords(error), 'transport', shown, {code: (error as {code?: string}).code})))
    if (options.signal?.aborted) {
      onAbort()
      return
    }
    options.signal?.addEventListener('abort', onAbort, {once: true})
    request.end(options.body)
  })
}

export async function httpRequest(
  method: 'GET' | 'POST',
  url: string,
  options: {body?: string; timeoutMs?: number; headers?: Record<string, string>; maxBodyBytes?: number} = {},
): Promise<HttpAnswer> {
  return boundedRequest(method, url, options)
}

/** The fields of a JSON object answer (`{}` for anything else), each to be checked before use. */
export function objectFields(json: unknown): Record<string, unknown> {
  return json && typeof json === 'object' && !Array.isArray(json) ? (json as Record<string, unknown>) : {}
}

/** One GET /readyz; transport errors become `{error}` instead of throwing. */
export async function readyz(gatewayUrl: string, timeoutMs = 2000): Promise<{answer?: HttpAnswer; error?: string}> {
  try {
    return {answer: await httpRequest('GET', `${gatewayUrl.replace(/\/$/, '')}/readyz`, {timeoutMs})}
  } catch (error) {
    return {error: error instanceof HttpFailure ? error.reason : messageOf(error)}
  }
}
