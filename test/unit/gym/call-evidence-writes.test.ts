import {promises as fsp} from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {PassThrough} from 'node:stream'
import {afterEach, describe, expect, it, vi} from 'vitest'

import {EvidenceDir, FLUSH_MS, JOURNAL_SCHEMA} from '../../../src/gym/call/evidence.js'
import {OrderedOutput} from '../../../src/gym/call/pass.js'

const header = {journal: JOURNAL_SCHEMA, command: 'resource', column: 'execution', config_sha256: 'c', input_sha256: 'i', rows: 4, started_at: '2026-01-01T00:00:00.000Z'} as const

async function openEvidence(): Promise<EvidenceDir> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'gr-evidence-writes-'))
  return (await EvidenceDir.open(path.join(dir, 'ev'), {...header}, false)).evidence
}

/** Real turns of the event loop with file-system round trips (timers may be faked). */
async function ioRounds(n = 20): Promise<void> {
  for (let i = 0; i < n; i++) await fsp.stat(os.tmpdir())
}

/** A function telling whether p has settled yet. */
function watchSettled(p: Promise<unknown>): () => boolean {
  let settled = false
  void p.then(
    () => (settled = true),
    () => (settled = true),
  )
  return () => settled
}

/** Whether p settles within a few I/O round trips: for asserting that something does not happen yet. */
async function settlesSoon(p: Promise<unknown>): Promise<boolean> {
  const settled = watchSettled(p)
  await ioRounds()
  return settled()
}

/**
 * Wait, in real I/O round trips (timers may be faked), until check() holds or 10 s of wall time
 * have passed; returns whether it held. For asserting that something does happen without a
 * timer: a busy machine may need more round trips than an idle one.
 */
async function eventually(check: () => boolean | Promise<boolean>): Promise<boolean> {
  const end = Date.now() + 10_000
  while (!(await check()) && Date.now() < end) await ioRounds(1)
  return check()
}

/** Whether p settles without any timer firing (see eventually). */
async function settles(p: Promise<unknown>): Promise<boolean> {
  return eventually(watchSettled(p))
}

/** The prototype every fs.promises FileHandle shares, to watch its syncs. */
async function fileHandlePrototype(): Promise<{sync(): Promise<void>; datasync(): Promise<void>}> {
  const handle = await fsp.open(os.tmpdir(), 'r')
  const proto = Object.getPrototypeOf(handle)
  await handle.close()
  return proto
}

afterEach(() => {
  vi.useRealTimers()
  vi.restoreAllMocks()
})

describe('attempt batches once the input is read', () => {
  it('are written at once: no row waits for the batching delay after the last row started', async () => {
    const evidence = await openEvidence()
    // the batching delay never passes unless the test says so
    vi.useFakeTimers({toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval']})
    const early = evidence.appendAttempt('{"row":1}')
    expect(await settlesSoon(early.written)).toBe(false)

    evidence.inputDone()
    expect(await settles(early.written)).toBe(true)
    const late = evidence.appendAttempt('{"row":2}')
    expect(await settles(late.written)).toBe(true)
    vi.useRealTimers()

    await evidence.close()
    const segment = late.ref.split(':')[0]
    expect(await fsp.readFile(path.join(evidence.dir, segment), 'utf8')).toBe('{"row":1}\n{"row":2}\n')
    expect([early.ref, late.ref].map((ref) => ref.split(':')[1])).toEqual(['1', '2'])
  })

  it('are batched while rows may still start', async () => {
    const evidence = await openEvidence()
    vi.useFakeTimers({toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval']})
    const a = evidence.appendAttempt('{"row":1}')
    const b = evidence.appendAttempt('{"row":2}')
    expect(await settlesSoon(Promise.any([a.written, b.written]))).toBe(false)
    vi.advanceTimersByTime(FLUSH_MS)
    expect(await settles(Promise.all([a.written, b.written]))).toBe(true)
    vi.useRealTimers()
    await evidence.close()
  })
})

describe('finished rows', () => {
  it('reach the journal and the output at the next turn, with no timer: their attempts were written already', async () => {
    const evidence = await openEvidence()
    const stream = new PassThrough()
    const written: string[] = []
    stream.on('data', (chunk: Buffer) => written.push(chunk.toString()))
    const output = new OrderedOutput(stream)
    vi.useFakeTimers({toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval']})
    // the rows of one attempt batch finish in the same turn, out of order
    evidence.recordFinished(1, 2, 'b', '{"execution":{"n":2}}')
    output.put(1, '{"n":2}\n')
    evidence.recordFinished(0, 1, 'a', '{"execution":{"n":1}}')
    output.put(0, '{"n":1}\n')
    const journalPath = path.join(evidence.dir, 'journal.jsonl')
    let journal = ''
    // the header and both rows in the journal, and the output written
    await eventually(async () => {
      journal = await fsp.readFile(journalPath, 'utf8')
      return journal.trimEnd().split('\n').length === 3 && written.length > 0
    })
    expect(journal.trimEnd().split('\n').slice(1).map((line) => JSON.parse(line).i)).toEqual([1, 0])
    // one write for both, in input order
    expect(written).toEqual(['{"n":1}\n{"n":2}\n'])
    vi.useRealTimers()
    await evidence.close()
    await output.close()
  })
})

describe('evidence syncs', () => {
  it('start in the background as a file grows, never hold up a write, and finish before close', async () => {
    const proto = await fileHandlePrototype()
    const {datasync: realDatasync, sync: realSync} = proto
    let release: () => void = () => undefined
    const held = new Promise<void>((resolve) => (release = resolve))
    // what happened to each file, by descriptor
    const events = new Map<number, string[]>()
    const note = (handle: {fd: number}, event: string) => events.set(handle.fd, [...(events.get(handle.fd) ?? []), event])
    const datasync = vi.spyOn(proto, 'datasync').mockImplementation(async function (this: {fd: number}) {
      await held
      await realDatasync.call(this)
      note(this, 'datasync')
    })
    vi.spyOn(proto, 'sync').mockImplementation(function (this: {fd: number}) {
      note(this, 'sync')
      return realSync.call(this)
    })
    const evidence = await openEvidence()
    events.clear()
    evidence.inputDone()

    // one attempt of more than 4 MiB starts a background sync of its segment
    const big = evidence.appendAttempt(`{"text":"${'x'.repeat(5 * 1024 * 1024)}"}`)
    await big.written
    expect(await eventually(() => datasync.mock.calls.length >= 1)).toBe(true)
    await ioRounds()
    expect(datasync).toHaveBeenCalledTimes(1)
    // the sync is held, yet the next attempt is written
    const next = evidence.appendAttempt('{"row":2}')
    expect(await settles(next.written)).toBe(true)

    // the journal too: more than 4 MiB of finished rows
    evidence.recordFinished(0, 1, 'a', `{"execution":{"response_json":"${'y'.repeat(5 * 1024 * 1024)}"}}`)
    expect(await eventually(() => datasync.mock.calls.length >= 2)).toBe(true)
    await ioRounds()
    expect(datasync).toHaveBeenCalledTimes(2)
    evidence.recordFinished(1, 2, 'b', '{"execution":{}}')

    // close waits for the syncs under way, then syncs the rest of both files
    const closed = evidence.close()
    expect(await settlesSoon(closed)).toBe(false)
    release()
    await closed
    // both files: the background sync finished before the last one began
    expect([...events.values()]).toEqual([
      ['datasync', 'sync'],
      ['datasync', 'sync'],
    ])

    const journal = await fsp.readFile(path.join(evidence.dir, 'journal.jsonl'), 'utf8')
    expect(journal.trimEnd().split('\n').map((line) => JSON.parse(line).i)).toEqual([undefined, 0, 1])
  })

  it('are not started for a file that grew less than 4 MiB', async () => {
    const proto = await fileHandlePrototype()
    const datasync = vi.spyOn(proto, 'datasync')
    const evidence = await openEvidence()
    evidence.inputDone()
    await evidence.appendAttempt(`{"text":"${'x'.repeat(1024 * 1024)}"}`).written
    evidence.recordFinished(0, 1, 'a', '{"execution":{}}')
    await evidence.close()
    expect(datasync).not.toHaveBeenCalled()
  })
})
