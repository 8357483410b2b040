import {describe, expect, it} from 'vitest'

import {ByteMembers, KeySlots, ReusedObjectScan, ScannedBytes, scanObjectBytes} from '../../../src/json/byte-scan.js'
import {MAX_NESTING} from '../../../src/json/input-policy.js'
import {scanObjectMembers} from '../../../src/json/index.js'

/** The text scanner's verdict on a line: its members and non-finite flag, or 'rejected'. */
function byText(text: string): {members: [string, string][]; hasNonFinite: boolean} | 'rejected' {
  try {
    const scanned = scanObjectMembers(text)
    return scanned ? {members: [...scanned.members], hasNonFinite: scanned.hasNonFinite} : 'rejected'
  } catch {
    return 'rejected'
  }
}

function byBytes(text: string): {members: [string, string][]; hasNonFinite: boolean} | 'rejected' {
  const scanned = scanObjectBytes(Buffer.from(text))
  if (!scanned) return 'rejected'
  const keys = byText(text) === 'rejected' ? [] : (byText(text) as {members: [string, string][]}).members.map(([key]) => key)
  return {members: keys.map((key) => [key, scanned.members.get(key)!]), hasNonFinite: scanned.hasNonFinite}
}

const LINES = [
  '{}',
  ' { } ',
  '{"a":1}',
  '{"a":1,"b":[1,2,{"c":null}],"d":"x\\"y","e":true,"f":false}',
  '{"a" : 1 , "b" :\t"two" }',
  '{"a":1,"a":2}',
  '{"a":1,"\\u0061":2}',
  '{"k\\n":"v","é":"ü ✓","\\ud800":1}',
  '{"n":-0.5e+10,"m":0,"o":1E400,"p":-1.5E+309}',
  `{"a":${'9'.repeat(400)}.0}`,
  `{"a":${'9'.repeat(400)}}`,
  '{"a":"1e400"}',
  '{"s":"' + 'long plain text '.repeat(40) + '"}',
  '{"s":"tab\\there\\u00e9\\/"}',
  // refused
  '',
  '[1]',
  '"s"',
  '12',
  '{"a":1,}',
  '{"a":01}',
  '{"a":1.}',
  '{"a":-}',
  '{"a":.5}',
  '{"a":1e}',
  '{"a":tru}',
  '{"a":nul}',
  '{"a":NaN}',
  '{"a":"x\\q"}',
  '{"a":"x\\u12g4"}',
  '{"a":"tab\there"}',
  '{"a":"unterminated}',
  '{"a" 1}',
  '{a:1}',
  '{"a":[1,2}',
  '{"a":{"b":1]}',
  '{"a":1} x',
  '{"a":1}{}',
  '{"a":[1 2]}',
]

describe('scanObjectBytes', () => {
  it('gives the text scanner’s verdict, members and non-finite flag', () => {
    for (const text of LINES) expect(byBytes(text), text).toEqual(byText(text))
  })

  it('agrees with the text scanner on every cut of a real line', () => {
    const line = '{"responses_create_params":{"input":[{"role":"user","content":"Q ✓ \\"x\\""}],"temperature":1.0},"reward":0.0,"_ng_task_index":816786053508853583,"ok":[true,false,null,-1e-3]}'
    for (let end = 0; end <= line.length; end++) {
      const cut = line.slice(0, end)
      expect(byBytes(cut), cut).toEqual(byText(cut))
      const patched = `${line.slice(0, end)}#${line.slice(end)}`
      expect(byBytes(patched), patched).toEqual(byText(patched))
    }
  })

  it('splits the nested key’s object value as the text scanner does', () => {
    const nestedOf = (text: string, scanned: {nested?: {get(key: string): string | undefined}} | undefined) => {
      const byText = scanObjectMembers(text, 'task')?.nested
      return {text: byText && [...byText], bytes: byText && [...byText.keys()].map((key) => [key, scanned?.nested?.get(key)])}
    }
    const lines = [
      '{"task":{"a":1,"b":[{"c":2}]},"x":0}',
      '{"x":0, "task" : { "a" : "✓" , "a" : null } }',
      '{"task":{}}',
      '{"task":{"a":1},"task":[1]}',
      '{"task":[1],"task":{"b":2}}',
      '{"other":{"task":{"a":1}}}',
    ]
    for (const text of lines) {
      const scanned = scanObjectBytes(Buffer.from(text), 'task')
      const {text: expected, bytes} = nestedOf(text, scanned)
      expect(bytes, text).toEqual(expected)
      expect(scanned?.nested === undefined, text).toBe(expected === undefined)
    }
    const line = '{"scenario_id":"s","task":{"responses_create_params":{"input":[]},"n":1.5e3,"s":"✓\\n"},"provenance":{}}'
    for (let end = 0; end <= line.length; end++) {
      const cut = line.slice(0, end)
      expect(scanObjectBytes(Buffer.from(cut), 'task') === undefined, cut).toBe(byText(cut) === 'rejected')
    }
    const deep = (depth: number) => `{"task":{"a":${'['.repeat(depth)}${']'.repeat(depth)}}}`
    expect(scanObjectBytes(Buffer.from(deep(MAX_NESTING - 2)), 'task')).toBeDefined()
    expect(scanObjectBytes(Buffer.from(deep(MAX_NESTING - 1)), 'task')).toBeUndefined()
    expect(byText(deep(MAX_NESTING - 1))).toBe('rejected')
    expect(byText(deep(MAX_NESTING - 2))).not.toBe('rejected')
  })

  it('refuses nesting at the input policy limit, as the text scanner does', () => {
    const deep = (depth: number) => `{"a":${'['.repeat(depth)}${']'.repeat(depth)}}`
    expect(scanObjectBytes(Buffer.from(deep(MAX_NESTING - 1)))).toBeDefined()
    expect(scanObjectBytes(Buffer.from(deep(MAX_NESTING)))).toBeUndefined()
    expect(byText(deep(MAX_NESTING))).toBe('rejected')
  })

  it('decodes keys with escapes and compares non-ASCII keys as text', () => {
    const {members} = scanObjectBytes(Buffer.from('{"\\u0061":1,"é":2,"Ã©":3}'))!
    expect(members.get('a')).toBe('1')
    expect(members.get('é')).toBe('2')
    expect(members.get('Ã©')).toBe('3')
    expect(members.get('b')).toBeUndefined()
  })

  it('reads a line inside a larger buffer at its own offset', () => {
    const block = Buffer.from('{"x":"first line, long enough for word reads"}\n{"y":"second ✓ line, also long enough"}')
    const second = block.subarray(block.indexOf(10) + 1)
    expect(scanObjectBytes(second)?.members.get('y')).toBe('"second ✓ line, also long enough"')
    expect(scanObjectBytes(block)).toBeUndefined()
  })

  it('finds a set of keys in one pass: the last member of each, escaped keys decoded', () => {
    const slots = new KeySlots(['a', 'bb', 'cc', 'missing', 'é'.length === 1 ? 'dd' : ''])
    const found = new Int32Array(slots.keys.length)
    const {members} = scanObjectBytes(Buffer.from('{"a":1,"bb":2,"\\u0063c":3,"a":4,"é":5,"xyz":6,"dd":7}'))!
    slots.locate(members, found)
    const valueOf = (k: number) => (found[k] === -1 ? undefined : members.bytes.toString('utf8', members.spans[found[k] + 2], members.spans[found[k] + 3]))
    expect(slots.keys.map((_, k) => valueOf(k))).toEqual(['4', '2', '3', undefined, '7'])
    slots.locate(scanObjectBytes(Buffer.from('{}'))!.members, found)
    expect([...found]).toEqual([-1, -1, -1, -1, -1])
    expect(() => new KeySlots(['é'])).toThrow(/printable ASCII/)
  })
})

/** Everything a scan found, as plain values: each member in order (key decoded), the flags, the nested members. */
function snapshot(scanned: ScannedBytes | undefined): unknown {
  if (!scanned) return 'rejected'
  const list = (members: ByteMembers) => {
    const out: [string, string][] = []
    for (let m = 0; m < members.spanLength; m += 4) {
      out.push([members.escapedKeyAt(m) ?? members.bytes.toString('utf8', members.keyStart(m), members.keyEnd(m)), members.valueAt(m)])
    }
    return {out, plain: members.hasPlainDistinctKeys()}
  }
  return {members: list(scanned.members), hasNonFinite: scanned.hasNonFinite, nested: scanned.nested && list(scanned.nested)}
}

describe('ReusedObjectScan', () => {
  const nestedLines = [
    '{"task":{"a":1,"b":[{"c":2}],"\\u0064":"escaped","e":3,"f":4},"x":0}',
    '{"task":{"a":1},"task":[1]}',
    '{"task":{"z":9}}',
    '{"x":1e400}',
    '{"task":{}}',
    '{"task":{"a":' + '['.repeat(MAX_NESTING) + ']'.repeat(MAX_NESTING) + '}}',
    '{"task":{"a":1}',
    '{"task":{"only":"one"}}',
  ]

  it('finds on each line exactly what a fresh scan finds, whatever the lines before it held', () => {
    const reused = new ReusedObjectScan()
    const sequence = [...LINES, ...[...LINES].reverse(), ...nestedLines, ...[...nestedLines].reverse()]
    for (const text of sequence) {
      const nested = text.includes('"task"') ? 'task' : undefined
      expect(snapshot(reused.scan(Buffer.from(text), nested)), text).toEqual(snapshot(scanObjectBytes(Buffer.from(text), nested)))
    }
  })

  it('forgets the keys of a longer line before: lookups see only the current members', () => {
    const reused = new ReusedObjectScan()
    reused.scan(Buffer.from('{"a":1,"b":2,"\\u0063":3,"d":{"e":5}}'), 'd')
    const scanned = reused.scan(Buffer.from('{"b":"two"}'), 'd')!
    expect(scanned.members.get('b')).toBe('"two"')
    for (const gone of ['a', 'c', 'd']) expect(scanned.members.indexOf(gone), gone).toBe(-1)
    expect(scanned.members.escapedKeyAt(8)).toBeUndefined()
    expect(scanned.nested).toBeUndefined()
    const slots = new KeySlots(['a', 'b', 'c'])
    const found = new Int32Array(3)
    slots.locate(scanned.members, found)
    expect([...found]).toEqual([-1, 0, -1])
    // the stale span of "a" would point at the a inside the new value
    reused.scan(Buffer.from('{"b":1,"a":2}'))
    const shorter = reused.scan(Buffer.from('{"b":"xya"}'))!
    expect(shorter.members.get('a')).toBeUndefined()
    slots.locate(shorter.members, found)
    expect([...found]).toEqual([-1, 0, -1])
  })

  it('scans a valid line right after one refused deep inside its nesting', () => {
    const reused = new ReusedObjectScan()
    const deep = `{"a":${'[{"b":'.repeat(20)}[${'x'}`
    expect(reused.scan(Buffer.from(deep))).toBeUndefined()
    expect(snapshot(reused.scan(Buffer.from('{"a":[[1],{"b":[2]}],"c":3}')))).toEqual({members: {out: [['a', '[[1],{"b":[2]}]'], ['c', '3']], plain: true}, hasNonFinite: false, nested: undefined})
  })
})
