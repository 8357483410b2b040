import {mkdtemp, open, readdir, readFile, rm, stat} from 'node:fs/promises'
import {readdirSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {finished} from 'node:stream/promises'
import {afterEach, describe, expect, it, vi} from 'vitest'

import {openAtomicTarget} from '../../src/runtime/fs.js'

const openFds = () => readdirSync('/proc/self/fd').length

describe('a flushed atomic output stream', () => {
  afterEach(() => vi.restoreAllMocks())

  it('syncs in the background every syncEvery bytes, and once more before it finishes', async () => {
    const probe = await open(os.tmpdir(), 'r')
    const proto = Object.getPrototypeOf(probe)
    await probe.close()
    const datasync = vi.spyOn(proto, 'datasync')
    const sync = vi.spyOn(proto, 'sync')
    const dir = await mkdtemp(path.join(os.tmpdir(), 'gr-atomic-'))
    const write = async (options: {syncEvery?: number}) => {
      const atomic = await openAtomicTarget(path.join(dir, 'out.jsonl'))
      const stream = atomic.createStream({flush: true, ...options})
      for (let n = 0; n < 5; n++) stream.write(Buffer.alloc(1 << 20, 0x61))
      stream.end()
      await finished(stream)
      await atomic.commit()
    }
    await write({syncEvery: 2 << 20})
    expect(datasync).toHaveBeenCalledTimes(2)
    expect(sync).toHaveBeenCalledTimes(1)
    // the default interval is 32 MiB: 5 MiB are synced only at the end
    datasync.mockClear()
    sync.mockClear()
    await write({})
    expect(datasync).not.toHaveBeenCalled()
    expect(sync).toHaveBeenCalledTimes(1)
    expect((await stat(path.join(dir, 'out.jsonl'))).size).toBe(5 << 20)
    await rm(dir, {recursive: true})
  })

  it('writes every byte in order past several background syncs, then appears on commit', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'gr-atomic-'))
    const target = path.join(dir, 'out.jsonl')
    const fds = openFds()
    const atomic = await openAtomicTarget(target)
    const stream = atomic.createStream({flush: true, highWaterMark: 1 << 20})
    // 80 MiB in 1 MiB pieces, each numbered, crosses the 32 MiB sync interval twice
    const piece = (n: number) => Buffer.alloc(1 << 20, 0x61 + (n % 26))
    for (let n = 0; n < 80; n++) {
      if (!stream.write(n % 2 === 0 ? piece(n) : piece(n).toString())) await new Promise((resolve) => stream.once('drain', resolve))
    }
    stream.end('end\n')
    await finished(stream)
    await atomic.commit()
    expect(openFds()).toBe(fds)
    const written = await readFile(target)
    expect(written.length).toBe(80 * (1 << 20) + 4)
    for (let n = 0; n < 80; n++) expect(written[n * (1 << 20)]).toBe(0x61 + (n % 26))
    expect(written.subarray(-4).toString()).toBe('end\n')
    expect(await readdir(dir)).toEqual(['out.jsonl'])
    await rm(dir, {recursive: true})
  })

  it('reports a file it cannot create under the target name, and leaks no descriptor when aborted', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'gr-atomic-'))
    const target = path.join(dir, 'sub', 'out.jsonl')
    const atomic = await openAtomicTarget(target)
    await rm(path.join(dir, 'sub'), {recursive: true})
    const stream = atomic.createStream({flush: true})
    stream.write('x\n')
    const [error] = await new Promise<[NodeJS.ErrnoException]>((resolve) => stream.once('error', (e) => resolve([e])))
    expect(error).toMatchObject({code: 'ENOENT', path: target})

    const fds = openFds()
    const other = await openAtomicTarget(path.join(dir, 'kept.jsonl'))
    const partial = other.createStream({flush: true})
    partial.write('half a line')
    await new Promise((resolve) => setTimeout(resolve, 50))
    partial.destroy()
    await finished(partial).catch(() => undefined)
    await other.abort()
    expect(openFds()).toBe(fds)
    expect(await readdir(dir)).toEqual([])
    await expect(stat(path.join(dir, 'kept.jsonl'))).rejects.toMatchObject({code: 'ENOENT'})
    await rm(dir, {recursive: true})
  })
})
