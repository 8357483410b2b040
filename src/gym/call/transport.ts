import http from 'node:http'
import https from 'node:https'

/**
 * The only network code of the call library. A transport opens one client per
 * row; the client keeps that row's connections alive across its initialize,
 * execute and cleanup requests and is closed when the row ends. Proxy
 * environment variables are never consulted (node:http does not read them),
 * and redirects are never followed.
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

export interface RowHttpClient {
  request(req: HttpRequest, signal: AbortSignal): Promise<HttpResponse>
  close(): void
}

export interface HttpTransport {
  openRowClient(): RowHttpClient
}

export interface NodeHttpTransportOptions {
  /** Largest response body accepted, in bytes (default 64 MiB). */
  maxResponseBytes?: number
}

/** node:http(s) transport: a keep-alive agent per row, destroyed when the row ends. */
export function nodeHttpTransport(options: NodeHttpTransportOptions = {}): HttpTransport {
  const maxBytes = options.maxResponseBytes ?? 64 * 1024 * 1024
  return {
    openRowClient(): RowHttpClient {
      const agents: {http?: http.Agent; https?: https.Agent} = {}
      const agentFor = (protocol: string): http.Agent => {
        if (protocol === 'https:') return (agents.https ??= new https.Agent({keepAlive: true, maxSockets: 1}))
        return (agents.http ??= new http.Agent({keepAlive: true, maxSockets: 1}))
      }
      return {
        request: (req, signal) => send(req, signal, agentFor, maxBytes),
        close() {
          agents.http?.destroy()
          agents.https?.destroy()
        },
      }
    },
  }
}

function send(req: HttpRequest, signal: AbortSignal, agentFor: (protocol: string) => http.Agent, maxBytes: number): Promise<HttpResponse> {
  return new Promise<HttpResponse>((resolve, reject) => {
    if (signal.aborted) {
      reject(new AbortedError(signal.reason))
      return
    }
    let url: URL
    try {
      url = new URL(req.url)
    } catch {
      reject(new TransportError(`invalid URL ${req.url}`, 'EINVALIDURL'))
      return
    }
    const lib = url.protocol === 'https:' ? https : http
    const body = Buffer.from(req.body, 'utf8')
    let settled = false
    const finish = (fn: () => void) => {
      if (settled) return
      settled = true
      signal.removeEventListener('abort', onAbort)
      fn()
    }
    const request = lib.request(url, {
      method: req.method,
      agent: agentFor(url.protocol),
      headers: {...req.headers, 'content-length': String(body.length)},
    })
    const onAbort = () => {
      finish(() => reject(new AbortedError(signal.reason)))
      request.destroy()
    }
    signal.addEventListener('abort', onAbort, {once: true})
    request.on('error', (error: NodeJS.ErrnoException) => {
      finish(() => reject(new TransportError(describeSocketError(error), error.code ?? 'ETRANSPORT')))
    })
    request.on('response', (res) => {
      const chunks: Buffer[] = []
      let size = 0
      res.on('data', (chunk: Buffer) => {
        size += chunk.length
        if (size > maxBytes) {
          finish(() => reject(new TransportError(`response body larger than ${maxBytes} bytes`, 'ETOOLARGE')))
          request.destroy()
          return
        }
        chunks.push(chunk)
      })
      res.on('error', (error: NodeJS.ErrnoException) => {
        finish(() => reject(new TransportError(describeSocketError(error), error.code ?? 'ETRANSPORT')))
      })
      res.on('aborted', () => {
        finish(() => reject(new TransportError('connection closed before the response was complete', 'ECONNRESET')))
      })
      res.on('end', () => {
        finish(() => resolve({status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8')}))
      })
    })
    request.end(body)
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
