/**
 * Hostile HTTP services for the bad-input corpus, on 127.0.0.1 only. Each case that names one gets
 * its own: `{server}` is its URL, `{port}` its port, and `{elsewhere}` the URL of a second
 * listener that must never be reached (a redirect's target): the corpus fails a case if it is.
 */
import http from 'node:http'
import type {AddressInfo, Socket} from 'node:net'

import {writeEndlessBody} from '../helpers/endless-body.js'

export type Hostile =
  | 'redirect'
  | 'redirect-offhost'
  | 'endless'
  | 'declares-huge'
  | 'stalls'
  | 'drips'
  | 'cut-short'
  | 'not-http'
  | 'echoes-credentials'
  | 'html-error'
  | 'escape-sequences'
  | 'sets-short-cookie'
  | 'readyz-partial'
  | 'wrong-json'


const BEHAVIOUR: Record<Hostile, (req: http.IncomingMessage, res: http.ServerResponse, elsewhere: string) => void> = {
  redirect: (req, res, elsewhere) => {
    res.writeHead(307, {location: `${elsewhere}${req.url}`})
    res.end()
  },
  'redirect-offhost': (req, res) => {
    res.writeHead(302, {location: `http://192.0.2.1:8265${req.url}`})
    res.end()
  },
  endless: (_req, res) => writeEndlessBody(res),
  'declares-huge': (_req, res) => {
    res.writeHead(200, {'content-type': 'application/json', 'content-length': String(10 * 1024 ** 3)})
    res.write('{')
  },
  stalls: () => undefined,
  drips: (_req, res) => {
    res.writeHead(200, {'content-type': 'application/json'})
    const timer = setInterval(() => res.write(' '), 200)
    res.on('close', () => clearInterval(timer))
  },
  'cut-short': (req, res) => {
    res.writeHead(200, {'content-type': 'application/json', 'content-length': '1000'})
    res.write('{"ready": true, "partial')
    setTimeout(() => req.socket.destroy(), 20)
  },
  'not-http': () => undefined,
  'echoes-credentials': (req, res) => {
    const auth = String(req.headers.authorization ?? '')
    const token = auth.replace(/^Bearer\s+/i, '')
    const uEscaped = [...token].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')
    const body = `{"verdict": 1, "seen": "${uEscaped}", "url": "${encodeURIComponent(auth)}", "b64": "${Buffer.from(auth).toString('base64')}", "raw": ${JSON.stringify(auth)}, "ray": ${JSON.stringify(String(req.headers['x-api-key'] ?? ''))}}`
    res.writeHead(200, {'content-type': 'application/json', 'x-echo': auth})
    res.end(body)
  },
  'html-error': (req, res) => {
    res.writeHead(500, {'content-type': 'text/html'})
    res.end(`<html><body><h1>500</h1><pre>${String(req.headers.authorization ?? '')} ${String(req.headers['x-api-key'] ?? '')}</pre></body></html>`)
  },
  'escape-sequences': (_req, res) => {
    res.writeHead(500, {'content-type': 'text/plain'})
    res.end('boom\u001b]0;pwned\u0007\u001b[2J\rOVERWRITTEN')
  },
  'sets-short-cookie': (req, res) => {
    const cookie = String(req.headers.cookie ?? '')
    res.writeHead(200, {'content-type': 'application/json', 'set-cookie': 'sid=q7w2e; Path=/'})
    res.end(JSON.stringify({verdict: 1, echoed_cookie: cookie, note: 'session q7w2e'}))
  },
  'readyz-partial': (req, res) => {
    res.writeHead(200, {'content-type': 'application/json'})
    res.end(req.url?.startsWith('/readyz') ? '{"ready": true}' : '{}')
  },
  'wrong-json': (_req, res) => {
    res.writeHead(200, {'content-type': 'application/json'})
    res.end('[1, 2, 3]')
  },
}

export interface Running {
  url: string
  port: number
  elsewhere: string
  /** Requests the never-to-be-reached listener received. */
  elsewhereHits: () => number
  close: () => Promise<void>
}

function listen(server: http.Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)))
}

export async function startHostile(kind: Hostile): Promise<Running> {
  let hits = 0
  const sockets = new Set<Socket>()
  const other = http.createServer((_req, res) => {
    hits++
    res.end('{}')
  })
  const otherPort = await listen(other)
  const elsewhere = `http://127.0.0.1:${otherPort}`
  const server = http.createServer((req, res) => {
    req.resume()
    BEHAVIOUR[kind](req, res, elsewhere)
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => undefined)
    if (kind === 'not-http') {
      socket.write('SSH-2.0-OpenSSH_9.6\r\n\u0000\u0001garbage\r\n\r\n')
      setTimeout(() => socket.destroy(), 50)
    }
  })
  const port = await listen(server)
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    elsewhere,
    elsewhereHits: () => hits,
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await Promise.all([new Promise((r) => server.close(r)), new Promise((r) => other.close(r))])
    },
  }
}
