/**
 * A Docker socket in front of the real one that holds the daemon's answer to chosen requests,
 * so a test can interrupt a command while the daemon has done something the command has not
 * heard about yet (a container created, its id still on the way).
 */
import {once} from 'node:events'
import net from 'node:net'
import path from 'node:path'

export interface HeldRequest {
  /** Request line, e.g. "POST /v1.47/containers/create?name=x HTTP/1.1". */
  request: string
  /** The daemon's status line, once it answered. */
  answered: Promise<string>
}

export interface DockerProxy {
  socket: string
  /** Resolves with the first request matching the pattern, as soon as it was forwarded. */
  held: Promise<HeldRequest>
  close(): Promise<void>
}

export async function delayingDockerProxy(dir: string, options: {target: string; hold: RegExp; delayMs: number}): Promise<DockerProxy> {
  const socket = path.join(dir, 'docker-proxy.sock')
  let onHeld!: (held: HeldRequest) => void
  const held = new Promise<HeldRequest>((resolve) => (onHeld = resolve))
  const connections = new Set<net.Socket>()
  const server = net.createServer((client) => {
    const daemon = net.connect(options.target)
    connections.add(client).add(daemon)
    let holding = false
    let answered: ((status: string) => void) | undefined
    client.on('data', (data) => {
      const request = data.toString('latin1').split('\r\n', 1)[0]
      if (options.hold.test(request)) {
        holding = true
        onHeld({request, answered: new Promise((resolve) => (answered = resolve))})
      }
      daemon.write(data)
    })
    daemon.on('data', (data) => {
      if (!holding) return void client.write(data)
      answered?.(data.toString('latin1').split('\r\n', 1)[0])
      setTimeout(() => client.writable && client.write(data), options.delayMs)
    })
    const end = () => {
      client.destroy()
      daemon.destroy()
    }
    client.on('close', end).on('error', end)
    daemon.on('close', end).on('error', end)
  })
  server.listen(socket)
  await once(server, 'listening')
  return {
    socket,
    held,
    async close() {
      for (const c of connections) c.destroy()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
