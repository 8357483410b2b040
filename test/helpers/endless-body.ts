import type http from 'node:http'

/** Answer 200 with a JSON content type and a body that never ends: spaces, as fast as the client reads. */
export function writeEndlessBody(res: http.ServerResponse): void {
  res.writeHead(200, {'content-type': 'application/json'})
  const chunk = Buffer.alloc(1 << 16, 0x20)
  const pump = () => {
    while (!res.destroyed && res.write(chunk)) {
      // fill until the socket pushes back
    }
  }
  res.on('drain', pump)
  res.on('error', () => undefined)
  pump()
}
