import {execFileSync} from 'node:child_process'
import {describe, expect, it} from 'vitest'

import {type JsonObject, parseJson} from '../../../src/json/index.js'
import {canonicalJson, defaultScenarioId, isEncodableId, taskIndexOf} from '../../../src/gym/tasks/identity.js'
import {compareCodePoints, pythonFloatRepr, pythonStrip} from '../../../src/gym/tasks/python.js'
import {dumpTask} from '../../../src/gym/tasks/task.js'

// reference/dd-gym.md §2.4: canonical task JSON → scenario ID → task index, from the Python plugin.
const VECTORS: [namespace: string, canonical: string, scenarioId: string, index: bigint][] = [
  ['gym', '{"responses_create_params":{"input":[]}}', 'gym-01732a9ae2948a2b', 355290082996455839n],
  ['gym', '{"responses_create_params":{}}', 'gym-60e072d48b5a9fbd', 1024050751247152232n],
  ['gym', '{"responses_create_params":{"input":[{"content":"hi","role":"user"}]}}', 'gym-25ada14b88710ed6', 430764473211824978n],
  ['gym', '{"responses_create_params":{"input":[],"temperature":1.0}}', 'gym-cb63fdb6c89b7197', 830695983884191632n],
  ['gym', '{"responses_create_params":{"input":[],"temperature":1}}', 'gym-3d2ae3031a6bf2f1', 642698502481996655n],
  ['gym', '{"responses_create_params":{"input":[{"content":"h\\u00e9llo \\ud83d\\ude00","role":"user"}]}}', 'gym-a7649d2bd66bc53c', 50941257973737265n],
  ['email', '{"responses_create_params":{"input":[]}}', 'email-01732a9ae2948a2b', 461998204944626674n],
]

describe('scenario identity (reference §2.4 vectors)', () => {
  for (const [namespace, canonical, scenarioId, index] of VECTORS) {
    it(`${canonical} in namespace ${namespace} → ${scenarioId}`, () => {
      const task = parseJson(canonical) as JsonObject
      expect(canonicalJson(task)).toBe(canonical)
      expect(defaultScenarioId(task, namespace)).toBe(scenarioId)
      expect(taskIndexOf(scenarioId)).toBe(index)
    })
  }

  it('hashes the same task from raw (unescaped, unsorted, spaced) JSON to the same ID', () => {
    const task = parseJson('{"responses_create_params": {"input": [{"role": "user", "content": "héllo 😀"}]}}') as JsonObject
    expect(defaultScenarioId(task, 'gym')).toBe('gym-a7649d2bd66bc53c')
  })

  it('gives the first 15 hex digits of SHA-256(scenario ID) as the task index for arbitrary IDs', () => {
    expect(taskIndexOf('gym-01732a9ae2948a2b').toString(16)).toBe('4ee3e72b539099f')
    const ids: [string, bigint][] = [
      ['s1', 1048143972598214168n],
      ['s2', 780011709654993714n],
      ['x', 204651429991967492n],
      ['a', 912392414677810140n],
      ['my-environment-1', 71516939767815341n],
      ['  ', 486804315532386998n],
    ]
    for (const [id, index] of ids) expect(taskIndexOf(id)).toBe(index)
  })

  it('keeps 60-bit indices exact where a double could not tell them apart', () => {
    const index = taskIndexOf('s1')
    expect(index > 2n ** 53n).toBe(true)
    expect(Number(index)).toBe(Number(index + 1n))
    expect(taskIndexOf('s1').toString()).toBe('1048143972598214168')
  })

  it('refuses IDs that Python cannot encode (lone surrogates)', () => {
    expect(isEncodableId('ok 😀')).toBe(true)
    expect(isEncodableId('bad \ud800')).toBe(false)
    expect(isEncodableId('bad \ude00 too')).toBe(false)
  })
})

describe('canonical JSON', () => {
  it('escapes like Python ensure_ascii: short escapes, lowercase \\uXXXX, DEL and surrogate pairs', () => {
    expect(canonicalJson('q"b\\s/\b\f\n\r\t\u0001\u007f~é😀')).toBe('"q\\"b\\\\s/\\b\\f\\n\\r\\t\\u0001\\u007f~\\u00e9\\ud83d\\ude00"')
  })

  it('sorts keys by code point, not by UTF-16 unit, at every depth', () => {
    const value = parseJson('{"😀":1,"\uffff":2,"b":{"z":1,"a":2},"B":3}')
    expect(canonicalJson(value)).toBe('{"B":3,"b":{"a":2,"z":1},"\\uffff":2,"\\ud83d\\ude00":1}')
    expect(compareCodePoints('\uffff', '😀')).toBeLessThan(0)
    expect(['😀', '\uffff'].sort()).toEqual(['😀', '\uffff'])
  })

  it('spells numbers as Python does: ints as ints (any size), floats by repr', () => {
    const value = parseJson('[1, -0, 1.0, 1e16, 1E-5, -0.0, 1.50, 100e-2, 123456789012345678901234567890, 1.2345678901234567e23, 5e-324]')
    expect(canonicalJson(value)).toBe('[1,0,1.0,1e+16,1e-05,-0.0,1.5,1.0,123456789012345678901234567890,1.2345678901234567e+23,5e-324]')
  })

  it('drops top-level nulls only (the plugin dumps tasks with exclude_none)', () => {
    const task = dumpTask(parseJson('{"x":null,"agent_ref":null,"responses_create_params":{"input":[],"stop":null},"y":[null]}') as JsonObject)
    expect(canonicalJson(task)).toBe('{"responses_create_params":{"input":[],"stop":null},"y":[null]}')
    expect(Object.keys(task)).toEqual(['responses_create_params', 'y'])
  })
})

describe('pythonFloatRepr', () => {
  it('matches known Python reprs', () => {
    const cases: [number, string][] = [
      [1, '1.0'],
      [1e16, '1e+16'],
      [1e15, '1000000000000000.0'],
      [1e-5, '1e-05'],
      [0.0001, '0.0001'],
      [-0, '-0.0'],
      [0, '0.0'],
      [0.1, '0.1'],
      [2.5e-5, '2.5e-05'],
      [123456789.123, '123456789.123'],
      [1e22, '1e+22'],
      [1.5e300, '1.5e+300'],
      [5e-324, '5e-324'],
      [1.7976931348623157e308, '1.7976931348623157e+308'],
      [-1234.5, '-1234.5'],
    ]
    for (const [value, repr] of cases) expect(pythonFloatRepr(value)).toBe(repr)
  })

  it('matches python3 repr() on random doubles of every magnitude', () => {
    const view = new DataView(new ArrayBuffer(8))
    const values: number[] = []
    let seed = 12_345
    while (values.length < 2000) {
      for (let i = 0; i < 8; i++) {
        seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
        view.setUint8(i, seed >> 16)
      }
      const value = view.getFloat64(0)
      if (Number.isFinite(value)) values.push(value)
    }
    const script = 'import struct,sys\nfor h in sys.stdin.read().split():\n    print(repr(struct.unpack(">d", bytes.fromhex(h))[0]))'
    const input = values
      .map((value) => {
        view.setFloat64(0, value)
        return Buffer.from(view.buffer).toString('hex')
      })
      .join('\n')
    const reprs = execFileSync('python3', ['-c', script], {input, encoding: 'utf8'}).trim().split('\n')
    expect(values.map((value) => pythonFloatRepr(value))).toEqual(reprs)
  })
})

describe('pythonStrip', () => {
  it("strips Python's whitespace set, which differs from JS trim()", () => {
    expect(pythonStrip('\x1c a \x85')).toBe('a')
    expect(pythonStrip('\ufeffa')).toBe('\ufeffa')
    expect(pythonStrip(' \t\n ')).toBe('')
  })
})
