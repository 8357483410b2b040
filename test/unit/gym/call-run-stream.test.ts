import {execFileSync} from 'node:child_process'
import {promises as fsp, readlinkSync} from 'node:fs'
import {appendFile, mkdtemp, readFile, stat, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {afterEach, describe, expect, it, vi} from 'vitest'

import {parseCallConfig} from '../../../src/gym/call/config.js'
import {runCall, type RunCallOptions} from '../../../src/gym/call/run.js'
import type {HttpRequest, HttpResponse, HttpTransport} from '../../../src/runtime/call-transport.js'

/** A transport without a network: answers from a function and counts requests per row marker. */
function fakeTransport(answer: (req: HttpRequest) => Promise<HttpResponse> | HttpResponse = () => ok()): HttpTransport & {calls: string[]} {
  const t = {
    calls: [] as string[],
    openRowClient() {
      return {
        async request(req: HttpRequest) {
          t.calls.push(JSON.parse(req.body).row)
          return answer(req)
        },
        close() {},
      }
    },
  }
  return t
}

const ok = (body = '{"ok":true}'): HttpResponse => ({status: 200, headers: {'content-type': 'application/json'}, body})

const config = (extra = '') => parseCallConfig(`name: execution\nendpoint: http://service.test\nroute: /execute\nrow_id_column: id\nrequest_columns: {row: id}\n${extra}`, 'resource')

async function workspace(rows: object[]): Promise<{dir: string; input: string; output: string; evidenceDir: string}> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'gr-call-stream-'))
  const input = path.join(dir, 'rows.jsonl')
  await writeFile(input, rows.map((r) => JSON.stringify(r)).join('\n') + '\n')
  return {dir, input, output: path.join(dir, 'out.jsonl'), evidenceDir: path.join(dir, 'evidence')}
}

async function run(ws: Awaited<ReturnType<typeof workspace>>, options: Partial<RunCallOptions> & {config?: ReturnType<typeof config>}) {
  return runCall({config: options.config ?? config(), input: ws.input, output: ws.output, evidenceDir: ws.evidenceDir, env: {}, ...options})
}

const outputIds = async (file: string) => (await readFile(file, 'utf8')).trim().split('\n').map((l) => JSON.parse(l).id)

describe('streamed run: memory bounds', () => {
  it('starts no row further than the ordering window ahead of the oldest unfinished row', async () => {
    const ws = await workspace(Array.from({length: 40}, (_, i) => ({id: `r${i}`})))
    let open: () => void = () => undefined
    const gate = new Promise<void>((resolve) => (open = resolve))
    const transport = fakeTransport(async (req) => {
      if (JSON.parse(req.body).row === 'r0') await gate
      return ok()
    })
    const done = run(ws, {config: config('max_parallel_requests: 4\n'), transport, window: {inFlight: 4, evidenceChars: 1e9, rows: 8, chars: 1e9}})
    await new Promise((r) => setTimeout(r, 200))
    // r0 is stuck: r1..r7 may run and wait for it, nothing beyond
    expect(transport.calls.length).toBeLessThanOrEqual(8)
    expect(transport.calls).toContain('r7')
    expect(transport.calls).not.toContain('r8')
    open()
    const summary = await done
    expect(summary).toMatchObject({rows: 40, completed: 40})
    expect(await outputIds(ws.output)).toEqual(Array.from({length: 40}, (_, i) => `r${i}`))
  })

  it('also bounds the characters of finished lines waiting for an earlier row', async () => {
    const ws = await workspace(Array.from({length: 300}, (_, i) => ({id: `r${i}`, pad: 'p'.repeat(500)})))
    let open: () => void = () => undefined
    const gate = new Promise<void>((resolve) => (open = resolve))
    const transport = fakeTransport(async (req) => {
      if (JSON.parse(req.body).row === 'r0') await gate
      return ok()
    })
    const done = run(ws, {config: config('max_parallel_requests: 8\n'), transport, window: {inFlight: 16, evidenceChars: 1e9, rows: 1000, chars: 4000}})
    await new Promise((r) => setTimeout(r, 200))
    // each finished line is ~1 KB: about four of them fit in 4000 characters, plus at most 16 rows in flight
    expect(transport.calls.length).toBeLessThan(30)
    open()
    expect(await done).toMatchObject({completed: 300})
    expect((await outputIds(ws.output))[299]).toBe('r299')
  })
})

describe('streamed run: resume over a multi-chunk input', () => {
  const rows = Array.from({length: 6000}, (_, i) => ({id: `r${i}`, pad: 'x'.repeat(300 + (i % 97))}))

  it('resumes from a journal read back by position, keeps input order and repairs a record cut short', async () => {
    const ws = await workspace(rows)
    expect((await stat(ws.input)).size).toBeGreaterThan(2 * 1024 * 1024)
    const controller = new AbortController()
    const first = fakeTransport()
    const interrupted = await run(ws, {transport: first, signal: controller.signal, onProgress: (p) => p.finished >= 2500 && controller.abort()})
    expect(interrupted.interrupted).toBe(true)
    const recorded = interrupted.finished
    expect(recorded).toBeGreaterThanOrEqual(2500)
    await expect(stat(ws.output)).rejects.toThrow()

    // a killed writer leaves half a record without its newline
    const journal = path.join(ws.evidenceDir, 'journal.jsonl')
    await appendFile(journal, '{"i":5999,"line":6000,"attempt_id":"cut-sho')

    const second = fakeTransport()
    const resumed = await run(ws, {transport: second, resume: true})
    expect(resumed).toMatchObject({rows: 6000, finished: 6000, resumed: recorded, completed: 6000, interrupted: false})
    // finished rows were not called again, all others exactly once
    expect(second.calls).toHaveLength(6000 - recorded)
    expect(new Set([...first.calls.slice(0, 0), ...second.calls]).size).toBe(6000 - recorded)
    expect(await outputIds(ws.output)).toEqual(rows.map((r) => r.id))
    // the cut record stayed on its own line: the journal holds every row exactly once
    const lines = (await readFile(journal, 'utf8')).trim().split('\n')
    expect(lines).toContain('{"i":5999,"line":6000,"attempt_id":"cut-sho')
    const indices = lines.slice(1).flatMap((l) => (l.endsWith('}') ? [JSON.parse(l).i] : []))
    expect(new Set(indices).size).toBe(6000)
    expect(indices).toHaveLength(6000)

    // resuming a finished run calls nothing and writes the same output
    const before = await readFile(ws.output, 'utf8')
    const third = fakeTransport()
    expect(await run(ws, {transport: third, resume: true})).toMatchObject({resumed: 6000, completed: 6000})
    expect(third.calls).toHaveLength(0)
    expect(await readFile(ws.output, 'utf8')).toBe(before)
  })

  it('stops without an output when the rows file changes under a running call', async () => {
    const ws = await workspace(rows)
    const original = await readFile(ws.input, 'utf8')
    let changed = false
    const transport = fakeTransport(async () => {
      if (!changed) {
        changed = true
        // same length, different last row: only the fingerprint can tell
        await writeFile(ws.input, `${original.slice(0, -3)}y"}\n`)
      }
      return ok()
    })
    const error = await run(ws, {transport}).catch((e) => e)
    expect(error.code).toBe('E_CALL_INPUT_CHANGED')
    await expect(stat(ws.output)).rejects.toThrow()
  })
})

describe('a finished run on disk', () => {
  afterEach(() => vi.restoreAllMocks())

  it('syncs the attempts, the journal and the output before the output is moved into place', async () => {
    const ws = await workspace(Array.from({length: 50}, (_, i) => ({id: `r${i}`})))
    const probe = await fsp.open(ws.input, 'r')
    const proto = Object.getPrototypeOf(probe)
    await probe.close()
    const events: string[] = []
    const {sync: realSync} = proto
    vi.spyOn(proto, 'sync').mockImplementation(async function (this: {fd: number}) {
      const file = path.basename(readlinkSync(`/proc/self/fd/${this.fd}`))
      await realSync.call(this)
      events.push(`synced ${file}`)
    })
    const realRename = fsp.rename
    vi.spyOn(fsp, 'rename').mockImplementation(async (from, to) => {
      events.push(`renamed ${path.basename(String(to))}`)
      return realRename(from, to)
    })
    expect(await run(ws, {transport: fakeTransport()})).toMatchObject({completed: 50})
    const renamed = events.indexOf('renamed out.jsonl')
    expect(renamed).toBeGreaterThan(0)
    const before = events.slice(0, renamed)
    expect(before.filter((e) => e === 'synced journal.jsonl')).toHaveLength(2) // the header, then the rest
    expect(before.some((e) => /^synced \d{8}T\d{6}Z-\d+\.jsonl$/u.test(e))).toBe(true)
    expect(before.some((e) => /^synced \.out\.jsonl\..*\.tmp$/u.test(e))).toBe(true)
  })

  it('writes an output that is a device or a pipe in place, without syncing it', async () => {
    const ws = await workspace(Array.from({length: 5}, (_, i) => ({id: `r${i}`})))
    expect(await run(ws, {output: '/dev/null', transport: fakeTransport()})).toMatchObject({completed: 5, output: '/dev/null'})
    const fifo = path.join(ws.dir, 'out.fifo')
    execFileSync('mkfifo', [fifo])
    const read = readFile(fifo, 'utf8')
    expect(await run(ws, {output: fifo, evidenceDir: path.join(ws.dir, 'evidence-fifo'), transport: fakeTransport()})).toMatchObject({completed: 5})
    expect((await read).trim().split('\n').map((l) => JSON.parse(l).id)).toEqual(['r0', 'r1', 'r2', 'r3', 'r4'])
  })
})
