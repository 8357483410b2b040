import {createHash} from 'node:crypto'
import {mkdtemp, readFile, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {describe, expect, it} from 'vitest'

import {isGymError} from '../../../src/errors.js'
import {parseCallConfig} from '../../../src/gym/call/config.js'
import {DeadlineQueue} from '../../../src/gym/call/deadlines.js'
import {scanRows} from '../../../src/gym/call/input.js'
import {LineReader} from '../../../src/json/jsonl-reader.js'
import {parseFast} from '../../../src/json/index.js'
import {parseJson, stringifyJson} from '../../../src/json/index.js'

const config = parseCallConfig('name: execution\nendpoint: http://127.0.0.1:1\nroute: /x\nrequest_values: {a: 1}\n', 'resource')

async function file(text: string | Buffer): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'gr-call-input-'))
  const p = path.join(dir, 'rows.jsonl')
  await writeFile(p, text)
  return p
}

async function allTexts(p: string): Promise<{line: number; text: string}[]> {
  const reader = await LineReader.open(p, {hash: true})
  const out: {line: number; text: string}[] = []
  for (let lines = await reader.nextTexts(); lines; lines = await reader.nextTexts()) lines.forEach((text, i) => out.push({line: reader.firstLine + i, text}))
  await reader.close()
  return out
}

describe('streamed input', () => {
  it('reads lines across chunk boundaries, multi-byte characters included, with their line numbers', async () => {
    // ~3 MiB: lines of varying length with a 4-byte character placed so some straddle a chunk boundary
    const lines = Array.from({length: 30_000}, (_, i) => JSON.stringify({i, pad: 'x'.repeat(i % 150), emoji: i % 7 === 0 ? '𝄞é' : ''}))
    const text = lines.join('\n') + '\n'
    const p = await file(text)
    const got = await allTexts(p)
    expect(got.filter((l) => l.text !== '').map((l) => l.text)).toEqual(lines)
    expect(got.filter((l) => l.text !== '').map((l) => l.line)).toEqual(lines.map((_, i) => i + 1))
    const reader = await LineReader.open(p, {hash: true})
    while (await reader.next()) {
      // drain with offsets this time
    }
    expect(reader.digest()).toBe(createHash('sha256').update(await readFile(p)).digest('hex'))
    await reader.close()
  })

  it('joins a line spanning many chunks, multi-byte characters on the seams, with its offset (both read paths)', async () => {
    // lines of 3 MiB and 1 MiB + 1 between short ones: each arrives in many pieces
    const long = `{"pad":"${'é𝄞x'.repeat(400_000)}"}`
    const lines = ['{"a":1}', long, '{"b":2}', `{"q":"${'q'.repeat((1 << 20) + 1)}"}`, '{"c":3}']
    const p = await file(lines.join('\n') + '\n')
    expect((await allTexts(p)).map((l) => l.text)).toEqual(lines)
    const reader = await LineReader.open(p)
    const got = []
    for (let chunk = await reader.next(); chunk; chunk = await reader.next()) got.push(...chunk)
    await reader.close()
    expect(got.map((l) => l.text)).toEqual(lines)
    const bytes = await readFile(p)
    for (const l of got) expect(bytes.subarray(l.offset, l.offset + l.bytes).toString()).toBe(l.text)
    // and a file whose last line has no newline
    const q = await file(lines.slice(0, 2).join('\n'))
    expect((await allTexts(q)).map((l) => l.text)).toEqual(lines.slice(0, 2))
  })

  it('gives byte offsets and lengths of each line (what the journal index keeps)', async () => {
    const text = '{"a":1}\n\n{"é":2}\r\n{"c":3}'
    const p = await file(text)
    const reader = await LineReader.open(p)
    const lines = []
    for (let chunk = await reader.next(); chunk; chunk = await reader.next()) lines.push(...chunk)
    await reader.close()
    const bytes = Buffer.from(text)
    for (const l of lines) expect(bytes.subarray(l.offset, l.offset + l.bytes).toString()).toBe(l.text)
    expect(lines.map((l) => l.line)).toEqual([1, 2, 3, 4])
    expect(reader.endsWithNewline).toBe(false)
  })

  it('validates every row before anything runs and counts only non-blank lines', async () => {
    expect(await scanRows(await file('{"a":1}\n\n  \n{"b":2}\r\n{}'), config)).toMatchObject({rows: 3})
    const cases: [string, string, number][] = [
      ['{"a":1}\n{"a": oops}\n', 'not valid JSON', 2],
      ['{"a":1}\n\n[1, 2]\n', 'a row must be a JSON object', 3],
      ['{"execution": 1}\n', 'already has a field named execution', 1],
    ]
    for (const [text, message, line] of cases) {
      const error = await scanRows(await file(text), config).catch((e) => e)
      expect(isGymError(error)).toBe(true)
      expect(error.exit).toBe(2)
      expect(error.message).toContain(message)
      expect(error.location.line).toBe(line)
    }
    // the lossless parser words the syntax error (position in the line)
    const worded = await scanRows(await file('{"id": oops}\n'), config).catch((e) => e)
    expect(worded.message).toMatch(/not valid JSON \(.*position/)
  })
})

describe('row and response parsing', () => {
  it('parseFast gives the lossless result for every number spelling', () => {
    for (const text of [
      '{"a":1,"b":-2,"c":123456789012345}',
      '{"big":12345678901234567890,"f":1.0,"e":1e5,"neg0":-0,"s":"2020-01-01"}',
      '[0.1,-0.0,9007199254740993,1E+2]',
      '{"nested":{"x":[1,{"y":2.50}]}}',
    ]) {
      expect(stringifyJson(parseFast(text))).toBe(stringifyJson(parseJson(text)))
      expect(stringifyJson(parseFast(text))).toBe(text.replace('1E+2', '1E+2'))
    }
  })

  it('keeps the last value of a repeated key, as JSON.parse and Python do', () => {
    expect(stringifyJson(parseJson('{"a":1,"b":2,"a":3}'))).toBe('{"a":3,"b":2}')
    expect(stringifyJson(parseFast('{"a":1,"a":{"x":2}}'))).toBe('{"a":{"x":2}}')
  })
})

describe('deadline queue', () => {
  const target = () => {
    const t = {reasons: [] as unknown[], abort: (reason: unknown) => t.reasons.push(reason)}
    return t
  }

  it('aborts in insertion order after the delay, skips removed entries and stops its timer when empty', async () => {
    const queue = new DeadlineQueue(40)
    const a = target()
    const b = target()
    const c = target()
    queue.add(a)
    const eb = queue.add(b)
    await new Promise((r) => setTimeout(r, 10))
    queue.add(c)
    queue.remove(eb)
    expect(queue.size).toBe(2)
    await new Promise((r) => setTimeout(r, 45))
    expect(a.reasons).toEqual(['timeout'])
    expect(b.reasons).toEqual([])
    await new Promise((r) => setTimeout(r, 20))
    expect(c.reasons).toEqual(['timeout'])
    expect(queue.size).toBe(0)
  })

  it('starts empty, with no timer of its own, although it exercised every path when it was made', async () => {
    const timersBefore = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length
    const queue = new DeadlineQueue(30)
    expect(queue.size).toBe(0)
    expect(process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length).toBe(timersBefore)
    const first = target()
    queue.add(first)
    await new Promise((r) => setTimeout(r, 50))
    expect(first.reasons).toEqual(['timeout'])
  })

  it('handles many removals without growing (compaction) and still fires the live ones', async () => {
    const queue = new DeadlineQueue(30)
    const live = target()
    const entries = Array.from({length: 5000}, () => queue.add(target()))
    queue.add(live)
    for (const e of entries) queue.remove(e)
    expect(queue.size).toBe(1)
    await new Promise((r) => setTimeout(r, 60))
    expect(live.reasons).toEqual(['timeout'])
  })
})
