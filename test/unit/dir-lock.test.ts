import {mkdtemp, readFile, readdir, utimes, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {describe, expect, it} from 'vitest'

import {LOCK_FILE, lockDirectory} from '../../src/runtime/dir-lock.js'

const dir = () => mkdtemp(path.join(os.tmpdir(), 'gr-lock-'))
const refusal = (promise: Promise<unknown>) => promise.then(() => undefined, (error: {code?: string; exit?: number; message: string}) => error)

describe('lockDirectory', () => {
  it('one owner at a time: a second taker is refused naming the first, and may take it once released', async () => {
    const d = await dir()
    const first = await lockDirectory(d, 'first run')
    const refused = await refusal(lockDirectory(d, 'second run'))
    expect(refused).toMatchObject({code: 'E_DIR_LOCKED', exit: 3})
    expect(refused?.message).toContain(`pid ${process.pid} on ${os.hostname()} (first run`)
    await first.release()
    expect(await readdir(d)).toEqual([])
    const second = await lockDirectory(d, 'second run')
    await second.release()
  })

  it('takes over the lock of a process that is gone', async () => {
    const d = await dir()
    await writeFile(path.join(d, LOCK_FILE), JSON.stringify({pid: 2 ** 22 + 7, host: os.hostname(), since: 'then', processStart: '1', what: 'a crashed run'}))
    const lock = await lockDirectory(d, 'next run')
    expect(JSON.parse(await readFile(lock.file, 'utf8')).pid).toBe(process.pid)
    await lock.release()
    expect(await readdir(d)).toEqual([])
  })

  it('takes over a lock whose pid now belongs to another process (its start time differs)', async () => {
    const d = await dir()
    await writeFile(path.join(d, LOCK_FILE), JSON.stringify({pid: process.pid, host: os.hostname(), since: 'then', processStart: '0', what: 'a run long gone'}))
    const lock = await lockDirectory(d, 'next run')
    await lock.release()
  })

  it('never takes the lock of another host, whose processes it cannot see', async () => {
    const d = await dir()
    await writeFile(path.join(d, LOCK_FILE), JSON.stringify({pid: 1, host: 'elsewhere.example', since: 'then', processStart: null, what: 'a run on a shared disk'}))
    expect(await refusal(lockDirectory(d, 'here'))).toMatchObject({code: 'E_DIR_LOCKED', message: expect.stringContaining('pid 1 on elsewhere.example')})
  })

  it('waits out a lock being written, and takes one left half-written by a killed run', async () => {
    const d = await dir()
    const file = path.join(d, LOCK_FILE)
    await writeFile(file, '{"pid":')
    const old = new Date(Date.now() - 60_000)
    await utimes(file, old, old)
    const lock = await lockDirectory(d, 'next run')
    await lock.release()
  })

  it('release leaves a lock alone that is no longer its own', async () => {
    const d = await dir()
    const lock = await lockDirectory(d, 'run')
    await writeFile(lock.file, 'someone else')
    await lock.release()
    expect(await readFile(lock.file, 'utf8')).toBe('someone else')
  })
})
