import {mkdtemp, readdir, readFile, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {describe, expect, it} from 'vitest'

import {FieldError, type JsonObject, parseJson, stringifyJson} from '../../../src/json/index.js'
import {buildScenarios, scenarioFromRow} from '../../../src/gym/tasks/build.js'
import {taskIndexOf} from '../../../src/gym/tasks/identity.js'
import {type TaskSpec, taskSpecFrom} from '../../../src/gym/tasks/spec.js'

// The upstream plugin's test fixtures (tests/test_plugin.py): tool, seed_row and generic_row.
const TOOL = {
  type: 'function',
  name: 'email_send_email',
  description: 'Send an email.',
  parameters: {type: 'object', properties: {recipient: {type: 'string'}}, required: ['recipient'], additionalProperties: false},
  strict: false,
  database: 'email',
}
const SEED_ROW = {
  seed_id: 7,
  user_query: 'Send an email to Pat.',
  system_prompt: 'You are a workplace assistant.',
  tools_json: JSON.stringify([TOOL]),
  reference_plan: {tool_calls: [{name: 'email_send_email', arguments: '{"recipient":"pat@example.com"}'}], is_valid: true},
}
const GENERIC_ROW = {
  ...SEED_ROW,
  include: true,
  gym_task: {
    responses_create_params: {
      input: [
        {role: 'system', content: SEED_ROW.system_prompt},
        {role: 'user', content: SEED_ROW.user_query},
      ],
      tools: [TOOL],
    },
    environment_name: 'example_environment',
    ground_truth: SEED_ROW.reference_plan.tool_calls,
  },
}

/** A row as the CLI reads it: lossless JSON values. */
function row(value: object | string): JsonObject {
  return parseJson(typeof value === 'string' ? value : JSON.stringify(value)) as JsonObject
}

function spec(fields: object): TaskSpec {
  return taskSpecFrom(fields)
}

const COLUMN_SPEC = {task_column: 'gym_task'}
const DECLARATIVE_SPEC = {
  messages: [
    {role: 'system', content_column: 'system_prompt'},
    {role: 'user', content_column: 'user_query'},
  ],
  tools_column: 'tools_json',
  tool_fields: ['type', 'name', 'description', 'parameters', 'strict'],
  task_columns: {ground_truth: 'reference_plan.tool_calls'},
  task_values: {environment_name: 'example_environment'},
  include: 'reference_plan.is_valid',
  provenance_columns: ['seed_id'],
}

function build(rowValue: object | string, fields: object) {
  return scenarioFromRow(row(rowValue), spec(fields))
}

function buildError(rowValue: object | string, fields: object): {field: string | undefined; message: string} {
  try {
    build(rowValue, fields)
  } catch (error) {
    if (error instanceof FieldError) return {field: error.field, message: error.message}
    throw error
  }
  throw new Error('expected the row to be rejected')
}

describe('scenario IDs of the upstream fixtures (reference §2.4)', () => {
  it('task_column mode: gym-db86ad671a4e9d9a, email-db86ad671a4e9d9a', () => {
    const bundle = build(GENERIC_ROW, COLUMN_SPEC)
    expect(bundle?.scenario_id).toBe('gym-db86ad671a4e9d9a')
    expect(taskIndexOf('gym-db86ad671a4e9d9a')).toBe(733926345941576202n)
    expect(build(GENERIC_ROW, {...COLUMN_SPEC, scenario_namespace: 'email'})?.scenario_id).toBe('email-db86ad671a4e9d9a')
    expect(taskIndexOf('email-db86ad671a4e9d9a')).toBe(399720059820418514n)
  })

  it('declarative mode (test_processor_runs_in_workflow_built_from_scratch): gym-dc3946e4a77aae4c', () => {
    const bundle = build(SEED_ROW, DECLARATIVE_SPEC)
    expect(bundle?.scenario_id).toBe('gym-dc3946e4a77aae4c')
    expect(taskIndexOf('gym-dc3946e4a77aae4c')).toBe(1007922580523629124n)
    const task = bundle?.task as any
    expect(task.responses_create_params.tools[0].database).toBeUndefined()
    expect(stringifyJson(task.ground_truth)).toBe(JSON.stringify(SEED_ROW.reference_plan.tool_calls))
    expect(task.environment_name).toBe('example_environment')
    expect(stringifyJson(bundle?.provenance ?? {})).toBe('{"seed_id":7}')
  })
})

describe('include', () => {
  it('skips rows whose include value is falsy in Python terms, or missing', () => {
    for (const value of ['false', '0', '0.0', '""', 'null', '[]', '{}']) {
      expect(build(`{"keep":${value},"gym_task":${JSON.stringify(GENERIC_ROW.gym_task)}}`, {...COLUMN_SPEC, include: 'keep'})).toBeUndefined()
    }
    expect(build({gym_task: GENERIC_ROW.gym_task}, {...COLUMN_SPEC, include: 'keep'})).toBeUndefined()
  })

  it('keeps rows whose include value is truthy, including the string "false"', () => {
    for (const value of ['true', '1', '"false"', '[0]', '{"a":null}', '-0.5']) {
      expect(build(`{"keep":${value},"gym_task":${JSON.stringify(GENERIC_ROW.gym_task)}}`, {...COLUMN_SPEC, include: 'keep'})).toBeDefined()
    }
  })

  it('is checked before the task is built', () => {
    expect(build({keep: false}, {...COLUMN_SPEC, include: 'keep'})).toBeUndefined()
  })
})

describe('task_column mode', () => {
  it('accepts the task as an object or as a JSON string, with the same ID', () => {
    const fromString = build({gym_task: JSON.stringify(GENERIC_ROW.gym_task)}, COLUMN_SPEC)
    expect(fromString?.scenario_id).toBe('gym-db86ad671a4e9d9a')
  })

  it('puts responses_create_params and agent_ref first and drops top-level nulls', () => {
    const bundle = build({gym_task: {ground_truth: 1, x: null, agent_ref: null, responses_create_params: {input: [], stop: null}}}, COLUMN_SPEC)
    expect(stringifyJson(bundle?.task as JsonObject)).toBe('{"responses_create_params":{"input":[],"stop":null},"ground_truth":1}')
  })

  it('rejects a task that is not an object, invalid JSON, a missing column and plugin-managed fields', () => {
    expect(buildError({gym_task: [1]}, COLUMN_SPEC)).toEqual({field: 'task', message: 'must be a JSON object (a Gym task)'})
    expect(buildError({gym_task: null}, COLUMN_SPEC)).toEqual({field: 'task', message: 'must be a JSON object (a Gym task)'})
    expect(buildError({gym_task: '{"responses_create_params":'}, COLUMN_SPEC)).toEqual({field: 'task_column', message: 'gym_task must contain valid JSON'})
    expect(buildError({other: 1}, COLUMN_SPEC)).toEqual({field: 'task_column', message: 'missing source path: gym_task'})
    for (const managed of ['_dd_provenance', '_dd_scenario_id', '_ng_rollout_index', '_ng_task_index']) {
      expect(buildError({gym_task: {responses_create_params: {}, [managed]: 'reserved'}}, COLUMN_SPEC)).toEqual({field: 'task', message: `Gym task contains plugin-managed fields: ${managed}`})
    }
  })

  it('applies the GymTask field rules', () => {
    expect(buildError({gym_task: {input: []}}, COLUMN_SPEC)).toEqual({field: 'task.responses_create_params', message: 'is required'})
    expect(buildError({gym_task: {responses_create_params: []}}, COLUMN_SPEC)).toEqual({field: 'task.responses_create_params', message: 'must be a JSON object'})
    expect(buildError({gym_task: {responses_create_params: {}, agent_ref: 'agent'}}, COLUMN_SPEC)).toEqual({field: 'task.agent_ref', message: 'must be a JSON object or null'})
    expect(build({gym_task: {responses_create_params: {}}}, COLUMN_SPEC)?.scenario_id).toBe('gym-60e072d48b5a9fbd')
  })

  it('keeps environment metadata such as instructions and llm_judge (test_generic_task_preserves_environment_metadata)', () => {
    const task = {
      responses_create_params: {input: [{role: 'user', content: 'Write about research.'}]},
      instructions: [{instruction_id: 'keywords:existence', keywords: ['research']}],
      llm_judge: [{uid: 1, content: 'Is the response professional?'}],
    }
    const bundle = build({gym_task: task}, {...COLUMN_SPEC, scenario_namespace: 'verifif'})
    expect(bundle?.scenario_id).toMatch(/^verifif-[0-9a-f]{16}$/)
    expect(stringifyJson(bundle?.task as JsonObject)).toBe(JSON.stringify(task))
  })
})

describe('declarative mode', () => {
  it('builds responses_create_params from response_params, then input, then tools; the task from values, columns, params', () => {
    const bundle = build(
      {q: 'hi', sys: 'be brief', tools: [{name: 't', type: 'function'}], gt: {answer: 2}},
      {
        messages: [
          {role: 'system', content_column: 'sys'},
          {role: 'user', content_column: 'q'},
        ],
        tools_column: 'tools',
        response_params: {temperature: 0.5, max_output_tokens: 10n},
        task_values: {environment_name: 'env'},
        task_columns: {ground_truth: 'gt'},
      },
    )
    expect(stringifyJson(bundle?.task as JsonObject)).toBe(
      '{"responses_create_params":{"temperature":0.5,"max_output_tokens":10,"input":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],"tools":[{"name":"t","type":"function"}]},"environment_name":"env","ground_truth":{"answer":2}}',
    )
  })

  it('keeps content values JSON-compatible as they are (objects, lists, numbers, null)', () => {
    const bundle = build('{"q":{"parts":[1.0,null]},"n":null}', {messages: [{role: 'user', content_column: 'q'}, {role: 'user', content_column: 'n'}]})
    expect(stringifyJson((bundle?.task as any).responses_create_params.input)).toBe('[{"role":"user","content":{"parts":[1.0,null]}},{"role":"user","content":null}]')
  })

  it('follows nested paths, decoding JSON strings at intermediate parts', () => {
    const rowText = JSON.stringify({plan: JSON.stringify({calls: [{name: 'a'}], meta: JSON.stringify({ok: true})}), q: 'x'})
    const bundle = build(rowText, {messages: [{role: 'user', content_column: 'q'}], task_columns: {calls: 'plan.calls', ok: 'plan.meta.ok'}})
    expect(stringifyJson(bundle?.task as JsonObject)).toBe('{"responses_create_params":{"input":[{"role":"user","content":"x"}]},"calls":[{"name":"a"}],"ok":true}')
  })

  it('reports a missing path, an unindexable list and invalid JSON on the way', () => {
    const messages = [{role: 'user', content_column: 'q'}]
    expect(buildError({q: 'x'}, {messages, task_columns: {gt: 'plan.calls'}})).toEqual({field: 'task_columns.gt', message: 'missing source path: plan.calls'})
    expect(buildError({q: 'x', plan: [{a: 1}]}, {messages, task_columns: {gt: 'plan.0'}})).toEqual({field: 'task_columns.gt', message: 'missing source path: plan.0'})
    expect(buildError({q: 'x', plan: '{"calls": ['}, {messages, task_columns: {gt: 'plan.calls'}})).toEqual({field: 'task_columns.gt', message: 'plan must contain valid JSON'})
    expect(buildError({q: 'x', plan: {calls: null}}, {messages, task_columns: {gt: 'plan.calls.name'}})).toEqual({field: 'task_columns.gt', message: 'missing source path: plan.calls.name'})
    expect(buildError({other: 'x'}, {messages})).toEqual({field: 'messages[0].content_column', message: 'missing source path: q'})
  })

  it('keeps only tool_fields, in tool_fields order, skipping missing keys', () => {
    const bundle = build({q: 'x', tools: [{b: 2, a: 1, c: 3}, {c: 4}]}, {messages: [{role: 'user', content_column: 'q'}], tools_column: 'tools', tool_fields: ['c', 'a', 'z']})
    expect(stringifyJson((bundle?.task as any).responses_create_params.tools)).toBe('[{"c":3,"a":1},{"c":4}]')
  })

  it('requires tools to be a JSON list of objects (an empty list is fine)', () => {
    const base = {messages: [{role: 'user', content_column: 'q'}], tools_column: 'tools'}
    for (const tools of [{name: 't'}, ['t'], 'null', null]) {
      expect(buildError({q: 'x', tools}, base)).toEqual({field: 'tools_column', message: 'tools must contain a JSON list of objects'})
    }
    expect(buildError({q: 'x', tools: '[{"name":'}, base)).toEqual({field: 'tools_column', message: 'tools must contain valid JSON'})
    expect(stringifyJson((build({q: 'x', tools: '[]'}, base)?.task as any).responses_create_params.tools)).toBe('[]')
  })

  it('drops task fields whose value is null from the task and the hash', () => {
    const messages = [{role: 'user', content_column: 'q'}]
    const withNull = build({q: 'x', gt: null}, {messages, task_columns: {gt: 'gt'}})
    const without = build({q: 'x'}, {messages})
    expect(Object.keys(withNull?.task ?? {})).toEqual(['responses_create_params'])
    expect(withNull?.scenario_id).toBe(without?.scenario_id)
  })

  it('validates agent_ref from a column like any task', () => {
    expect(buildError({q: 'x', ref: 'agent'}, {messages: [{role: 'user', content_column: 'q'}], task_columns: {agent_ref: 'ref'}})).toEqual({field: 'task.agent_ref', message: 'must be a JSON object or null'})
  })
})

describe('identity and provenance', () => {
  it('prefixes the default ID with the namespace, and provenance does not change it', () => {
    const a = build({...GENERIC_ROW, seed_id: 1}, {...COLUMN_SPEC, provenance_columns: ['seed_id'], scenario_namespace: 'email'})
    const b = build({...GENERIC_ROW, seed_id: 2}, {...COLUMN_SPEC, provenance_columns: ['seed_id'], scenario_namespace: 'email'})
    expect(a?.scenario_id).toBe('email-db86ad671a4e9d9a')
    expect(b?.scenario_id).toBe(a?.scenario_id)
    expect(stringifyJson(b?.provenance ?? {})).toBe('{"seed_id":2}')
  })

  it('keys provenance by the configured path, skips nulls and rejects missing paths', () => {
    const fields = {...COLUMN_SPEC, provenance_columns: ['c.d', 'gone', 'seed_id']}
    expect(stringifyJson(build({...GENERIC_ROW, c: {d: [1]}, gone: null}, fields)?.provenance ?? {})).toBe('{"c.d":[1],"seed_id":7}')
    expect(buildError({...GENERIC_ROW, c: {d: 1}}, fields)).toEqual({field: 'provenance_columns', message: 'missing source path: gone'})
  })

  it('uses scenario_id_column values as str(value).strip()', () => {
    const fields = {...COLUMN_SPEC, scenario_id_column: 'sid'}
    expect(build({...GENERIC_ROW, sid: '  abc \n'}, fields)?.scenario_id).toBe('abc')
    expect(build({...GENERIC_ROW, sid: 12}, fields)?.scenario_id).toBe('12')
    expect(build('{"sid":12.0,"gym_task":{"responses_create_params":{}}}', fields)?.scenario_id).toBe('12.0')
    expect(build('{"sid":1e16,"gym_task":{"responses_create_params":{}}}', fields)?.scenario_id).toBe('1e+16')
  })

  it('rejects empty, missing and non-scalar scenario IDs', () => {
    const fields = {...COLUMN_SPEC, scenario_id_column: 'sid'}
    expect(buildError({...GENERIC_ROW, sid: ' \t'}, fields)).toEqual({field: 'scenario_id_column', message: 'scenario_id must not be empty'})
    expect(buildError({...GENERIC_ROW, sid: null}, fields)).toEqual({field: 'scenario_id_column', message: 'sid must contain a non-missing scenario ID'})
    expect(buildError({...GENERIC_ROW}, fields)).toEqual({field: 'scenario_id_column', message: 'missing source path: sid'})
    expect(buildError({...GENERIC_ROW, sid: true}, fields)).toEqual({field: 'scenario_id_column', message: 'sid must contain a string or a number, got boolean'})
    expect(buildError({...GENERIC_ROW, sid: '\ud800x'}, fields)).toEqual({field: 'scenario_id_column', message: 'sid must be valid Unicode (it contains a lone surrogate)'})
  })
})

describe('non-finite numbers', () => {
  it('are rejected in the task and in provenance, naming the field', () => {
    expect(buildError('{"gym_task":{"responses_create_params":{"temperature":1e400}}}', COLUMN_SPEC)).toEqual({
      field: 'task.responses_create_params.temperature',
      message: 'must be a finite number: this float overflows a double (Python reads it as inf, which JSON cannot carry)',
    })
    expect(buildError('{"seed":[-1E999],"gym_task":{"responses_create_params":{}}}', {...COLUMN_SPEC, provenance_columns: ['seed']})).toEqual({
      field: 'provenance.seed[0]',
      message: 'must be a finite number: this float overflows a double (Python reads it as inf, which JSON cannot carry)',
    })
  })
})

describe('buildScenarios', () => {
  async function files(rows: string[]) {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'gr-build-'))
    const input = path.join(dir, 'rows.jsonl')
    await writeFile(input, rows.map((r) => `${r}\n`).join(''))
    return {dir, input, output: path.join(dir, 'scenarios.jsonl')}
  }

  it('writes one bundle per included row and counts skipped and repeated IDs (test_processor_converts_only_included_rows)', async () => {
    const included = JSON.stringify(GENERIC_ROW)
    const rejected = JSON.stringify({...GENERIC_ROW, include: false})
    const {input, output} = await files([included, rejected, '', included])
    const summary = await buildScenarios({input, output, dryRun: false, spec: spec({...COLUMN_SPEC, include: 'include', provenance_columns: ['seed_id'], scenario_namespace: 'email'})})
    expect(summary).toMatchObject({rows: 3, skipped: 1, bundles: 2, repeatedScenarioIds: 1})
    const bundles = (await readFile(output, 'utf8')).trim().split('\n').map((line) => JSON.parse(line))
    expect(bundles[0]).toEqual({schema_version: '1', scenario_id: 'email-db86ad671a4e9d9a', task: GENERIC_ROW.gym_task, provenance: {seed_id: 7}})
    expect(Object.keys(bundles[0])).toEqual(['schema_version', 'scenario_id', 'task', 'provenance'])
  })

  it('keeps large integers and float spellings of the rows exactly', async () => {
    const {input, output} = await files(['{"gym_task":{"responses_create_params":{"temperature":1.0,"seed":1152921504606846975}},"n":9007199254740993}'])
    await buildScenarios({input, output, dryRun: false, spec: spec({...COLUMN_SPEC, provenance_columns: ['n']})})
    expect(await readFile(output, 'utf8')).toContain('{"responses_create_params":{"temperature":1.0,"seed":1152921504606846975}},"provenance":{"n":9007199254740993}}')
  })

  it('names file, line and field of a bad row and writes nothing', async () => {
    const {dir, input, output} = await files([JSON.stringify(GENERIC_ROW), '', JSON.stringify({...GENERIC_ROW, gym_task: {input: []}})])
    await expect(buildScenarios({input, output, dryRun: false, spec: spec(COLUMN_SPEC)})).rejects.toMatchObject({
      code: 'E_ROW_INVALID',
      exit: 2,
      location: {file: input, line: 3, field: 'task.responses_create_params'},
      message: 'task.responses_create_params: is required',
    })
    expect(await readdir(dir)).toEqual(['rows.jsonl'])
  })

  it('validates everything and writes nothing on a dry run', async () => {
    const {dir, input, output} = await files([JSON.stringify(GENERIC_ROW)])
    const summary = await buildScenarios({input, output, dryRun: true, spec: spec(COLUMN_SPEC)})
    expect(summary).toMatchObject({dryRun: true, bundles: 1})
    expect(await readdir(dir)).toEqual(['rows.jsonl'])
  })
})
