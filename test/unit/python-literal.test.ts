/**
 * The payloads a generated verify_<recipe>.py carries are Python literals a person can read;
 * Python itself must read them back as the same values (checked with the real python3).
 */
import {execa} from 'execa'
import {describe, expect, it} from 'vitest'

import {pythonLiteral} from '../../src/scaffold/python-literal.js'

const VALUES: unknown[] = [
  null,
  true,
  [],
  {},
  {a: 1, b: [1.5, -2, 1e21], c: {d: null, e: false}},
  {text: 'quote " backslash \\ tab \t newline \n control \u0001 é ✓ 日本 😀', 'key "with" quotes': 'x'},
  [{type: 'function_call', arguments: JSON.stringify({query: 'Carlos "Task" Update'}), status: 'completed'}, {type: 'message', content: [{type: 'output_text', text: 'Done.'}]}],
]

describe('Python literals in generated files', () => {
  it('read back in python3 as the same values as the JSON they come from', async () => {
    const program = `import ast, json, sys\nfor line in sys.stdin.read().split("\\0")[:-1]:\n    literal, text = line.split("\\1")\n    assert ast.literal_eval(literal) == json.loads(text), (literal, text)\nprint("ok")`
    const input = VALUES.map((value) => `${pythonLiteral(value)}\u0001${JSON.stringify(value)}\u0000`).join('')
    const result = await execa('python3', ['-c', program], {input, reject: false})
    expect(result.stderr).toBe('')
    expect(result.stdout).toBe('ok')
  })

  it('lay long collections out one item per line, four spaces deep, and keep short ones on one line', () => {
    expect(pythonLiteral({a: [1, 2], b: null})).toBe('{"a": [1, 2], "b": None}')
    expect(pythonLiteral({long: 'x'.repeat(70), other: true})).toBe(`{\n    "long": "${'x'.repeat(70)}",\n    "other": True,\n}`)
    expect(pythonLiteral([Number.POSITIVE_INFINITY, Number.NaN])).toBe('[float("inf"), float("nan")]')
  })
})
