import {mkdtemp, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {describe, expect, it} from 'vitest'

import {FieldError, stringifyJson} from '../../../src/json/index.js'
import {loadTaskSpec, taskSpecFrom} from '../../../src/gym/tasks/spec.js'

const TASK_COLUMN = {task_column: 'gym_task'}
const DECLARATIVE = {messages: [{role: 'user', content_column: 'user_query'}]}

/** The FieldError a spec fails with (field and message), or 'valid'. */
function failure(spec: unknown): {field: string | undefined; message: string} | 'valid' {
  try {
    taskSpecFrom(spec)
    return 'valid'
  } catch (error) {
    if (!(error instanceof FieldError)) throw error
    return {field: error.field, message: error.message}
  }
}

async function specFile(text: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'gr-spec-'))
  const file = path.join(dir, 'task-spec.yaml')
  await writeFile(file, text)
  return file
}

describe('task spec schema (shapes and types)', () => {
  it('accepts both modes with defaults filled in', () => {
    const spec = taskSpecFrom({...DECLARATIVE})
    expect(spec.scenario_namespace).toBe('gym')
    expect(spec.provenance_columns).toEqual([])
    expect(taskSpecFrom({name: 'gym_tasks', processor_type: 'gym', ...TASK_COLUMN}).task_column).toBe('gym_task')
  })

  it('rejects unknown fields, naming the allowed ones', () => {
    expect(failure({...TASK_COLUMN, task_colum: 'x'})).toEqual({field: 'task_colum', message: expect.stringMatching(/^is not a known field here \(known: name, processor_type, task_column, messages/)})
    expect(failure({messages: [{role: 'user', content_column: 'q', content: 'x'}]})).toEqual({field: 'messages[0].content', message: 'is not a known field here (known: role, content_column)'})
  })

  it('names the expected type of each field', () => {
    const cases: [object, string, string][] = [
      [{task_column: 5n}, 'task_column', 'must be a column path (a string such as "reference_plan.tool_calls")'],
      [{messages: 'user_query'}, 'messages', 'must be a list of {role, content_column} mappings'],
      [{messages: ['user_query']}, 'messages[0]', 'must be a mapping with role and content_column'],
      [{...DECLARATIVE, tool_fields: 'name'}, 'tool_fields', 'must be a list of tool field names'],
      [{...DECLARATIVE, tool_fields: [1n]}, 'tool_fields[0]', 'must be a tool field name (a string)'],
      [{...DECLARATIVE, response_params: ['temperature']}, 'response_params', 'must be a mapping of extra responses_create_params'],
      [{...DECLARATIVE, task_columns: ['ground_truth']}, 'task_columns', 'must be a mapping of task field to column path'],
      [{...DECLARATIVE, task_columns: {ground_truth: 1n}}, 'task_columns.ground_truth', 'must be a column path (a string such as "reference_plan.tool_calls")'],
      [{...DECLARATIVE, task_values: 'x'}, 'task_values', 'must be a mapping of task field to JSON value'],
      [{...DECLARATIVE, provenance_columns: 'seed_id'}, 'provenance_columns', 'must be a list of column paths'],
      [{...DECLARATIVE, processor_type: 'sql'}, 'processor_type', 'must be "gym"'],
      [{...DECLARATIVE, scenario_namespace: 1n}, 'scenario_namespace', 'must be letters, digits, ".", "_" or "-", starting with a letter or digit'],
    ]
    for (const [spec, field, message] of cases) expect(failure(spec)).toEqual({field, message})
  })

  it('requires role and content_column in a message mapping', () => {
    expect(failure({messages: [{role: 'user'}]})).toEqual({field: 'messages[0].content_column', message: 'is required'})
  })

  it('rejects a namespace that does not match ^[A-Za-z0-9][A-Za-z0-9._-]*$', () => {
    for (const namespace of ['', '-gym', 'my env', 'gym/x', 'gym\n']) {
      expect(failure({...DECLARATIVE, scenario_namespace: namespace})).toMatchObject({field: 'scenario_namespace'})
    }
    expect(failure({...DECLARATIVE, scenario_namespace: 'my-env_1.2'})).toBe('valid')
  })

  it('rejects empty or whitespace-only message mapping values', () => {
    for (const message of [{role: '', content_column: 'q'}, {role: 'user', content_column: ''}, {role: '  ', content_column: 'q'}]) {
      expect(failure({messages: [message]})).toMatchObject({message: 'message mapping values must not be empty'})
    }
  })

  it('rejects an empty name', () => {
    expect(failure({...TASK_COLUMN, name: ''})).toEqual({field: 'name', message: 'must not be empty'})
  })

  it('rejects non-finite numbers in response_params and task_values', () => {
    expect(failure({...DECLARATIVE, response_params: {temperature: Number.NaN}})).toEqual({field: 'response_params.temperature', message: 'must be a finite number (NaN and Infinity are not JSON)'})
    expect(failure({...DECLARATIVE, task_values: {limits: [1n, Number.POSITIVE_INFINITY]}})).toEqual({field: 'task_values.limits[1]', message: 'must be a finite number (NaN and Infinity are not JSON)'})
  })
})

describe('task spec rules, in the plugin order (messages as in the plugin)', () => {
  it('1. exactly one of task_column or messages', () => {
    expect(failure({})).toEqual({field: undefined, message: 'configure exactly one of task_column or messages'})
    expect(failure({messages: []})).toMatchObject({message: 'configure exactly one of task_column or messages'})
    expect(failure({...TASK_COLUMN, ...DECLARATIVE})).toEqual({field: 'task_column', message: 'configure exactly one of task_column or messages'})
  })

  it('2. declarative fields cannot be used with task_column (empty values are allowed)', () => {
    for (const [key, value] of Object.entries({tools_column: 'tools', tool_fields: ['name'], response_params: {temperature: 1}, task_columns: {gt: 'x'}, task_values: {env: 'x'}})) {
      expect(failure({...TASK_COLUMN, [key]: value})).toEqual({field: key, message: 'declarative task fields cannot be used with task_column'})
    }
    expect(failure({...TASK_COLUMN, response_params: {}, task_columns: {}, task_values: {}, tools_column: null})).toBe('valid')
  })

  it('3. tool_fields requires tools_column, even when empty', () => {
    expect(failure({...DECLARATIVE, tool_fields: ['name']})).toEqual({field: 'tool_fields', message: 'tool_fields requires tools_column'})
    expect(failure({...TASK_COLUMN, tool_fields: []})).toEqual({field: 'tool_fields', message: 'tool_fields requires tools_column'})
  })

  it('4. response_params cannot override input or tools', () => {
    for (const key of ['input', 'tools']) {
      expect(failure({...DECLARATIVE, response_params: {[key]: []}})).toEqual({field: `response_params.${key}`, message: 'response_params cannot override input or tools'})
    }
  })

  it('5. every source path is non-empty dot-separated names without surrounding spaces', () => {
    const bad = ['', 'a..b', 'a.', '.a', ' a', 'a. b', 'a .b']
    const fields: [string, (p: string) => object][] = [
      ['task_column', (p) => ({task_column: p})],
      ['scenario_id_column', (p) => ({...TASK_COLUMN, scenario_id_column: p})],
      ['include', (p) => ({...TASK_COLUMN, include: p})],
      ['tools_column', (p) => ({...DECLARATIVE, tools_column: p})],
      ['provenance_columns[0]', (p) => ({...TASK_COLUMN, provenance_columns: [p]})],
      ['task_columns.ground_truth', (p) => ({...DECLARATIVE, task_columns: {ground_truth: p}})],
      ['messages[0].content_column', (p) => ({messages: [{role: 'user', content_column: p}]})],
    ]
    for (const [field, specWith] of fields) {
      for (const pathText of bad) {
        const result = failure(specWith(pathText))
        if (pathText === '' && field === 'messages[0].content_column') expect(result).toMatchObject({message: 'message mapping values must not be empty'})
        else expect({pathText, result}).toEqual({pathText, result: {field, message: 'column paths must contain non-empty dot-separated names'}})
      }
    }
    expect(failure({...TASK_COLUMN, include: 'reference_plan.is_valid', provenance_columns: ['a.b.c']})).toBe('valid')
  })

  it('6. task field names must not be empty', () => {
    expect(failure({...DECLARATIVE, task_values: {' ': 1n}})).toEqual({field: 'task_values', message: 'task field names must not be empty'})
    expect(failure({...DECLARATIVE, task_columns: {'': 'x'}})).toEqual({field: 'task_columns', message: 'task field names must not be empty'})
  })

  it('7. task fields are plugin-managed (id and agent_ref are allowed)', () => {
    expect(failure({...DECLARATIVE, task_values: {_ng_task_index: 1n, responses_create_params: {}}, task_columns: {_dd_provenance: 'x'}})).toEqual({
      field: undefined,
      message: 'task fields are plugin-managed: _dd_provenance, _ng_task_index, responses_create_params',
    })
    expect(failure({...DECLARATIVE, task_values: {id: 1n, agent_ref: {type: 'responses_api_agents', name: 'a'}}})).toBe('valid')
  })

  it('8. a task field cannot have both a column and a value', () => {
    expect(failure({...DECLARATIVE, task_columns: {b: 'x', a: 'y'}, task_values: {a: 1n, b: 2n}})).toEqual({field: 'task_values', message: 'task fields cannot have both a column and value: a, b'})
  })

  it('9. provenance_columns must not contain duplicates', () => {
    expect(failure({...TASK_COLUMN, provenance_columns: ['seed_id', 'seed_id']})).toEqual({field: 'provenance_columns', message: 'provenance_columns must not contain duplicates'})
  })

  it('10. tool_fields must not contain empty names or duplicates', () => {
    const base = {...DECLARATIVE, tools_column: 'tools'}
    expect(failure({...base, tool_fields: ['name', ' ']})).toEqual({field: 'tool_fields', message: 'tool_fields must not contain empty names'})
    expect(failure({...base, tool_fields: ['name', 'name']})).toEqual({field: 'tool_fields', message: 'tool_fields must not contain duplicates'})
  })

  it('reports the first failing rule when several fail', () => {
    expect(failure({...TASK_COLUMN, tool_fields: [''], tools_column: 'x', provenance_columns: ['a', 'a']})).toMatchObject({message: 'declarative task fields cannot be used with task_column'})
    expect(failure({...DECLARATIVE, tool_fields: ['', ''], provenance_columns: ['a', 'a']})).toMatchObject({message: 'tool_fields requires tools_column'})
    expect(failure({...DECLARATIVE, task_values: {_ng_task_index: 1n}, provenance_columns: ['a', 'a']})).toMatchObject({message: expect.stringMatching(/^task fields are plugin-managed/)})
  })
})

describe('loadTaskSpec', () => {
  it('reads YAML numbers losslessly: ints stay ints (any size), floats get Python spelling', async () => {
    const file = await specFile('messages:\n  - {role: user, content_column: q}\nresponse_params:\n  temperature: 1.0\n  max_output_tokens: 4096\ntask_values:\n  seed: 123456789012345678901\n  ratio: 1e-5\n')
    const spec = await loadTaskSpec(file)
    expect(stringifyJson(spec.response_params)).toBe('{"temperature":1.0,"max_output_tokens":4096}')
    expect(stringifyJson(spec.task_values)).toBe('{"seed":123456789012345678901,"ratio":1e-05}')
  })

  it('accepts a JSON spec', async () => {
    const spec = await loadTaskSpec(await specFile('{"task_column": "gym_task", "scenario_namespace": "email"}'))
    expect(spec.scenario_namespace).toBe('email')
  })

  it('names the file, line and field of a rule violation', async () => {
    const file = await specFile('messages:\n  - role: user\n    content_column: user_query\ntools_column: tools\ntool_fields:\n  - name\n  - name\n')
    await expect(loadTaskSpec(file)).rejects.toMatchObject({
      code: 'E_SPEC_INVALID',
      exit: 2,
      location: {file, line: 5, field: 'tool_fields'},
      message: 'tool_fields: tool_fields must not contain duplicates',
    })
  })

  it('points at the offending nested entry', async () => {
    const file = await specFile('messages:\n  - role: system\n    content_column: system_prompt\n  - role: user\n    content_column: "a..b"\n')
    await expect(loadTaskSpec(file)).rejects.toMatchObject({location: {line: 5, field: 'messages[1].content_column'}})
  })

  it('names the line of a YAML syntax error', async () => {
    const file = await specFile('task_column: gym_task\ntask_column: other\n')
    await expect(loadTaskSpec(file)).rejects.toMatchObject({code: 'E_SPEC_INVALID', exit: 2, location: {file, line: 2}, message: expect.stringMatching(/^invalid YAML: Map keys must be unique/)})
  })

  it('rejects a spec that is not a mapping, and .nan in YAML', async () => {
    await expect(loadTaskSpec(await specFile('- task_column\n'))).rejects.toMatchObject({message: 'the task spec must be a mapping of task spec fields', location: {line: 1}})
    await expect(loadTaskSpec(await specFile('messages: [{role: user, content_column: q}]\nresponse_params: {temperature: .nan}\n'))).rejects.toMatchObject({
      location: {line: 2, field: 'response_params.temperature'},
    })
  })

  it('rejects YAML values that are not JSON (sets, timestamps, binary)', async () => {
    for (const value of ['!!set {a, b}', '!!timestamp 2001-12-14', '!!binary aGVsbG8=']) {
      await expect(loadTaskSpec(await specFile(`messages: [{role: user, content_column: q}]\ntask_values:\n  x: ${value}\n`))).rejects.toMatchObject({
        message: 'task_values.x: must contain JSON-compatible data',
        location: {line: 3, field: 'task_values.x'},
      })
    }
  })

  it('reports a missing spec file with exit 2', async () => {
    await expect(loadTaskSpec('/nonexistent/task-spec.yaml')).rejects.toMatchObject({code: 'E_SPEC_MISSING', exit: 2, message: 'cannot read task spec /nonexistent/task-spec.yaml: ENOENT'})
  })
})
