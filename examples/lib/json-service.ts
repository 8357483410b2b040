/**
 * The HTTP plumbing the example services share: a loopback server whose handlers take a parsed
 * JSON request and return a reply, plus the bits of running one as its own process.
 */
import http from 'node:http'
import type {AddressInfo} from 'node:net'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

export interface JsonRequest {
  method: string
  route: string
  headers: http.IncomingHttpHeaders
  /** the parsed body; {} when there is none */
  body: any
}

/** A JSON answer, or a function that writes the response itself (streams, delays). */
export type Reply = {status: number; body: unknown} | ((res: http.ServerResponse) => void)

export const reply = (status: number, body: unknown): Reply => ({status, body})

export function sendJson(res: http.ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value)
  res.writeHead(status, {'content-type': 'application/json', 'content-length': Buffer.byteLength(body)})
  res.end(body)
}

export interface JsonService {
  url: string
  close(): Promise<void>
}

/** Listen on 127.0.0.1 (port 0: one the system picks); a body that is not JSON is answered 400. */
export async function serveJson(handle: (request: JsonRequest) => Reply | Promise<Reply>, port = 0): Promise<JsonService> {
  const server = http.createServer((req, res) => {
    let text = ''
    req.setEncoding('utf8')
    req.on('data', (chunk: string) => (text += chunk))
    req.on('end', async () => {
      let body: any = {}
      if (text.trim() !== '') {
        try {
          body = JSON.parse(text)
        } catch {
          return sendJson(res, 400, {detail: 'request body is not JSON'})
        }
      }
      try {
        const answer = await handle({method: req.method ?? 'GET', route: (req.url ?? '/').split('?')[0], headers: req.headers, body})
        if (typeof answer === 'function') answer(res)
        else sendJson(res, answer.status, answer.body)
      } catch (error) {
        if (!res.headersSent) sendJson(res, 500, {detail: (error as Error).message})
      }
    })
  })
  server.listen(port, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  const {port: bound} = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${bound}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}

/** True when the module with this import.meta.url is the script node was started with. */
export function isMain(moduleUrl: string): boolean {
  return process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(moduleUrl)
}

/** Print the {"url", "pid", ...} line the launcher waits for, and close on SIGTERM or SIGINT. */
export function announceAndStopOnSignals(service: {url: string; close(): Promise<void>}, extra: Record<string, unknown> = {}): void {
  process.stdout.write(`${JSON.stringify({url: service.url, pid: process.pid, ...extra})}\n`)
  let closing = false
  const stop = async () => {
    if (closing) return
    closing = true
    await service.close()
    process.exit(0)
  }
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)
}
