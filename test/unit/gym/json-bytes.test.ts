import {describe, expect, it} from 'vitest'

import {KeySlots, scanObjectBytes} from '../../../src/gym/json-bytes.js'
import {MAX_NESTING} from '../../../src/gym/input-policy.js'
import {scanObjectMembers} from '../../../src/gym/json.js'

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
