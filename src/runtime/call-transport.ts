import type {Dispatcher, Pool} from 'undici'

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
 * time (no pipelining) and holds nothing of the row that used it last:
 * undici's Pool keeps no cookies and no default headers, every header of a request
 * comes from that request, and a socket whose exchange did not finish
 * cleanly (abort, timeout, oversized or cut-short response) is destroyed,
 * never returned to the pool.
 *
 * Proxy environment variables are never consulted (the pools are explicit;
 * only undici's EnvHttpProxyAgent reads HTTP_PROXY), redirects are never followed,
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

export interface PooledHttpTransportOptions {
  /** Largest response body accepted, in bytes (default 64 MiB). */
  maxResponseBytes?: number
  /** Most open connections per origin (default 4, the default max_parallel_requests). */
  maxSocketsPerOrigin?: number
}

interface Target {
  pool: Pool
  path: string
}

const MAX_CACHED_URLS = 1024

/**
 * HTTP(S) transport on undici (the engine of node's own fetch) with one bounded
 * keep-alive Pool per origin, shared by the rows of a run. Its dispatch API
 * delivers a response without node:http's streams and listeners per request,
 * which at 32 rows in flight is about a fifth more rows per second (bench/call.mjs).
 */
export async function pooledHttpTransport(options: PooledHttpTransportOptions = {}): Promise<HttpTransport & {close(): void; readonly origins: number}> {
  // loaded only when a run calls something: a dry run and every other command start without it.
  // Only the Pool and what it needs: the package's index (fetch, WebSocket, caches, mocks) takes
  // about three times as long to load. module.exports is `default` both for node's own import()
  // of a CommonJS module and in the bundle.
  const Pool = (await import('undici/lib/dispatcher/pool.js')).default
  const maxBytes = options.maxResponseBytes ?? 64 * 1024 * 1024
  const maxSockets = Math.max(1, Math.floor(options.maxSocketsPerOrigin ?? 4))
  const pools = new Map<string, Pool>()
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
    let pool = pools.get(parsed.origin)
    if (!pool) {
      // Idle pooled sockets are dropped after IDLE_SOCKET_MS, well before common server keep-alive
      // timeouts (uvicorn: 5 s), so a row never races a server closing an idle connection: nothing
      // is retried, so such a race would fail the row. A server's Keep-Alive hint may only shorten it.
      // No transport timeouts of its own: the row's deadline (timeout, cleanup_timeout) bounds every wait.
      pool = new Pool(parsed.origin, {
        connections: maxSockets,
        pipelining: 1,
        keepAliveTimeout: IDLE_SOCKET_MS,
        keepAliveMaxTimeout: IDLE_SOCKET_MS,
        headersTimeout: 0,
        bodyTimeout: 0,
        connectTimeout: 0,
      })
      pools.set(parsed.origin, pool)
    }
    target = {pool, path: parsed.pathname + parsed.search}
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
      for (const pool of pools.values()) void pool.destroy().catch(() => undefined)
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
    target.pool.dispatch({path: target.path, method: req.method, headers: req.headers, body: req.body}, new Exchange(resolve, reject, cancel, maxBytes))
  })
}

/**
 * One request's answer as it arrives. Settles once: a failure (abort,
 * oversized or cut-short response) aborts the request, and undici destroys a
 * socket whose request was aborted rather than returning it to the pool.
 */
class Exchange implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined
  private settled = false
  private status = 0
  private headers: Record<string, string | string[]> = {}
  private chunks: Buffer[] = []
  private size = 0

  constructor(
    private readonly resolve: (response: HttpResponse) => void,
    private readonly reject: (error: Error) => void,
    private readonly cancel: Cancel,
    private readonly maxBytes: number,
  ) {
    cancel.listen(() => this.fail(new AbortedError(cancel.reason)))
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    // a request cancelled while it waited for a connection is never sent
    if (this.settled) controller.abort(new AbortedError(this.cancel.reason))
    else this.controller = controller
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[]>): void {
    this.status = statusCode
    this.headers = headers
    // An answer that says up front it is over the cap is refused before any of it is read.
    const declared = Number(headers['content-length'])
    if (Number.isFinite(declared) && declared > this.maxBytes) this.fail(new TransportError(`response body larger than ${this.maxBytes} bytes (it declares ${declared})`, 'ETOOLARGE'))
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.size += chunk.length
    if (this.size > this.maxBytes) this.fail(new TransportError(`response body larger than ${this.maxBytes} bytes`, 'ETOOLARGE'))
    else this.chunks.push(chunk)
  }

  onResponseEnd(): void {
    if (this.settled) return
    this.settled = true
    this.cancel.listen(undefined)
    const {chunks} = this
    this.resolve({status: this.status, headers: this.headers, body: chunks.length === 1 ? chunks[0].toString('utf8') : Buffer.concat(chunks).toString('utf8')})
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    const code = (error as NodeJS.ErrnoException).code
    this.fail(error instanceof AbortedError || error instanceof TransportError ? error : new TransportError(describeSocketError(error as NodeJS.ErrnoException), code ?? 'ETRANSPORT'))
  }

  private fail(error: Error): void {
    if (this.settled) return
    this.settled = true
    this.cancel.listen(undefined)
    this.controller?.abort(error)
    this.reject(error)
  }
}

function describeSocketError(error: NodeJS.ErrnoException): string {
  switch (error.code) {
    case 'ECONNREFUSED':
      return 'connection refused'
    case 'ECONNRESET':
      return 'connection reset by the service'
    case 'UND_ERR_SOCKET':
      return 'connection closed by the service before the response was complete'
    case 'ENOTFOUND':
      return 'host not found'
    case 'ETIMEDOUT':
      return 'connection timed out'
    default:
      return error.message || String(error.code)
  }
}
