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

export interface Listener {
  /** The local address as the kernel shows it: 0.0.0.0 or :: when bound to every interface. */
  address: string
  port: number
}

function ipv4FromProc(hex: string): string {
  // /proc/net/tcp holds the address as a little-endian 32-bit word.
  const bytes = hex.match(/../g)!.map((b) => Number.parseInt(b, 16)).reverse()
  return bytes.join('.')
}

function ipv6FromProc(hex: string): string {
  // Four little-endian 32-bit words.
  const words = hex.match(/.{8}/g)!.map((w) => w.match(/../g)!.reverse().join(''))
  const groups = words.join('').toLowerCase().match(/.{4}/g)!.map((g) => g.replace(/^0+(?=.)/, ''))
  const mapped = groups.slice(0, 5).every((g) => g === '0') && groups[5] === 'ffff'
  if (mapped) return ipv4FromProc(words[3].match(/../g)!.reverse().join(''))
  return groups.join(':').replace(/(^|:)0(:0)+(:|$)/, '::')
}

/** Sockets in LISTEN state, from the text of /proc/net/tcp and /proc/net/tcp6 (concatenated). */
export function listeningSockets(procNet: string): Listener[] {
  const out: Listener[] = []
  for (const line of procNet.split('\n')) {
    const fields = line.trim().split(/\s+/)
    // sl local_address rem_address st ...; state 0A is LISTEN.
    if (fields.length < 4 || fields[3] !== '0A' || !/^[0-9A-F]+:[0-9A-F]{4}$/i.test(fields[1])) continue
    const [hexAddress, hexPort] = fields[1].split(':')
    const address = hexAddress.length === 8 ? ipv4FromProc(hexAddress) : ipv6FromProc(hexAddress)
    out.push({address, port: Number.parseInt(hexPort, 16)})
  }
  return out
}

/** Whether a listening address is reachable only from this machine. */
export function loopbackOnly(address: string): boolean {
  return address.startsWith('127.') || address === '::1'
}
