/**
 * The byte-level JSONL scanner against the JSON grammar: a differential test against
 * JSON.parse (which implements RFC 8259 exactly) on generated valid and broken rows, fed in
 * chunks of every awkward size, plus the counting edge cases wc -l and naive splitting get wrong.
 */
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {describe, expect, it} from 'vitest'

import {skipStringBody} from '../../src/json/byte-scan.js'
import {JsonlScanner, type JsonlStats, scanJsonlFile} from '../../src/ladder/data/jsonl-scan.js'
import {newStringSkipper} from '../../src/ladder/data/string-skip.js'
import {assembledStringSkipper} from '../helpers/string-skipper.js'

const FIELDS = ['responses_create_params.input', 'exp_cal_state']

function scan(bytes: Uint8Array, chunk = 1 << 16, fields: readonly string[] = FIELDS): JsonlStats {
  const scanner = new JsonlScanner({fields})
  for (let at = 0; at < bytes.length; at += chunk) scanner.push(bytes.subarray(at, at + chunk))
  return scanner.end()
}

const encode = (text: string) => new TextEncoder().encode(text)

/** A deterministic PRNG so failures reproduce. */
function prng(seed: number): () => number {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function randomValue(rand: () => number, depth: number): unknown {
  const pick = Math.floor(rand() * (depth > 3 ? 5 : 7))
  switch (pick) {
    case 0:
      return null
    case 1:
      return rand() < 0.5
    case 2:
      return [0, -1, 1.5, -0.25e-3, 12345678901234, 1e21, 3.0][Math.floor(rand() * 7)]
    case 3:
    case 4: {
      const alphabet = ['a', ' ', '"', '\\', '\n', '\t', '\u2019', '\u00e9', '😀', '{', '}', '\u0001', '/']
      let s = ''
      const n = Math.floor(rand() * 12)
      for (let k = 0; k < n; k++) s += alphabet[Math.floor(rand() * alphabet.length)]
      return s
    }
    case 5:
      return Array.from({length: Math.floor(rand() * 4)}, () => randomValue(rand, depth + 1))
    default: {
      const out: Record<string, unknown> = {}
      for (let k = 0; k < Math.floor(rand() * 4); k++) out[['input', 'exp_cal_state', 'k"q', 'tools', 'x'][Math.floor(rand() * 5)]] = randomValue(rand, depth + 1)
      return out
    }
  }
}

/** Break a valid JSON text in one of the ways real files break. */
function mutate(text: string, rand: () => number): string {
  const at = Math.floor(rand() * (text.length + 1))
  const kinds = [
    () => text.slice(0, at), // truncated
    () => text.slice(0, at) + text.slice(at + 1), // a byte lost
    () => text.slice(0, at) + ['"', ',', '}', ']', ':', 'x', '\\', '\t', '-', '0', 'e', ' ', '\u0000'][Math.floor(rand() * 13)] + text.slice(at), // a byte added
    () => `${text} ${text}`, // two values on one line
    () => text.replace(/\d/, 'NaN'),
  ]
  return kinds[Math.floor(rand() * kinds.length)]()
}

function parsesAsObject(text: string): boolean {
  try {
    const value = JSON.parse(text)
    return typeof value === 'object' && value !== null && !Array.isArray(value)
  } catch {
    return false
  }
}

/** Generated rows, every other one broken; one physical line each. */
function generatedRows(seed: number, count: number): string[] {
  const rand = prng(seed)
  const lines: string[] = []
  for (let k = 0; k < count; k++) {
    const value = k % 3 === 0 ? randomValue(rand, 0) : {responses_create_params: {input: randomValue(rand, 1)}, exp_cal_state: randomValue(rand, 1)}
    let text = JSON.stringify(value) ?? 'null'
    if (k % 2 === 1) text = mutate(text, rand)
    if (text.includes('\n') || text.trim() === '') text = '{}' // one physical line per row, never blank
    lines.push(text)
  }
  return lines
}

describe('the WebAssembly string skipper does what the JavaScript one does', () => {
  it('stops at the same byte on random string bodies: quotes, controls, valid, invalid and cut escapes', async () => {
    const module = await assembledStringSkipper()
    const skipper = newStringSkipper(module, 1, 1 << 16)
    const memory = new Uint8Array(skipper.memory)
    const rand = prng(7)
    const pieces = ['a', 'bcdefghijklmnopq', '\\n', '\\"', '\\\\', '\\/', '\\u00e9', '\\u12G4', '\\u12', '\\x', '\\', '"', '\t', '\u0001', '\u007f', 'é', '😀']
    for (let k = 0; k < 3000; k++) {
      let text = ''
      const n = 1 + Math.floor(rand() * 12)
      for (let p = 0; p < n; p++) text += pieces[Math.floor(rand() * pieces.length)]
      const bytes = encode(text)
      // the same body at several offsets, so the 16-byte steps fall differently
      const at = Math.floor(rand() * 32)
      const end = at + Math.floor(rand() * (bytes.length + 1))
      memory.set(bytes, at)
      const chunk = memory.subarray(0, end)
      const js = skipStringBody(chunk, new DataView(chunk.buffer, 0, end), at)
      expect(skipper.skip(at, end), JSON.stringify({text, at, end})).toBe(js)
    }
  })

  it('gives the same statistics as the JavaScript path on 4000 generated rows, in chunks of 1 to 65536 bytes', async () => {
    const module = await assembledStringSkipper()
    const lines = generatedRows(20261202, 4000)
    const bytes = encode(lines.join('\n') + '\n')
    for (const chunk of [1, 5, 16, 17, 64, 65536]) {
      const skipper = newStringSkipper(module, 1, chunk)
      const withSkipper = new JsonlScanner({fields: FIELDS, maxProblems: 1_000_000, skipper})
      const plain = new JsonlScanner({fields: FIELDS, maxProblems: 1_000_000})
      for (let at = 0; at < bytes.length; at += chunk) {
        const piece = bytes.subarray(at, at + chunk)
        skipper.buffers[0].set(piece)
        withSkipper.push(skipper.buffers[0].subarray(0, piece.length))
        plain.push(piece)
      }
      const expected = plain.end()
      expect(expected.badRows).toBeGreaterThan(1000)
      expect(withSkipper.end()).toEqual(expected)
    }
  })

  it('scanJsonlFile reads into the skipper\'s memory, with the same result as without it', async () => {
    const module = await assembledStringSkipper()
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gr-skip-'))
    try {
      const file = path.join(dir, 'rows.jsonl')
      writeFileSync(file, generatedRows(99, 600).join('\n') + '\n')
      for (const chunkBytes of [7, 4096, 1 << 20]) {
        const expected = await scanJsonlFile(file, {fields: FIELDS, maxProblems: 10_000, chunkBytes, wasm: null})
        expect(await scanJsonlFile(file, {fields: FIELDS, maxProblems: 10_000, chunkBytes, wasm: module})).toEqual(expected)
      }
    } finally {
      rmSync(dir, {recursive: true, force: true})
    }
  })
})

describe('JSON grammar: the scanner agrees with JSON.parse', () => {
  it('on 4000 generated valid and broken rows, in chunks of 1, 3, 7, 64 and 65536 bytes', () => {
    const rand = prng(20260829)
    const lines: string[] = []
    for (let k = 0; k < 4000; k++) {
      const value = k % 3 === 0 ? randomValue(rand, 0) : {responses_create_params: {input: randomValue(rand, 1)}, exp_cal_state: randomValue(rand, 1)}
      let text = JSON.stringify(value) ?? 'null'
      if (k % 2 === 1) text = mutate(text, rand)
      if (text.includes('\n') || text.trim() === '') text = '{}' // one physical line per row, never blank
      lines.push(text)
    }
    const expectedBad = lines.map((l, k) => (parsesAsObject(l) ? 0 : k + 1)).filter(Boolean)
    const bytes = encode(lines.join('\n') + '\n')
    for (const chunk of [1, 3, 7, 64, 65536]) {
      const scanner = new JsonlScanner({fields: FIELDS, maxProblems: 1_000_000})
      for (let at = 0; at < bytes.length; at += chunk) scanner.push(bytes.subarray(at, at + chunk))
      const stats = scanner.end()
      expect(stats.rows).toBe(4000)
      expect(stats.problems.map((p) => p.line)).toEqual(expectedBad)
      expect(stats.badRows).toBe(expectedBad.length)
    }
  })

  it('finds verifier fields exactly where JSON.parse does, escaped keys included', () => {
    const rand = prng(7)
    const rows: string[] = []
    const expected = [0, 0]
    for (let k = 0; k < 2000; k++) {
      const row: Record<string, unknown> = {}
      if (rand() < 0.7) row.responses_create_params = rand() < 0.8 ? {input: rand() < 0.9 ? [{role: 'user', content: 'hi'}] : null} : 'not an object'
      if (rand() < 0.7) row.exp_cal_state = rand() < 0.9 ? {'0': {event_id: 0}} : null
      row.noise = randomValue(rand, 2)
      const rcp = row.responses_create_params as any
      if (!(rcp && typeof rcp === 'object' && rcp.input != null)) expected[0]++
      if (row.exp_cal_state == null) expected[1]++
      // Spell some keys with escapes: still the same key.
      rows.push(JSON.stringify(row).replace('"exp_cal_state"', rand() < 0.3 ? '"exp_cal\\u005fstate"' : '"exp_cal_state"'))
    }
    for (const chunk of [5, 4096]) {
      const stats = scan(encode(rows.join('\n')), chunk)
      expect(stats.objectRows).toBe(2000)
      expect(stats.missing.map((m) => m.rows)).toEqual(expected)
    }
  })
})

describe('duplicate keys', () => {
  it('keep their last value, as json.loads and the converter do (a later null makes the field missing)', () => {
    const rows = [
      '{"responses_create_params":{"input":[]},"exp_cal_state":{},"exp_cal_state":null}',
      '{"responses_create_params":{"input":[]},"exp_cal_state":null,"exp_cal_state":{"0":{}}}',
      '{"responses_create_params":{"input":[]},"responses_create_params":{"tools":[]},"exp_cal_state":{}}',
      '{"responses_create_params":{"input":null},"responses_create_params":{"input":[1]},"exp_cal_state":{}}',
    ]
    for (const chunk of [3, 4096]) {
      const stats = scan(encode(rows.join('\n')), chunk)
      // Exactly where JSON.parse (last value wins) says a field is missing or null.
      const expected = FIELDS.map((field) => rows.filter((r) => {
        const value = field.split('.').reduce((v: any, k) => (v && typeof v === 'object' ? v[k] : undefined), JSON.parse(r))
        return value == null
      }).length)
      expect(expected).toEqual([1, 1])
      expect(stats.missing.map((m) => [m.rows, m.lines])).toEqual([[1, [3]], [1, [1]]])
    }
  })
})

describe('row counting', () => {
  const row = '{"responses_create_params":{"input":[]},"exp_cal_state":{}}'

  it('counts a last line without a newline, where wc -l says one less', () => {
    const stats = scan(encode(`${row}\n${row}`))
    expect(stats).toMatchObject({rows: 2, newlines: 1, lines: 2, finalNewline: false, badRows: 0})
  })

  it('skips blank and whitespace-only lines, CRLF ones too', () => {
    const stats = scan(encode(`\n${row}\r\n\r\n  \t\n${row}\r\n\n`))
    expect(stats).toMatchObject({rows: 2, blankLines: 4, crlfLines: 3, badRows: 0, objectRows: 2})
  })

  it('reports a UTF-8 byte order mark and still counts the first row', () => {
    const stats = scan(new Uint8Array([0xef, 0xbb, 0xbf, ...encode(`${row}\n${row}\n`)]), 2)
    expect(stats).toMatchObject({bom: true, rows: 2, badRows: 0})
  })

  it('gives the line and byte of invalid UTF-8, also when a chunk cuts the character', () => {
    const bad = new Uint8Array([...encode(`${row}\n{"a":"é`), 0xc3, 0x28, ...encode('"}\n'), ...encode(`${row}\n`)])
    for (const chunk of [1, 2, 3, 100]) {
      const stats = scan(bad, chunk)
      expect(stats.problems).toEqual([{line: 2, column: 9, reason: 'invalid UTF-8 at byte 9'}]) // after {"a":"é (8 bytes)
      expect(stats.rows).toBe(3)
    }
  })

  it('flags a character cut off by the end of the file', () => {
    const stats = scan(new Uint8Array([...encode('{"a":"'), 0xe2, 0x80]))
    expect(stats.problems[0]).toMatchObject({line: 1, reason: 'invalid UTF-8 at byte 7'})
  })
})
