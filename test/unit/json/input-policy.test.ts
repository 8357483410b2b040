/**
 * One input policy for every JSONL reader: the line reader (tasks, rollouts, call), the lossless
 * object readers and the data rung's byte scanner refuse the same lines for the same reasons, and
 * accept the same spellings Python accepts.
 */
import {mkdtemp, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {beforeAll, describe, expect, it} from 'vitest'

import {scanRows} from '../../../src/gym/call/input.js'
import type {CallConfig} from '../../../src/gym/call/types.js'
import {MAX_NESTING, maxLineBytes, mayHoldNonFinite, nestsDeeperThan, POLICY_MESSAGES} from '../../../src/json/input-policy.js'
import {parseLosslessObjectLine, readJsonlLines, scanObjectLine} from '../../../src/json/index.js'
import {JsonlPolicyError, LineReader} from '../../../src/json/jsonl-reader.js'
import {JsonlScanner} from '../../../src/ladder/data/jsonl-scan.js'

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'gr-policy-'))
})

async function file(name: string, content: string | Buffer): Promise<string> {
  const p = path.join(dir, name)
  await writeFile(p, content)
  return p
}

async function readAll(p: string, maxLineBytes?: number): Promise<string[]> {
  const reader = await LineReader.open(p, {maxLineBytes})
  const out: string[] = []
  try {
    for (let lines = await reader.nextTexts(); lines; lines = await reader.nextTexts()) out.push(...lines)
  } finally {
    await reader.close()
  }
  return out
}

async function readAllWithOffsets(p: string, maxLineBytes?: number): Promise<string[]> {
  const reader = await LineReader.open(p, {maxLineBytes})
  const out: string[] = []
  try {
    for (let lines = await reader.next(); lines; lines = await reader.next()) out.push(...lines.map((l) => l.text))
  } finally {
    await reader.close()
  }
  return out
}

async function readAllBytes(p: string, maxLineBytes?: number): Promise<string[]> {
  const reader = await LineReader.open(p, {maxLineBytes})
  const out: string[] = []
  try {
    while (await reader.nextByteBlock()) for (let line = reader.nextByteLine(); line; line = reader.nextByteLine()) out.push(line.toString('utf8'))
  } finally {
    await reader.close()
  }
  return out
}

function scanLines(text: string | Buffer, options: {maxLineBytes?: number; chunk?: number} = {}) {
  const bytes = typeof text === 'string' ? Buffer.from(text) : text
  const scanner = new JsonlScanner({fields: ['a'], maxLineBytes: options.maxLineBytes})
  const chunk = options.chunk ?? 1 << 16
  for (let at = 0; at < bytes.length; at += chunk) scanner.push(bytes.subarray(at, at + chunk))
  return scanner.end()
}

const deep = (n: number) => `{"a":${'['.repeat(n)}${']'.repeat(n)}}`

describe('the line reader', () => {
  const readers = [
    ['nextTexts', readAll],
    ['next', readAllWithOffsets],
    ['nextByteLine', readAllBytes],
  ] as const

  it.each(readers)('%s: refuses a byte order mark as line 1', async (_name, read) => {
    const p = await file('bom.jsonl', '\uFEFF{"a":1}\n')
    await expect(read(p)).rejects.toMatchObject({name: 'JsonlPolicyError', line: 1, message: POLICY_MESSAGES.bom})
  })

  it.each(readers)('%s: refuses invalid UTF-8 with its line, never replacing it by U+FFFD', async (_name, read) => {
    const p = await file('utf8.jsonl', Buffer.concat([Buffer.from('{"a":1}\n{"a":2}\n{"a":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}\n')]))
    await expect(read(p)).rejects.toMatchObject({line: 3, message: POLICY_MESSAGES.utf8})
  })

  it.each(readers)('%s: refuses a line over the limit, also one that spans many chunks, naming it', async (_name, read) => {
    const long = `{"a":"${'x'.repeat(3 << 20)}"}`
    const p = await file('long.jsonl', `{"a":1}\n${long}\n{"a":2}\n`)
    await expect(read(p, 1 << 20)).rejects.toMatchObject({line: 2, message: 'line is longer than the 1 MiB limit'})
    expect((await read(p, 4 << 20)).filter(Boolean)).toHaveLength(3)
  })

  it.each(readers)('%s: refuses a line over the limit in the middle of a chunk, naming it', async (_name, read) => {
    const p = await file('middle.jsonl', `{"a":1}\n\n{"a":"${'x'.repeat(200)}"}\n{"a":2}\n`)
    await expect(read(p, 100)).rejects.toMatchObject({line: 3, message: 'line is longer than the 100 bytes limit'})
    expect((await read(p, 300)).filter(Boolean)).toHaveLength(3)
  })

  it.each(readers)('%s: counts bytes, not characters, against a small limit', async (_name, read) => {
    const p = await file('multibyte.jsonl', `{"a":"${'é'.repeat(30)}"}\n`) // 68 bytes, 38 characters
    await expect(read(p, 60)).rejects.toBeInstanceOf(JsonlPolicyError)
    expect((await read(p, 68)).filter(Boolean)).toEqual([`{"a":"${'é'.repeat(30)}"}`])
  })

  it('reads the default limit from GYMRECIPE_MAX_LINE_BYTES, ignoring nonsense', () => {
    expect(maxLineBytes({})).toBe(64 << 20)
    expect(maxLineBytes({GYMRECIPE_MAX_LINE_BYTES: '1024'})).toBe(1024)
    expect(maxLineBytes({GYMRECIPE_MAX_LINE_BYTES: '-5'})).toBe(64 << 20)
    expect(maxLineBytes({GYMRECIPE_MAX_LINE_BYTES: 'lots'})).toBe(64 << 20)
  })

  it('readJsonlLines words policy violations as E_JSONL_INVALID at the line', async () => {
    const p = await file('bom2.jsonl', '\uFEFF{"a":1}\n')
    const read = async () => {
      for await (const _ of readJsonlLines(p, 'ROWS')) void _
    }
    await expect(read()).rejects.toMatchObject({code: 'E_JSONL_INVALID', exit: 2, location: {file: p, line: 1}, hint: POLICY_MESSAGES.bomHint})
  })
})

describe('nesting', () => {
  it('finds nesting past the limit, outside strings only', () => {
    expect(nestsDeeperThan(deep(MAX_NESTING - 1))).toBe(false) // the object itself is one level
    expect(nestsDeeperThan(deep(MAX_NESTING))).toBe(true)
    expect(nestsDeeperThan(`{"a":"${'['.repeat(5000)}"}`)).toBe(false)
    expect(nestsDeeperThan(`{"a":"\\"${'['.repeat(5000)}"}`)).toBe(false)
  })

  it('is refused by every object reader with the same message, not a stack overflow', async () => {
    const text = deep(100_000)
    expect(() => parseLosslessObjectLine({line: 4, text}, 'f.jsonl')).toThrow(expect.objectContaining({code: 'E_JSONL_INVALID', message: POLICY_MESSAGES.nesting, location: {file: 'f.jsonl', line: 4}}))
    expect(() => scanObjectLine({line: 4, text}, 'f.jsonl')).toThrow(expect.objectContaining({code: 'E_JSONL_INVALID', message: POLICY_MESSAGES.nesting}))
    const stats = scanLines(`{"a":1}\n${text}\n`)
    expect(stats.problems).toEqual([{line: 2, column: 6 + MAX_NESTING - 1, reason: POLICY_MESSAGES.nesting}])
    expect(scanLines(`${deep(MAX_NESTING - 1)}\n`).problems).toEqual([])
  })

  it('puts the limit where nestsDeeperThan does, also when a nested object is split in the same pass', () => {
    // the object, its member "t" and then arrays: MAX_NESTING levels in all are accepted
    const inside = (n: number) => `{"t":{"a":${'['.repeat(n)}${']'.repeat(n)}}}`
    expect(scanObjectLine({line: 1, text: deep(MAX_NESTING - 1)}, 'f.jsonl').members.size).toBe(1)
    expect(() => scanObjectLine({line: 1, text: deep(MAX_NESTING)}, 'f.jsonl')).toThrow(expect.objectContaining({message: POLICY_MESSAGES.nesting}))
    for (const nested of [undefined, 't']) {
      expect(scanObjectLine({line: 1, text: inside(MAX_NESTING - 2)}, 'f.jsonl', nested).members.size).toBe(1)
      expect(() => scanObjectLine({line: 1, text: inside(MAX_NESTING - 1)}, 'f.jsonl', nested)).toThrow(expect.objectContaining({message: POLICY_MESSAGES.nesting}))
    }
  })
})

describe('numbers', () => {
  it('refuses floats that overflow a double, in the scanner too, also across chunks', () => {
    for (const literal of ['1e400', '-1e400', '1.5E+309', `${'9'.repeat(309)}.0`]) {
      const stats = scanLines(`{"a":1}\n{"b":[${literal}],"a":2}\n`, {chunk: 7})
      expect(stats.problems, literal).toEqual([{line: 2, column: 7, reason: POLICY_MESSAGES.nonFinite}])
      expect(mayHoldNonFinite(literal)).toBe(true)
    }
  })

  it('accepts -0, integers of any size, underflow and 1e308 as Python does', () => {
    for (const literal of ['-0', '-0.0', '12345678901234567890123', '1e-400', '1e308', '1.7976931348623157e308', '9'.repeat(400)]) {
      expect(scanLines(`{"a":${literal}}\n`, {chunk: 3}).problems, literal).toEqual([])
      expect(() => scanObjectLine({line: 1, text: `{"a":${literal}}`}, 'f')).not.toThrow()
    }
  })

  it('is refused by call before anything is sent, naming the field', async () => {
    const p = await file('rows.jsonl', '{"q":1}\n{"q":{"t":1e999}}\n')
    const config = {name: 'out'} as CallConfig
    await expect(scanRows(p, config)).rejects.toMatchObject({code: 'E_CALL_INPUT_INVALID', location: {line: 2, field: 'q.t'}, message: `q.t ${POLICY_MESSAGES.nonFinite}`})
  })
})

describe('the data scanner applies the line limit', () => {
  it('to a line that ends inside one chunk as well', () => {
    const stats = scanLines(`{"a":"${'x'.repeat(300)}"}\n{"a":1}\n`, {maxLineBytes: 200})
    expect(stats.problems).toEqual([{line: 1, column: 201, reason: 'line is longer than the 200 bytes limit'}])
  })

  it('marks an over-long row bad without holding it, and keeps counting', () => {
    const stats = scanLines(`{"a":1}\n{"a":"${'x'.repeat(5000)}"}\n{"a":2}\n`, {maxLineBytes: 1024, chunk: 512})
    expect(stats.rows).toBe(3)
    expect(stats.objectRows).toBe(2)
    expect(stats.problems).toEqual([{line: 2, column: 1025, reason: 'line is longer than the 1 KiB limit'}])
  })
})

describe('call rows', () => {
  it('refuses a BOM, invalid UTF-8 and deep nesting with E_CALL_INPUT_INVALID at the line', async () => {
    const config = {name: 'out'} as CallConfig
    await expect(scanRows(await file('c1.jsonl', '\uFEFF{"q":1}\n'), config)).rejects.toMatchObject({code: 'E_CALL_INPUT_INVALID', exit: 2, location: {line: 1}, message: POLICY_MESSAGES.bom})
    await expect(scanRows(await file('c2.jsonl', Buffer.from([0x7b, 0x22, 0x71, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d, 0x0a])), config)).rejects.toMatchObject({location: {line: 1}, message: POLICY_MESSAGES.utf8})
    await expect(scanRows(await file('c3.jsonl', `{"q":1}\n${deep(2000)}\n`), config)).rejects.toMatchObject({location: {line: 2}, message: POLICY_MESSAGES.nesting})
  })
})
