import {mkdtemp, readFile, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {PassThrough} from 'node:stream'
import {describe, expect, it} from 'vitest'

import {parseCallConfig} from '../../../src/gym/call/config.js'
import {EvidenceDir, JOURNAL_SCHEMA, type RecordedRows} from '../../../src/gym/call/evidence.js'
import type {AttemptWriter, RowCallContext, RowOutcome} from '../../../src/gym/call/lifecycle/index.js'
import {Limiter} from '../../../src/gym/call/limiter.js'
import {CallPass, OrderedOutput, runWindow} from '../../../src/gym/call/pass.js'
import type {HttpTransport} from '../../../src/runtime/call-transport.js'
import {waitFor} from '../../helpers/ray-fixture.js'

const NO_ROWS: RecordedRows = {size: 0, has: () => false, read: () => Promise.reject(new Error('none')), close: async () => undefined}

/** Answers every request at once and records the row it carried. */
function instantTransport(): HttpTransport & {calls: string[]} {
  const t = {
    calls: [] as string[],
    openRowClient() {
      return {
        async request(req: {body: string}) {
          t.calls.push(JSON.parse(req.body).row)
          return {status: 200, headers: {'content-type': 'application/json'}, body: '{"ok":true}'}
        },
        close() {},
      }
    },
  }
  return t
}

/** Attempt storage whose writes finish only when `open()` is called; counts what is queued like EvidenceDir. */
function gatedEvidence(): AttemptWriter & {open(): void; pendingChars: number} {
  let release: () => void = () => undefined
  const gate = new Promise<void>((resolve) => (release = resolve))
  let opened = false
  let line = 0
  const writer = {
    pendingChars: 0,
    writeAttempt: async () => 'unused',
    appendAttempt(text: string) {
      line++
      if (opened) return {ref: `attempts/a.jsonl:${line}`, written: Promise.resolve()}
      writer.pendingChars += text.length + 1
      return {ref: `attempts/a.jsonl:${line}`, written: gate}
    },
    open() {
      opened = true
      writer.pendingChars = 0
      release()
    },
  }
  return writer
}

async function rowsFile(count: number): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'gr-call-window-'))
  const file = path.join(dir, 'rows.jsonl')
  await writeFile(file, Array.from({length: count}, (_, i) => JSON.stringify({id: `r${i}`})).join('\n') + '\n')
  return file
}

describe('call pass: the window over rows waiting for their evidence', () => {
  it('starts no row while the attempts waiting to be written hold evidenceChars characters, and resumes once they are written', async () => {
    const input = await rowsFile(60)
    const transport = instantTransport()
    const evidence = gatedEvidence()
    const ctx: RowCallContext = {
      config: parseCallConfig('name: execution\nendpoint: http://service.test\nroute: /execute\nrow_id_column: id\nrequest_columns: {row: id}\nmax_parallel_requests: 4\n', 'resource'),
      transport,
      bearerTokens: new Map(),
      limiter: new Limiter(4),
      cancel: new AbortController().signal,
      evidence,
    }
    const outcomes: RowOutcome[] = []
    const sink = new PassThrough()
    sink.resume()
    // each attempt line is well over 500 characters: the bound is reached after a few rows, far below inFlight
    const pass = new CallPass(ctx, new AbortController(), new OrderedOutput(sink), NO_ROWS, {inFlight: 1000, evidenceChars: 2000, rows: 1000, chars: 1e9}, (_i, _l, _r, outcome) => outcomes.push(outcome))
    ctx.limiter.onRelease = pass.wakeUp
    const done = pass.run(input)
    // rows start until their waiting attempts reach the bound; a busy machine takes longer to get there
    await waitFor(async () => evidence.pendingChars ?? 0, (chars) => chars >= 2000, 10_000, 'attempts waiting to reach the evidence bound')
    // and no further row starts, however long the writes are held
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(evidence.pendingChars).toBeGreaterThanOrEqual(2000)
    expect(transport.calls.length).toBeGreaterThan(0)
    expect(transport.calls.length).toBeLessThan(10)
    expect(outcomes).toHaveLength(0)
    evidence.open()
    expect(await done).toMatchObject({complete: true})
    expect(transport.calls).toHaveLength(60)
    expect(outcomes.every((o) => o.state === 'finished')).toBe(true)
  })

  it('leaves room for a few batches of rows on a fast service by default, and bounds their attempt characters', () => {
    expect(runWindow(4)).toEqual({inFlight: 2048, evidenceChars: 64 * 1024 * 1024, rows: 4096, chars: 64 * 1024 * 1024})
    expect(runWindow(1024)).toEqual({inFlight: 16384, evidenceChars: 64 * 1024 * 1024, rows: 16384, chars: 64 * 1024 * 1024})
  })
})

describe('evidence directory: characters of attempts waiting to be written', () => {
  it('counts each queued attempt line until its batch is written', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'gr-call-pending-'))
    const header = {journal: JOURNAL_SCHEMA, command: 'resource', column: 'execution', config_sha256: 'c', input_sha256: 'i', rows: 2, started_at: new Date().toISOString()} as const
    const {evidence} = await EvidenceDir.open(dir, header, false)
    expect(evidence.pendingChars).toBe(0)
    const a = evidence.appendAttempt('{"a":1}')
    const b = evidence.appendAttempt('{"b":22}')
    expect(evidence.pendingChars).toBe('{"a":1}\n'.length + '{"b":22}\n'.length)
    await Promise.all([a.written, b.written])
    expect(evidence.pendingChars).toBe(0)
    await evidence.close()
    const [segment] = a.ref.split(':')
    expect(await readFile(path.join(dir, segment), 'utf8')).toBe('{"a":1}\n{"b":22}\n')
  })
})
