/**
 * The byte-level JSONL scanner against the JSON grammar: a differential test against
 * JSON.parse (which implements RFC 8259 exactly) on generated valid and broken rows, fed in
 * chunks of every awkward size, plus the counting edge cases wc -l and naive splitting get wrong.
 */
import {describe, expect, it} from 'vitest'

import {JsonlScanner, type JsonlStats} from '../../src/ladder/data/jsonl-scan.js'

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
