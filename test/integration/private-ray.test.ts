/**
 * What the service rung's private-Ray check reads: the sockets in LISTEN state, from the kernel's
 * socket table, and whether each is open to the network. Proven in a network namespace this test
 * creates, with a non-loopback address of its own (192.0.2.10, TEST-NET-1, on a veth pair inside it): a listener on every
 * interface answers on that address, one on loopback does not, and the socket table says the same.
 */
import {execa, type ResultPromise} from 'execa'
import {randomBytes} from 'node:crypto'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {listeningSockets, loopbackOnly} from '../../src/runtime/net.js'

const netns = `grtest-ray-${randomBytes(3).toString('hex')}`
const ADDRESS = '192.0.2.10'
const OPEN_PORT = 26383
const LOOPBACK_PORT = 26384
let available = true
const listeners: ResultPromise[] = []

const inNetns = (cmd: string[]) => execa('ip', ['netns', 'exec', netns, ...cmd], {reject: false})
const LISTEN = 'import socket, sys, time\ns = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(4); print("ready", flush=True); time.sleep(600)'
const CONNECT = 'import socket, sys\ntry:\n    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2).close(); print("open")\nexcept OSError as e:\n    print("closed", e)'

beforeAll(async () => {
  const created = await execa('ip', ['netns', 'add', netns], {reject: false})
  if (created.exitCode !== 0) {
    if (process.env.GYMRECIPE_REQUIRE_DOCKER === '1' && process.getuid?.() === 0) throw new Error(`ip netns add failed: ${String(created.stderr)}`)
    available = false
    console.error(`\n!! private-ray: network namespace tests skipped: ${String(created.stderr).trim()}\n`)
    return
  }
  for (const cmd of [['ip', 'link', 'set', 'lo', 'up'], ['ip', 'link', 'add', 'grva', 'type', 'veth', 'peer', 'name', 'grvb'], ['ip', 'addr', 'add', `${ADDRESS}/24`, 'dev', 'grva'], ['ip', 'link', 'set', 'grva', 'up'], ['ip', 'link', 'set', 'grvb', 'up']]) {
    const r = await inNetns(cmd)
    if (r.exitCode !== 0) throw new Error(`${cmd.join(' ')} in ${netns}: ${String(r.stderr)}`)
  }
  for (const [host, port] of [['0.0.0.0', OPEN_PORT], ['127.0.0.1', LOOPBACK_PORT]] as const) {
    const child = execa('ip', ['netns', 'exec', netns, 'python3', '-c', LISTEN, host, String(port)], {reject: false, buffer: false})
    listeners.push(child)
    await new Promise<void>((resolve, reject) => {
      child.stdout?.once('data', () => resolve())
      void child.then((r) => reject(new Error(`listener exited: ${String(r.stderr ?? '')}`)))
    })
  }
})

afterAll(async () => {
  for (const child of listeners) {
    if (child.pid) process.kill(child.pid, 'SIGTERM')
    await child
  }
  if (available) await execa('ip', ['netns', 'delete', netns], {reject: false})
})

describe('the private Ray check reads who can reach a port', () => {
  it.skipIf(!available)('a port bound on every interface is open on the namespace\'s own address; one bound on loopback is not; the socket table agrees', async () => {
    expect(String((await inNetns(['python3', '-c', CONNECT, ADDRESS, String(OPEN_PORT)])).stdout)).toBe('open')
    expect(String((await inNetns(['python3', '-c', CONNECT, ADDRESS, String(LOOPBACK_PORT)])).stdout)).toMatch(/^closed/)
    const table = await inNetns(['cat', '/proc/net/tcp', '/proc/net/tcp6'])
    const sockets = listeningSockets(String(table.stdout))
    expect(sockets).toEqual(expect.arrayContaining([{address: '0.0.0.0', port: OPEN_PORT}, {address: '127.0.0.1', port: LOOPBACK_PORT}]))
    const open = sockets.filter((s) => !loopbackOnly(s.address)).map((s) => s.port)
    expect(open).toContain(OPEN_PORT)
    expect(open).not.toContain(LOOPBACK_PORT)
  })
})

describe('listeningSockets', () => {
  it('reads IPv4 and IPv6 (v4-mapped included) listeners and ignores other states', () => {
    const text = [
      '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
      '   0: 00000000:18CF 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1',
      '   1: 0100007F:18D0 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1',
      '   2: 0100007F:18D1 0100007F:A000 01 00000000:00000000 00:00000000 00000000     0        0 3 1',
      '   0: 00000000000000000000000000000000:18D2 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 4 1',
      '   1: 00000000000000000000000001000000:18D3 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 5 1',
      '   2: 0000000000000000FFFF00000A00000A:18D4 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 6 1',
    ].join('\n')
    expect(listeningSockets(text)).toEqual([
      {address: '0.0.0.0', port: 6351},
      {address: '127.0.0.1', port: 6352},
      {address: '::', port: 6354},
      {address: '::1', port: 6355},
      {address: '10.0.0.10', port: 6356},
    ])
    expect(['0.0.0.0', '::', '10.0.0.10'].map(loopbackOnly)).toEqual([false, false, false])
    expect(['127.0.0.1', '127.1.2.3', '::1'].map(loopbackOnly)).toEqual([true, true, true])
  })
})
