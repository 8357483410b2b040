import {mkdtemp, readdir, readFile, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {describe, expect, it} from 'vitest'

import {FieldError, LineBuilder, scanObjectMembers} from '../../../src/json/index.js'
import {BundleScanner, exportBundle, exportBundleBytes, exportTasks} from '../../../src/gym/tasks/export.js'

function exported(bundleText: string): string {
  return exportBundle(scanObjectMembers(bundleText, 'task')!)
}

function exportError(bundleText: string): {field: string | undefined; message: string} {
  try {
    exported(bundleText)
  } catch (error) {
    if (error instanceof FieldError) return {field: error.field, message: error.message}
    throw error
  }
  throw new Error('expected the bundle to be rejected')
}

const TASK = '{"responses_create_params":{"input":[]}}'

describe('exportBundle (reference §3)', () => {
  it('adds id, _ng_task_index, _dd_scenario_id and _dd_provenance (reference §7.2 vector)', () => {
    expect(exported('{"scenario_id":"s1","task":{"responses_create_params":{"input":[]}},"provenance":{"seed":1}}')).toBe(
      '{"responses_create_params":{"input":[]},"id":1048143972598214168,"_ng_task_index":1048143972598214168,"_dd_scenario_id":"s1","_dd_provenance":{"seed":1}}',
    )
  })

  it('keeps an existing id (any type) and still adds _ng_task_index', () => {
    const task = JSON.parse(exported(`{"scenario_id":"s1","task":{"responses_create_params":{},"id":"keep-me"}}`))
    expect(task.id).toBe('keep-me')
    expect(Object.keys(task)).toEqual(['responses_create_params', 'id', '_ng_task_index', '_dd_scenario_id'])
  })

  it('drops top-level nulls (agent_ref and extras alike); a null id is replaced by the index', () => {
    expect(exported('{"scenario_id":"s1","task":{"x":null,"agent_ref":null,"id":null,"responses_create_params":{"stop":null}}}')).toBe(
      '{"responses_create_params":{"stop":null},"id":1048143972598214168,"_ng_task_index":1048143972598214168,"_dd_scenario_id":"s1"}',
    )
  })

  it('orders responses_create_params and agent_ref first, then the other members as they came', () => {
    const text = exported('{"scenario_id":"s1","task":{"ground_truth":[1],"agent_ref":{"type":"responses_api_agents","name":"a"},"env":"e","responses_create_params":{}}}')
    expect(Object.keys(JSON.parse(text))).toEqual(['responses_create_params', 'agent_ref', 'ground_truth', 'env', 'id', '_ng_task_index', '_dd_scenario_id'])
  })

  it('copies a task that is already in dumped form as written, spacing included', () => {
    const text = exported('{"scenario_id":"s1", "task": { "responses_create_params" : { "input" : [ ] } , "n" : 1.0 } }')
    expect(text).toBe('{ "responses_create_params" : { "input" : [ ] } , "n" : 1.0 ,"id":1048143972598214168,"_ng_task_index":1048143972598214168,"_dd_scenario_id":"s1"}')
    expect(Object.keys(JSON.parse(text))).toEqual(['responses_create_params', 'n', 'id', '_ng_task_index', '_dd_scenario_id'])
  })

  it('adds no _dd_provenance when provenance is empty or absent', () => {
    expect(exported(`{"scenario_id":"s1","task":${TASK},"provenance":{ }}`)).not.toContain('_dd_provenance')
    expect(exported(`{"scenario_id":"s1","task":${TASK}}`)).not.toContain('_dd_provenance')
  })

  it('copies values exactly: float spellings, integers above 2^53, non-ASCII text', () => {
    const text = exported('{"schema_version":"1","scenario_id":"é-1","task":{"responses_create_params":{"temperature":1.0,"seed":1152921504606846975},"note":"héllo 😀","w":1e-05},"provenance":{"n":9007199254740993}}')
    expect(text).toContain('"temperature":1.0,"seed":1152921504606846975')
    expect(text).toContain('"note":"héllo 😀","w":1e-05')
    expect(text).toContain('"_dd_scenario_id":"é-1","_dd_provenance":{"n":9007199254740993}')
  })

  it('accepts a whitespace-only scenario ID without re-validating the task hash', () => {
    expect(JSON.parse(exported(`{"scenario_id":"  ","task":${TASK}}`))._dd_scenario_id).toBe('  ')
    expect(exported(`{"scenario_id":"  ","task":${TASK}}`)).toContain('"_ng_task_index":486804315532386998')
  })

  it('rejects what GymScenario rejects (reference §7.2)', () => {
    const cases: [string, string | undefined, string][] = [
      [`{"schema_version":1,"scenario_id":"s","task":${TASK}}`, 'schema_version', 'must be the string "1"'],
      [`{"schema_version":"2","scenario_id":"s","task":${TASK}}`, 'schema_version', 'must be the string "1"'],
      [`{"scenario_id":"s","task":${TASK},"extra":1}`, 'extra', 'unknown field; a scenario bundle has only schema_version, scenario_id, task, provenance'],
      [`{"task":${TASK}}`, 'scenario_id', 'is required'],
      [`{"scenario_id":"","task":${TASK}}`, 'scenario_id', 'must not be empty'],
      [`{"scenario_id":12,"task":${TASK}}`, 'scenario_id', 'must be a string'],
      [`{"scenario_id":"\\ud800","task":${TASK}}`, 'scenario_id', 'must be valid Unicode (it contains a lone surrogate)'],
      ['{"scenario_id":"s"}', 'task', 'is required'],
      ['{"scenario_id":"s","task":[]}', 'task', 'must be a JSON object (a Gym task)'],
      [`{"scenario_id":"s","task":${TASK},"provenance":[]}`, 'provenance', 'must be a JSON object'],
      [`{"scenario_id":"s","task":${TASK},"provenance":null}`, 'provenance', 'must be a JSON object'],
      ['{"scenario_id":"s","task":{"responses_create_params":{},"_ng_task_index":5}}', 'task', 'Gym task contains plugin-managed fields: _ng_task_index'],
      ['{"scenario_id":"s","task":{"responses_create_params":[]}}', 'task.responses_create_params', 'must be a JSON object'],
      ['{"scenario_id":"s","task":{"responses_create_params":{},"agent_ref":"a"}}', 'task.agent_ref', 'must be a JSON object or null'],
      ['{"scenario_id":"s","task":{"responses_create_params":{"temperature":1e400}}}', 'task.responses_create_params.temperature', 'must be a finite number: this float overflows a double (Python reads it as inf, which JSON cannot carry)'],
      [`{"scenario_id":"s","task":${TASK},"provenance":{"x":[-1e999]}}`, 'provenance.x[0]', 'must be a finite number: this float overflows a double (Python reads it as inf, which JSON cannot carry)'],
    ]
    for (const [bundle, field, message] of cases) expect({bundle, error: exportError(bundle)}).toEqual({bundle, error: {field, message}})
  })
})

/** What the byte path makes of a bundle: the line it writes, or 'declined' (the text path decides). */
function byBytes(bundleText: string, scanner?: BundleScanner): string {
  const built = new LineBuilder()
  const taken = exportBundleBytes(Buffer.from(bundleText), built, scanner)
  const {bytes, lines} = built.take()
  if (!taken) {
    expect({bundleText, bytes: bytes.length, lines}).toEqual({bundleText, bytes: 0, lines: 0})
    return 'declined'
  }
  expect(lines).toBe(1)
  return bytes.toString('utf8')
}

describe('exportBundleBytes', () => {
  // bundles as `tasks build` writes them, and the forms a hand-written file may add
  const TAKEN = [
    `{"schema_version":"1","scenario_id":"s1","task":${TASK},"provenance":{"seed":1}}`,
    `{"scenario_id":"s1","task":${TASK}}`,
    `{"scenario_id":"s1","task":${TASK},"provenance":{ }}`,
    '{"scenario_id":"s1","task":{"x":null,"agent_ref":null,"id":null,"responses_create_params":{"stop":null}}}',
    '{"scenario_id":"s1","task":{"responses_create_params":{"input":[]},"ground_truth":{"a":1},"env":"e","agent_ref":null}}',
    '{"scenario_id":"s1","task":{"ground_truth":[1],"agent_ref":{"type":"responses_api_agents","name":"a"},"env":"e","responses_create_params":{}}}',
    '{"scenario_id":"s1","task":{"responses_create_params":{},"agent_ref":{"name":"a"},"id":"keep-me","n":1.0}}',
    '{"scenario_id":"s1","task":{"responses_create_params":{},"id":null,"n":2}}',
    '{"scenario_id":"s1", "task": { "responses_create_params" : { "input" : [ ] } , "n" : 1.0 } }',
    '{"scenario_id":"s1","task":{ "n" : null , "responses_create_params" :{},"m":[1, 2],"k": 3 }}',
    '{"schema_version":"1","scenario_id":"é-1 ✓","task":{"responses_create_params":{"temperature":1.0,"seed":1152921504606846975},"note":"héllo 😀 \\u00e9","w":1e-05},"provenance":{"n":9007199254740993}}',
    `{"scenario_id":"  ","task":${TASK}}`,
    `{"task":${TASK},"provenance":{"x":"\\n"},"scenario_id":"last"}`,
  ]
  // valid bundles the text path must word or rebuild itself: escaped or repeated keys, an escaped ID
  const DECLINED = [
    `{"scenario_id":"s\\u0031","task":${TASK}}`,
    `{"schema_version":"\\u0031","scenario_id":"s1","task":${TASK}}`,
    `{"scenario_\\u0069d":"s1","task":${TASK}}`,
    '{"scenario_id":"s1","task":{"responses_create_params":{},"\\u0061":1}}',
    '{"scenario_id":"s1","task":{"responses_create_params":{},"a":1,"a":null}}',
    `{"scenario_id":"s0","scenario_id":"s1","task":${TASK}}`,
    `{"scenario_id":"s1","task":[],"task":${TASK}}`,
  ]

  it('writes what the text path writes, byte for byte', () => {
    for (const bundle of TAKEN) expect({bundle, line: byBytes(bundle)}).toEqual({bundle, line: `${exported(bundle)}\n`})
  })

  it('writes the same with one scanner for every line, whatever came before', () => {
    const scanner = new BundleScanner()
    const lines = [...TAKEN, ...DECLINED]
    for (const bundle of [...lines, ...lines.reverse()]) {
      expect({bundle, line: byBytes(bundle, scanner)}).toEqual({bundle, line: byBytes(bundle)})
    }
  })

  it('leaves escaped and repeated keys to the text path, which still exports them', () => {
    for (const bundle of DECLINED) {
      expect({bundle, line: byBytes(bundle)}).toEqual({bundle, line: 'declined'})
      expect(() => exported(bundle)).not.toThrow()
    }
  })

  it('declines every bundle the text path refuses, and invalid JSON', () => {
    const refused = [
      `{"schema_version":1,"scenario_id":"s","task":${TASK}}`,
      `{"schema_version":111,"scenario_id":"s","task":${TASK}}`,
      `{"schema_version":"2","scenario_id":"s","task":${TASK}}`,
      `{"scenario_id":"s","task":${TASK},"extra":1}`,
      `{"task":${TASK}}`,
      `{"scenario_id":"","task":${TASK}}`,
      `{"scenario_id":12,"task":${TASK}}`,
      `{"scenario_id":"\\ud800","task":${TASK}}`,
      '{"scenario_id":"s"}',
      '{"scenario_id":"s","task":[]}',
      `{"scenario_id":"s","task":${TASK},"task":[]}`,
      `{"scenario_id":"s","task":${TASK},"provenance":[]}`,
      `{"scenario_id":"s","task":${TASK},"provenance":null}`,
      '{"scenario_id":"s","task":{"responses_create_params":{},"_ng_task_index":5}}',
      '{"scenario_id":"s","task":{"responses_create_params":{},"_dd_provenance":null}}',
      '{"scenario_id":"s","task":{"responses_create_params":[]}}',
      '{"scenario_id":"s","task":{"agent_ref":null}}',
      '{"scenario_id":"s","task":{"responses_create_params":{},"agent_ref":"a"}}',
      '{"scenario_id":"s","task":{"responses_create_params":{"temperature":1e400}}}',
      `{"scenario_id":"s","task":${TASK},"provenance":{"x":[-1e999]}}`,
    ]
    for (const bundle of refused) {
      expect({bundle, line: byBytes(bundle)}).toEqual({bundle, line: 'declined'})
      expect(() => exported(bundle), bundle).toThrow(FieldError)
    }
    for (const text of ['', '[]', `{"scenario_id":"s","task":${TASK}`, `{"scenario_id":"s","task":${TASK}} x`, '{"scenario_id":"s","task":{"responses_create_params":{},}}']) {
      expect({text, line: byBytes(text)}).toEqual({text, line: 'declined'})
    }
  })
})

describe('exportTasks', () => {
  async function files(content: string) {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'gr-export-'))
    const input = path.join(dir, 'scenarios.jsonl')
    await writeFile(input, content)
    return {dir, input, output: path.join(dir, 'out', 'gym-tasks.jsonl')}
  }

  it('writes one task per bundle in order, creating parent directories', async () => {
    const {input, output} = await files(`{"scenario_id":"s1","task":${TASK}}\n\n{"scenario_id":"s2","task":${TASK}}\n`)
    expect(await exportTasks({input, output, dryRun: false})).toEqual({input, output, dryRun: false, tasks: 2})
    const lines = (await readFile(output, 'utf8')).trim().split('\n')
    expect(lines.map((line) => JSON.parse(line)._dd_scenario_id)).toEqual(['s1', 's2'])
    expect(lines[1]).toContain('"_ng_task_index":780011709654993714')
  })

  it('writes bundles the byte path takes and those it leaves to the text path in input order', async () => {
    const bundles = [`{"scenario_id":"s1","task":${TASK}}`, '{"scenario_id":"s\\u0032","task":{"responses_create_params":{},"a":1,"a":2}}', `{"scenario_id":"s3","task":${TASK},"provenance":{"p":1}}`]
    const {input, output} = await files(`${bundles.join('\n')}\n`)
    expect((await exportTasks({input, output, dryRun: false})).tasks).toBe(3)
    expect(await readFile(output, 'utf8')).toBe(bundles.map((bundle) => `${exported(bundle)}\n`).join(''))
    // the escaped ID is hashed as the text it spells ("s2")
    expect((await readFile(output, 'utf8')).split('\n')[1]).toContain(',"id":780011709654993714,"_ng_task_index":780011709654993714,"_dd_scenario_id":"s\\u0032"}')
  })

  it('writes an empty file for empty input', async () => {
    const {input, output} = await files('')
    expect((await exportTasks({input, output, dryRun: false})).tasks).toBe(0)
    expect(await readFile(output, 'utf8')).toBe('')
  })

  it('names file, line and field of a bad bundle and leaves an existing output untouched', async () => {
    const {dir, input} = await files(`{"scenario_id":"s1","task":${TASK}}\n{"scenario_id":"s2","task":${TASK},"provenance":null}\n`)
    const output = path.join(dir, 'gym-tasks.jsonl')
    await writeFile(output, 'previous\n')
    await expect(exportTasks({input, output, dryRun: false})).rejects.toMatchObject({
      code: 'E_BUNDLE_INVALID',
      exit: 2,
      location: {file: input, line: 2, field: 'provenance'},
      message: 'provenance: must be a JSON object',
    })
    expect(await readFile(output, 'utf8')).toBe('previous\n')
    expect((await readdir(dir)).sort()).toEqual(['gym-tasks.jsonl', 'scenarios.jsonl'])
  })

  it('reports invalid JSON with its line', async () => {
    const {input, output} = await files(`{"scenario_id":"s1","task":${TASK}}\n{"scenario_id": NaN}\n`)
    await expect(exportTasks({input, output, dryRun: false})).rejects.toMatchObject({code: 'E_JSONL_INVALID', location: {line: 2}, message: expect.stringMatching(/^invalid JSON: /)})
  })

  it('writes nothing on a dry run', async () => {
    const {dir, input, output} = await files(`{"scenario_id":"s1","task":${TASK}}\n`)
    expect((await exportTasks({input, output, dryRun: true})).tasks).toBe(1)
    expect(await readdir(dir)).toEqual(['scenarios.jsonl'])
  })
})
