/**
 * The TypeScript version of Relax's conversion against the fixture checkout's convert_dataset.py (run with
 * python3) on rows of every form it handles, plus Python's str() of numbers.
 */
import {describe, expect, it} from 'vitest'

import {isJsonObject, stringifyJson} from '../../src/json/index.js'
import {convertRow, expectedInConverted, jsonDifferences, parseRow, pythonFloatRepr, pythonStr} from '../../src/ladder/data/convert.js'
import {runConvertDataset} from '../../src/runtime/convert-dataset.js'
import {FIXTURE_CONVERTER} from '../helpers/data-rung.js'

const ROWS = [
  // Calendar: verifier state at the top level, empty tools.
  '{"responses_create_params": {"input": [{"role": "user", "content": "hi"}], "tools": []}, "exp_cal_state": {"0": {"event_id": 0, "duration": 60}}}',
  // Workplace: tools, parallel_tool_calls and temperature (which stays under metadata.responses_create_params).
  '{"id": 7, "responses_create_params": {"input": [{"role": "system", "content": "s"}], "tools": [{"type": "function", "name": "f"}], "parallel_tool_calls": false, "temperature": 1.0}, "ground_truth": [{"name": "f", "arguments": "{}"}], "category": "c", "environment_name": "workplace_assistant"}',
  // Instructions become the developer message; an empty one is dropped.
  '{"responses_create_params": {"input": "plain text prompt", "instructions": "be brief"}, "x": 1e5}',
  '{"responses_create_params": {"input": [], "instructions": ""}, "x": 12345678901234567890}',
  // R2E: empty input with a problem statement; instance_dict passes through.
  '{"responses_create_params": {"input": [], "metadata": {"instance_dict": "{\\"a\\": 1}"}}, "instance_id": "o__r-1", "problem_statement": "Fix the bug"}',
  // GSM8K: no responses_create_params; expected_answer stringified the Python way.
  '{"question": "1+1?", "expected_answer": 2}',
  '{"question": "half?", "expected_answer": 0.5}',
  '{"question": "big?", "expected_answer": 1e16}',
  '{"question": "float?", "expected_answer": 5.0}',
  '{"question": "bool?", "expected_answer": true}',
]

describe("Relax's conversion in TypeScript", () => {
  it('agrees with convert_dataset.py on every row form', async () => {
    const outcome = await runConvertDataset(FIXTURE_CONVERTER, ROWS)
    if (outcome.status !== 'converted') throw new Error(JSON.stringify(outcome))
    expect(outcome.lines).toHaveLength(ROWS.length)
    ROWS.forEach((text, k) => {
      const raw = parseRow(text)
      if (!isJsonObject(raw)) throw new Error('not an object')
      const ours = convertRow(raw)
      const python = parseRow(outcome.lines[k])
      expect({row: k, differences: jsonDifferences({input: ours.input, metadata: ours.metadata}, python)}).toEqual({row: k, differences: []})
    })
  })

  it('maps each verifier field to where the conversion puts it', () => {
    const raw = parseRow(ROWS[1])
    if (!isJsonObject(raw)) throw new Error('not an object')
    const paths = ['responses_create_params.input', 'responses_create_params.tools', 'responses_create_params.temperature', 'ground_truth'].map((f) => expectedInConverted(raw, f)?.path.join('.'))
    expect(paths).toEqual(['input', 'metadata.tools', 'metadata.responses_create_params.temperature', 'metadata.ground_truth'])
    expect(expectedInConverted(raw, 'exp_cal_state')).toBeUndefined()
  })

  it('rejects a row that is neither a Gym row nor a question row', () => {
    expect(() => convertRow({prompt: 'x'} as any)).toThrow('row has no responses_create_params object')
    expect(stringifyJson(convertRow(parseRow(ROWS[4]) as any) as any)).toContain('"input":[{"role":"user","content":"Fix the bug"}]')
  })

  it('spells numbers as Python str() does', () => {
    expect([0.5, 1e16, 1e15, 5, 1e-5, 0.0001, -2.5e-7, 123.456].map(pythonFloatRepr)).toEqual(['0.5', '1e+16', '1000000000000000.0', '5.0', '1e-05', '0.0001', '-2.5e-07', '123.456'])
    expect(pythonStr(parseRow('-0') as any)).toBe('0')
    expect(pythonStr(parseRow('1.50') as any)).toBe('1.5')
    expect(pythonStr(null)).toBe('None')
  })
})
