import http from 'node:http'
import type {AddressInfo, Socket} from 'node:net'
import {afterEach, describe, expect, it} from 'vitest'

import {RowSession} from '../../../src/gym/call/session.js'
import {AbortedError, Cancel, type HttpRequest, pooledHttpTransport, TransportError} from '../../../src/runtime/call-transport.js'

interface Seen {
  port: number
  headers: http.IncomingHttpHeaders
  body: string
}

/** A local service that records each request with the client port of its connection. */
async function service(handler: (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void = (_req, res) => res.end('{}')) {
  const seen: Seen[] = []
  const sockets = new Set<Socket>()
  let open = 0
  let maxOpen = 0
  const server = http.createServer((req, res) => {
    let body = ''
    req.on('data', (c) => (body += c))
    req.on('end', () => {
      seen.push({port: req.socket.remotePort!, headers: req.headers, body})
      handler(req, res, body)
    })
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    open++
    maxOpen = Math.max(maxOpen, open)
    socket.on('close', () => open--)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const stop = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  return {url, seen, sockets, maxOpen: () => maxOpen, stop}
}

const post = (url: string, body = '{}', headers: Record<string, string> = {}): HttpRequest => ({method: 'POST', url, headers: {'content-type': 'application/json', ...headers}, body})
const later = (ms: number) => new Promise((r) => setTimeout(r, ms))

let cleanups: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const c of cleanups.reverse()) await c()
  cleanups = []
})

describe('pooled transport', () => {
  it('shares keep-alive connections between rows and never opens more than maxSocketsPerOrigin per origin', async () => {
    const a = await service((_req, res) => setTimeout(() => res.end('{"ok":true}'), 20))
    const b = await service((_req, res) => setTimeout(() => res.end('{"ok":true}'), 20))
    const transport = await pooledHttpTransport({maxSocketsPerOrigin: 2})
    cleanups.push(a.stop, b.stop, () => transport.close())
    // 12 rows at once against each of two origins: each origin gets its own pool of at most 2 sockets
    await Promise.all(
      Array.from({length: 12}, async (_, i) => {
        const client = transport.openRowClient()
        const r1 = await client.send!(post(a.url + '/x', `{"row":${i}}`), new Cancel())
        const r2 = await client.send!(post(b.url + '/y', `{"row":${i}}`), new Cancel())
        client.close()
        expect([r1.status, r2.status]).toEqual([200, 200])
      }),
    )
    for (const s of [a, b]) {
      expect(s.seen).toHaveLength(12)
      expect(s.maxOpen()).toBeLessThanOrEqual(2)
      expect(new Set(s.seen.map((r) => r.port)).size).toBeLessThanOrEqual(2)
    }
    expect(transport.origins).toBe(2)
  })

  it('sends only the headers of the request itself on a reused connection', async () => {
    const s = await service()
    const transport = await pooledHttpTransport({maxSocketsPerOrigin: 1})
    cleanups.push(s.stop, () => transport.close())
    const first = transport.openRowClient()
    await first.send!(post(s.url + '/a', '{}', {'x-session-token': 'first-row-token', authorization: 'Bearer first', cookie: 'sid=first'}), new Cancel())
    first.close()
    const second = transport.openRowClient()
    await second.send!(post(s.url + '/a'), new Cancel())
    second.close()
    expect(s.seen[0].port).toBe(s.seen[1].port)
    expect(s.seen[1].headers['x-session-token']).toBeUndefined()
    expect(s.seen[1].headers.authorization).toBeUndefined()
    expect(s.seen[1].headers.cookie).toBeUndefined()
  })

  it('keeps each row session its own cookie jar while two rows share one connection', async () => {
    // the service sets a cookie named after the row on /login and echoes the Cookie header on /echo
    const s = await service((req, res, body) => {
      if (req.url === '/login') res.setHeader('set-cookie', `sid=${JSON.parse(body).row}; Path=/`)
      res.end(JSON.stringify({cookie: req.headers.cookie ?? null}))
    })
    const transport = await pooledHttpTransport({maxSocketsPerOrigin: 1})
    cleanups.push(s.stop, () => transport.close())
    const rowA = new RowSession(transport.openRowClient(), new Map(), [])
    const rowB = new RowSession(transport.openRowClient(), new Map(), [])
    await Promise.all([rowA.post(s.url, '/login', '{"row":"a-123456"}', new Cancel()), rowB.post(s.url, '/login', '{"row":"b-654321"}', new Cancel())])
    const [echoA, echoB] = await Promise.all([rowA.post(s.url, '/echo', '{}', new Cancel()), rowB.post(s.url, '/echo', '{}', new Cancel())])
    expect(JSON.parse(echoA.response.body).cookie).toBe('sid=a-123456')
    expect(JSON.parse(echoB.response.body).cookie).toBe('sid=b-654321')
    // one socket carried all four requests
    expect(new Set(s.seen.map((r) => r.port)).size).toBe(1)
    // each row redacts and scrubs only what it knows
    expect(echoA.headersJson).toBe('{"content-type":"application/json","accept":"application/json","cookie":"[redacted]"}')
    expect(rowA.scrub('a-123456 b-654321')).toBe('[redacted] b-654321')
  })

  it('destroys a connection whose request was aborted instead of returning it to the pool', async () => {
    const s = await service((req, res) => {
      if (req.url === '/slow') setTimeout(() => res.end('{}'), 2000)
      else res.end('{}')
    })
    const transport = await pooledHttpTransport({maxSocketsPerOrigin: 1})
    cleanups.push(s.stop, () => transport.close())
    const client = transport.openRowClient()
    const cancel = new Cancel()
    const slow = client.send!(post(s.url + '/slow'), cancel)
    await later(50)
    cancel.abort('timeout')
    await expect(slow).rejects.toBeInstanceOf(AbortedError)
    await client.send!(post(s.url + '/fast'), new Cancel())
    // the aborted request's socket was destroyed, not reused: the next request came on a new connection
    const [slowSeen, fastSeen] = s.seen
    expect(fastSeen.port).not.toBe(slowSeen.port)
    expect(s.sockets.size).toBe(2)
  })

  it('never retries: a connection reset fails the request after one attempt', async () => {
    const s = await service((req) => req.socket.destroy())
    const transport = await pooledHttpTransport({maxSocketsPerOrigin: 4})
    cleanups.push(s.stop, () => transport.close())
    const error = await transport
      .openRowClient()
      .send!(post(s.url + '/reset'), new Cancel())
      .catch((e) => e)
    expect(error).toBeInstanceOf(TransportError)
    expect(s.seen).toHaveLength(1)
  })

  it('honours an AbortSignal through request() (custom callers) and ignores proxy variables', async () => {
    const s = await service((_req, res) => setTimeout(() => res.end('{}'), 1000))
    const proxy = await service()
    const saved = {HTTP_PROXY: process.env.HTTP_PROXY, http_proxy: process.env.http_proxy}
    process.env.HTTP_PROXY = proxy.url
    process.env.http_proxy = proxy.url
    const transport = await pooledHttpTransport()
    cleanups.push(s.stop, proxy.stop, () => transport.close(), () => {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k]
        else process.env[k] = v
      }
    })
    const controller = new AbortController()
    const pending = transport.openRowClient().request(post(s.url + '/x'), controller.signal)
    setTimeout(() => controller.abort('stop'), 50)
    const error = await pending.catch((e) => e)
    expect(error).toBeInstanceOf(AbortedError)
    expect(error.reason).toBe('stop')
    expect(s.seen).toHaveLength(1)
    expect(proxy.seen).toHaveLength(0)
  })

  it('never sends a request cancelled while it waited for a pooled connection, and keeps the pool usable', async () => {
    const s = await service((req, res) => {
      if (req.url === '/slow') setTimeout(() => res.end('{}'), 200)
      else res.end('{}')
    })
    const transport = await pooledHttpTransport({maxSocketsPerOrigin: 1})
    cleanups.push(s.stop, () => transport.close())
    const client = transport.openRowClient()
    const slow = client.send!(post(s.url + '/slow'), new Cancel())
    const waiting = new Cancel()
    const queued = client.send!(post(s.url + '/queued'), waiting)
    await later(20)
    waiting.abort('timeout')
    await expect(queued).rejects.toBeInstanceOf(AbortedError)
    expect((await slow).status).toBe(200)
    expect((await client.send!(post(s.url + '/after'), new Cancel())).status).toBe(200)
    // slow and after reached the service; the cancelled one never did
    expect(s.seen).toHaveLength(2)
  })

  it('refuses a response body larger than maxResponseBytes and drops its connection', async () => {
    const s = await service((req, res) => res.end(req.url === '/big' ? JSON.stringify({pad: 'x'.repeat(4096)}) : '{}'))
    const transport = await pooledHttpTransport({maxSocketsPerOrigin: 1, maxResponseBytes: 1024})
    cleanups.push(s.stop, () => transport.close())
    const client = transport.openRowClient()
    const error = await client.send!(post(s.url + '/big'), new Cancel()).catch((e) => e)
    expect(error).toBeInstanceOf(TransportError)
    expect(error).toMatchObject({code: 'ETOOLARGE'})
    expect((await client.send!(post(s.url + '/small'), new Cancel())).body).toBe('{}')
    expect(s.seen[1].port).not.toBe(s.seen[0].port)
  })

  it('refuses requests after the transport is closed', async () => {
    const transport = await pooledHttpTransport()
    transport.close()
    await expect(transport.openRowClient().send!(post('http://127.0.0.1:9/x'), new Cancel())).rejects.toMatchObject({code: 'ECLOSED'})
  })
})
