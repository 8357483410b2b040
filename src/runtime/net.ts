import net from 'node:net'

/**
 * True when something accepts TCP connections on host:port (the same test the start script
 * makes with /dev/tcp). A refused or timed-out connection means free.
 */
export function portAcceptsConnections(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({host, port})
    const done = (busy: boolean) => {
      socket.removeAllListeners()
      socket.on('error', () => undefined)
      socket.destroy()
      resolve(busy)
    }
    socket.setTimeout(timeoutMs, () => done(false))
    socket.once('connect', () => done(true))
    socket.once('error', () => done(false))
  })
}
