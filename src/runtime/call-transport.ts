import http from 'node:http'
import https from 'node:https'
import {urlToHttpOptions} from 'node:url'

/** How long an idle pooled socket is kept (see the agent options below). */
const IDLE_SOCKET_MS = 2000

/**
 * The only network code of the call library.
 *
 * A row's *client state* (cookie jar, session headers, which bearer token goes
 * where) lives in its RowSession; the transport only moves bytes. Connections
 * are pooled: one keep-alive pool per origin (scheme, host, port), shared by
 * all rows of a run and bounded to `maxSocketsPerOrigin` sockets (runCall
 * passes max_parallel_requests). A pooled socket carries one request at a
 * time (no pipelining) and holds nothing of the row that used it last: node's
 * Agent keeps no cookies and no default headers, every header of a request
 * comes from that request, and a socket whose exchange did not finish
 * cleanly (abort, timeout, oversized or cut-short response) is destroyed,
 * never returned to the pool.
 *
 * Proxy environment variables are never consulted (the pools are explicit
 * agents; node:http does not read HTTP_PROXY), redirects are never followed,
 * and no request is ever retried, not even on a reused socket the service had
 * just closed (that is a transport failure of the row).
 */
export interface HttpRequest {
  method: 'POST'
  url: string
  headers: Record<string, string>
  body: string
}

export interface HttpResponse {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

/** A request that produced no HTTP response (refused, reset, DNS, body too large). */
export class TransportError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message)
    this.name = 'TransportError'
  }
}

/** Thrown when the request's signal aborted it; `reason` is the signal's reason. */
export class AbortedError extends Error {
  constructor(readonly reason: unknown) {
    super('request aborted')
    this.name = 'AbortedError'
  }
}

/**
 * A cancellation for one request at a time, without an AbortSignal: creating
 * an AbortSignal and its listener costs more per row than a keep-alive
 * request itself, so the built-in transport takes this instead (see
 * RowHttpClient.send). Custom transports still get a real AbortSignal.
 */
export class Cancel {
  aborted = false
  reason: unknown = undefined
  private listener: (() => void) | undefined

  abort(reason: unknown): void {
    if (this.aborted) return
    this.aborted = true
    this.reason = reason
    const listener = this.listener
    this.listener = undefined
    listener?.()
  }

  /** Set the one listener (the request in flight); replaced by the next request's. */
  listen(fn: (() => void) | undefined): void {
    this.listener = fn
  }

  /** An AbortSignal that follows this cancellation (for transports without send()). */
  toSignal(): AbortSignal {
    const controller = new AbortController()
    if (this.aborted) controller.abort(this.reason)
    else this.listen(() => controller.abort(this.reason))
    return controller.signal
  }
}

/** One row's view of the transport; closed when the row ends. */
export interface RowHttpClient {
  request(req: HttpRequest, signal: AbortSignal): Promise<HttpResponse>
  /** Optional: the same as request(), cancelled by a Cancel instead of an AbortSignal. */
  send?(req: HttpRequest, cancel: Cancel): Promise<HttpResponse>
  close(): void
}

export interface HttpTransport {
  openRowClient(): RowHttpClient
  /** Release shared resources (pooled connections); runCall calls it when the run ends. */
  close?(): void
}

export interface NodeHttpTransportOptions {
  /** Largest response body accepted, in bytes (default 64 MiB). */
  maxResponseBytes?: number
  /** Most open connections per origin (default 4, the default max_parallel_requests). */
  maxSocketsPerOrigin?: number
}

interface Target {
  lib: typeof http | typeof https
  agent: http.Agent
  protocol: string
  hostname: string
  port: number | string | undefined
  path: string
}

const MAX_CACHED_URLS = 1024

/** node:http(s) transport with one bounded keep-alive pool per origin, shared by the rows of a run. */
export function nodeHttpTransport(options: NodeHttpTransportOptions = {}): HttpTransport & {close(): void; readonly origins: number} {
  const maxBytes = options.maxResponseBytes ?? 64 * 1024 * 1024
  const maxSockets = Math.max(1, Math.floor(options.maxSocketsPerOrigin ?? 4))
  const pools = new Map<string, http.Agent>()
  // parsed request options per URL (a run uses a handful: endpoint + route of each step)
  const targets = new Map<string, Target | TransportError>()

  const targetFor = (url: string): Target | TransportError => {
    let target = targets.get(url)
    if (target) return target
    let parsed: URL
    try {
      parsed = new URL(url)
      if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('not http')
    } catch {
      return new TransportError(`invalid URL ${url}`, 'EINVALIDURL')
    }
    const tls = parsed.protocol === 'https:'
    let agent = pools.get(parsed.origin)
    if (!agent) {
      // Idle pooled sockets are dropped after IDLE_SOCKET_MS, well before common server keep-alive
      // timeouts (uvicorn: 5 s), so a row never races a server closing an idle connection: nothing
      // is retried, so such a race would fail the row. Busy sockets are not affected.
      const agentOptions: http.AgentOptions = {keepAlive: true, maxSockets, maxFreeSockets: maxSockets, scheduling: 'lifo', timeout: IDLE_SOCKET_MS}
      agent = tls ? new https.Agent(agentOptions) : new http.Agent(agentOptions)
      pools.set(parsed.origin, agent)
    }
    const base = urlToHttpOptions(parsed)
    target = {lib: tls ? https : http, agent, protocol: base.protocol ?? parsed.protocol, hostname: base.hostname ?? parsed.hostname, port: base.port ?? undefined, path: base.path ?? '/'}
    if (targets.size >= MAX_CACHED_URLS) targets.clear()
    targets.set(url, target)
    return target
  }

  const transport = {
    closed: false,
    get origins() {
      return pools.size
    },
    target(url: string): Target | TransportError {
      return transport.closed ? new TransportError('the HTTP client is closed', 'ECLOSED') : targetFor(url)
    },
    maxBytes,
    openRowClient(): RowHttpClient {
      return new PooledRowClient(transport)
    },
    close() {
      transport.closed = true
      for (const agent of pools.values()) agent.destroy()
      pools.clear()
      targets.clear()
    },
  }
  return transport
}

interface PoolOwner {
  target(url: string): Target | TransportError
  maxBytes: number
}

/** A row's client: requests go through the shared pools; nothing of the row is kept here. */
class PooledRowClient implements RowHttpClient {
  private closed = false

  constructor(private readonly owner: PoolOwner) {}

  request(req: HttpRequest, signal: AbortSignal): Promise<HttpResponse> {
    const cancel = new Cancel()
    if (signal.aborted) cancel.abort(signal.reason)
    const onAbort = () => cancel.abort(signal.reason)
    signal.addEventListener('abort', onAbort, {once: true})
    return this.send(req, cancel).finally(() => signal.removeEventListener('abort', onAbort))
  }

  send(req: HttpRequest, cancel: Cancel): Promise<HttpResponse> {
    const target = this.closed ? new TransportError('the HTTP client is closed', 'ECLOSED') : this.owner.target(req.url)
    if (target instanceof TransportError) return Promise.reject(target)
    return send(req, cancel, target, this.owner.maxBytes)
  }

  close(): void {
    // the row's state lives in its RowSession; its sockets go back to the shared pool
    this.closed = true
  }
}

function send(req: HttpRequest, cancel: Cancel, target: Target, maxBytes: number): Promise<HttpResponse> {
  return new Promise<HttpResponse>((resolve, reject) => {
    if (cancel.aborted) {
      reject(new AbortedError(cancel.reason))
      return
    }
    let settled = false
    const headers: Record<string, string | number> = {...req.headers, 'content-length': Buffer.byteLength(req.body)}
    const request = target.lib.request({protocol: target.protocol, hostname: target.hostname, port: target.port, path: target.path, method: req.method, agent: target.agent, headers})
    const fail = (error: Error) => {
      if (settled) return
      settled = true
      cancel.listen(undefined)
      // an unfinished exchange never goes back to the pool
      request.destroy()
      reject(error)
    }
    cancel.listen(() => fail(new AbortedError(cancel.reason)))
    request.on('error', (error: NodeJS.ErrnoException) => fail(new TransportError(describeSocketError(error), error.code ?? 'ETRANSPORT')))
    request.on('response', (res) => {
      const chunks: Buffer[] = []
      let size = 0
      res.on('data', (chunk: Buffer) => {
        size += chunk.length
        if (size > maxBytes) {
          fail(new TransportError(`response body larger than ${maxBytes} bytes`, 'ETOOLARGE'))
          return
        }
        chunks.push(chunk)
      })
      res.on('error', (error: NodeJS.ErrnoException) => fail(new TransportError(describeSocketError(error), error.code ?? 'ETRANSPORT')))
      res.on('aborted', () => fail(new TransportError('connection closed before the response was complete', 'ECONNRESET')))
      res.on('end', () => {
        if (settled) return
        settled = true
        cancel.listen(undefined)
        resolve({status: res.statusCode ?? 0, headers: res.headers, body: chunks.length === 1 ? chunks[0].toString('utf8') : Buffer.concat(chunks).toString('utf8')})
      })
    })
    request.end(req.body)
  })
}

function describeSocketError(error: NodeJS.ErrnoException): string {
  switch (error.code) {
    case 'ECONNREFUSED':
      return 'connection refused'
    case 'ECONNRESET':
      return 'connection reset by the service'
    case 'ENOTFOUND':
      return 'host not found'
    case 'ETIMEDOUT':
      return 'connection timed out'
    default:
      return error.message || String(error.code)
  }
}
