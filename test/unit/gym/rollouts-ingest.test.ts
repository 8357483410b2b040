import {mkdtemp, readdir, readFile, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {describe, expect, it} from 'vitest'

import {scanObjectMembers} from '../../../src/json/index.js'
import {ingestRollouts} from '../../../src/gym/rollouts/ingest.js'
import {exportBundle} from '../../../src/gym/tasks/export.js'

/** An exported task line for a scenario, as `tasks export` writes it. */
function task(scenarioId: string, extra = '', provenance = '{"seed_id":7}'): string {
  return exportBundle(scanObjectMembers(`{"scenario_id":"${scenarioId}","task":{"responses_create_params":{"input":[]}${extra}},"provenance":${provenance}}`, 'task')!)
}

const S1_INDEX = '1048143972598214168'
const S2_INDEX = '780011709654993714'

interface Files {
  dir: string
  tasks: string
  rollouts: string
  failures: string
  output: string
}

async function files(contents: {tasks: string[]; rollouts?: string[]; failures?: string[]}): Promise<Files> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'gr-ingest-'))
  const paths = {dir, tasks: path.join(dir, 'tasks.jsonl'), rollouts: path.join(dir, 'rollouts.jsonl'), failures: path.join(dir, 'rollouts_failures.jsonl'), output: path.join(dir, 'normalized.jsonl')}
  await writeFile(paths.tasks, contents.tasks.map((line) => `${line}\n`).join(''))
  await writeFile(paths.rollouts, (contents.rollouts ?? []).map((line) => `${line}\n`).join(''))
  if (contents.failures) await writeFile(paths.failures, contents.failures.map((line) => `${line}\n`).join(''))
  return paths
}

async function ingest(contents: {tasks: string[]; rollouts?: string[]; failures?: string[]}) {
  const paths = await files(contents)
  const summary = await ingestRollouts({...paths, failures: contents.failures ? paths.failures : undefined, dryRun: false})
  const text = await readFile(paths.output, 'utf8')
  return {summary, text, records: text === '' ? [] : text.trim().split('\n').map((line) => JSON.parse(line))}
}

describe('rollouts ingest (reference §4.1)', () => {
  it('joins a rollout onto its task (test_cli_exports_and_ingests_scenario)', async () => {
    const {records, summary} = await ingest({tasks: [task('s1')], rollouts: [`{"_ng_task_index":${S1_INDEX},"_ng_rollout_index":0,"reward":1.0,"response":{"output":[]}}`]})
    expect(summary).toMatchObject({records: 1, rollouts: {records: 1}, failures: {path: null, records: 0}, tasks: {lines: 1, distinct: 1, identicalDuplicates: 0}})
    expect(records[0]).toMatchObject({scenario_id: 's1', status: 'completed', reward: 1, rollout_index: 0, provenance: {seed_id: 7}})
  })

  it('writes the output fields in order, with exact source text for numbers', async () => {
    const rollout = `{"reward": 1.0, "_ng_task_index": ${S1_INDEX}, "_ng_rollout_index": 3, "big": 123456789012345678901}`
    const {text} = await ingest({tasks: [task('s1')], rollouts: [rollout]})
    expect(text).toBe(
      `{"scenario_id":"s1","task_index":${S1_INDEX},"rollout_index":3,"status":"completed","reward":1.0,"provenance":{"seed_id":7},"agent_ref":null,` +
        '"failure_class":null,"failure_terminal":false,"failure_reason":null,"failure_stage":null,"rollout_id":null,"attempt":null,"task_id":null,"environment_server":null,' +
        `"task":${task('s1')},"rollout":${rollout}}\n`,
    )
  })

  it('puts completed records first, then failures (test_normalize_rollouts_includes_failure_sidecar)', async () => {
    const {records, summary} = await ingest({
      tasks: [task('s1'), task('s2')],
      rollouts: [`{"_ng_task_index":${S2_INDEX},"_ng_rollout_index":0,"reward":0.0}`],
      failures: [`{"_ng_task_index":${S1_INDEX},"_ng_rollout_index":0,"_ng_failure_class":"timeout","_ng_failure_terminal":true}`, `{"_ng_task_index":${S2_INDEX}}`],
    })
    expect(records.map((r) => [r.scenario_id, r.status])).toEqual([
      ['s2', 'completed'],
      ['s1', 'failed'],
      ['s2', 'failed'],
    ])
    expect(records[1]).toMatchObject({failure_class: 'timeout', failure_terminal: true, reward: null})
    expect(records[2]).toMatchObject({failure_class: null, failure_terminal: false, rollout_index: null})
    expect(summary).toMatchObject({records: 3, rollouts: {records: 1}, failures: {records: 2}})
  })

  it("prefers the rollout's agent_ref, even null, over the task's", async () => {
    const ref = ',"agent_ref":{"type":"responses_api_agents","name":"task_agent"}'
    const {records} = await ingest({tasks: [task('s1', ref), task('s2', ref)], rollouts: [`{"_ng_task_index":${S1_INDEX},"agent_ref":null}`, `{"_ng_task_index":${S2_INDEX}}`]})
    expect(records[0].agent_ref).toBeNull()
    expect(records[1].agent_ref).toEqual({type: 'responses_api_agents', name: 'task_agent'})
  })

  it('joins on id when a task has no _ng_task_index, and matches integral floats like 5.0', async () => {
    const {records} = await ingest({tasks: ['{"id":5,"_dd_scenario_id":"five","responses_create_params":{}}'], rollouts: ['{"_ng_task_index":5}', '{"_ng_task_index":5.0}', '{"_ng_task_index":0.5e1}']})
    expect(records.map((r) => [r.scenario_id, r.task_index, r.provenance])).toEqual([
      ['five', 5, {}],
      ['five', 5, {}],
      ['five', 5, {}],
    ])
  })

  it('keeps 60-bit indices apart that differ only past 2^53', async () => {
    const high = 2n ** 60n - 1n
    const low = high - 1n
    expect(Number(high)).toBe(Number(low))
    const {text} = await ingest({
      tasks: [`{"_ng_task_index":${high},"_dd_scenario_id":"high","responses_create_params":{}}`, `{"_ng_task_index":${low},"_dd_scenario_id":"low","responses_create_params":{}}`],
      rollouts: [`{"_ng_task_index":${low}}`, `{"_ng_task_index":${high}}`],
    })
    const lines = text.trim().split('\n')
    expect(lines[0]).toMatch(new RegExp(`^\\{"scenario_id":"low","task_index":${low},`))
    expect(lines[1]).toMatch(new RegExp(`^\\{"scenario_id":"high","task_index":${high},`))
  })

  it('copies task and rollout bytes exactly: whitespace around a line and CRLF dropped, multi-byte text kept', async () => {
    const t = task('s1', ',"note":"Réponse ✓ 😀"')
    const r1 = `{"_ng_task_index":${S1_INDEX},"reward":1.0,"response":{"text":"été ✓ 😀"}}`
    const r2 = `{"_ng_task_index":${S1_INDEX},"reward":0.0}`
    const paths = await files({tasks: [` \t${t}  \r`], rollouts: [`  ${r1} \r`, '', r2]})
    await ingestRollouts({...paths, failures: undefined, dryRun: false})
    const lines = (await readFile(paths.output, 'utf8')).split('\n')
    expect(lines).toHaveLength(3)
    expect(lines[0].endsWith(`,"task":${t},"rollout":${r1}}`)).toBe(true)
    expect(lines[1].endsWith(`,"task":${t},"rollout":${r2}}`)).toBe(true)
    expect(lines[0].startsWith(`{"scenario_id":"s1","task_index":${S1_INDEX},"rollout_index":null,"status":"completed","reward":1.0,"provenance":{"seed_id":7},`)).toBe(true)
    expect(lines[2]).toBe('')
  })

  it('writes an empty file when there are no rollouts', async () => {
    const {text, summary} = await ingest({tasks: [task('s1')], rollouts: []})
    expect(text).toBe('')
    expect(summary.records).toBe(0)
  })
})

describe('newer ingest rules (reference §4.2)', () => {
  it('allows identical duplicate tasks, whatever their key order or spacing', async () => {
    const reordered = `{"_dd_provenance": {"seed_id": 7}, "_dd_scenario_id": "s1", "_ng_task_index": ${S1_INDEX}, "id": ${S1_INDEX}, "responses_create_params": {"input": []}}`
    const {summary} = await ingest({tasks: [task('s1'), reordered], rollouts: [`{"_ng_task_index":${S1_INDEX}}`]})
    expect(summary.tasks).toEqual({path: expect.any(String), lines: 2, distinct: 1, identicalDuplicates: 1})
  })

  it('rejects conflicting tasks with the same index, naming both lines', async () => {
    const paths = await files({tasks: [task('s1'), task('s1', '', '{"seed_id":8}')]})
    await expect(ingestRollouts({...paths, failures: undefined, dryRun: false})).rejects.toMatchObject({
      code: 'E_TASK_CONFLICT',
      exit: 2,
      location: {file: paths.tasks, line: 2, field: '_ng_task_index'},
      message: `_ng_task_index: conflicting tasks share task index ${S1_INDEX}: this task differs from the one on line 1`,
    })
  })

  it('requires an explicitly given failures file to exist', async () => {
    const paths = await files({tasks: [task('s1')]})
    await expect(ingestRollouts({...paths, dryRun: false})).rejects.toMatchObject({code: 'E_JSONL_MISSING', exit: 2, message: `JSONL file does not exist: ${paths.failures}`, location: {field: '--failures'}})
  })

  it('maps explicit sources to rollout_id, attempt, task_id, environment_server, failure_reason and failure_stage', async () => {
    const {records} = await ingest({
      tasks: [task('s1')],
      rollouts: [
        `{"_ng_task_index":${S1_INDEX},"_ng_rollout_id":"r-7","_ng_attempt_index":2,"_ng_task_id":{"taskset":"cal","task_id":"t9"},"_ng_environment_server":"calendar"}`,
        `{"_ng_task_index":${S1_INDEX},"_ng_episode_id":{"rollout_id":"r-8","attempt":1}}`,
      ],
      failures: [
        `{"_ng_task_index":${S1_INDEX},"_ng_failure_class":"agent_run_error","_ng_failure_message":"boom","_ng_failure_stage":"agent"}`,
        `{"_ng_task_index":${S1_INDEX},"failure_reason":"explicit","failure_stage":"verification","_ng_failure_message":"native","_ng_failure_stage":"agent"}`,
        `{"_ng_task_index":${S1_INDEX},"_ng_failure_record":{"episode_id":{"rollout_id":"r-9","attempt":3},"failure":{"failure_reason":"deadline","terminal":true,"stage":"admission"}}}`,
      ],
    })
    const pick = (r: any) => [r.rollout_id, r.attempt, r.task_id, r.environment_server, r.failure_reason, r.failure_stage]
    expect(records.map(pick)).toEqual([
      ['r-7', 2, {taskset: 'cal', task_id: 't9'}, 'calendar', null, null],
      ['r-8', 1, null, null, null, null],
      [null, null, null, null, 'boom', 'agent'],
      [null, null, null, null, 'explicit', 'verification'],
      ['r-9', 3, null, null, 'deadline', 'admission'],
    ])
  })

  it('leaves missing values null and infers nothing (no "{task}-{rollout}" IDs, no attempt from rollout index)', async () => {
    const {records} = await ingest({tasks: [task('s1')], failures: [`{"_ng_task_index":${S1_INDEX},"_ng_rollout_index":4,"_ng_rollout_id":null,"failure_reason":null}`]})
    expect(records[0]).toMatchObject({rollout_id: null, attempt: null, failure_reason: null, failure_stage: null, failure_class: null, task_id: null})
  })
})

describe('ingest errors (file, line, field; exit 2; nothing written)', () => {
  async function rejection(contents: {tasks: string[]; rollouts?: string[]}) {
    const paths = await files(contents)
    const error = await ingestRollouts({...paths, failures: undefined, dryRun: false}).then(
      () => undefined,
      (caught) => caught,
    )
    expect(await readdir(paths.dir)).not.toContain('normalized.jsonl')
    return {error, paths}
  }

  it('rejects a rollout whose index is unknown, a string, or missing', async () => {
    const cases: [string, string][] = [
      ['{"_ng_task_index":123}', '_ng_task_index: rollout references unknown task index: 123'],
      [`{"_ng_task_index":"${S1_INDEX}"}`, `_ng_task_index: rollout references unknown task index: "${S1_INDEX}" (a string; task indices are integers)`],
      ['{"_ng_task_index":null}', '_ng_task_index: rollout references unknown task index: null'],
      ['{"_ng_task_index":true}', '_ng_task_index: rollout references unknown task index: true'],
      ['{"reward":1.0}', '_ng_task_index: missing, so the record cannot be joined to a task'],
    ]
    for (const [rollout, message] of cases) {
      const {error, paths} = await rejection({tasks: [task('s1')], rollouts: [`{"_ng_task_index":${S1_INDEX}}`, rollout]})
      expect(error).toMatchObject({code: 'E_ROLLOUT_INVALID', exit: 2, message, location: {file: paths.rollouts, line: 2, field: '_ng_task_index'}})
    }
  })

  it('reads task keys written with escapes, a null provenance as none, and spacing as written', async () => {
    const spaced = `{ "responses_create_params" : {"input": []}, "_ng_task_\\u0069ndex" : 50E-1 , "_dd_scenario_id" : "s\\u00e9" , "_dd_provenance" : null , "agent_ref" : {"name": "a"} }`
    const {text} = await ingest({tasks: [spaced], rollouts: ['{"_ng_task_index":5,"reward":0.5}']})
    expect(text).toBe(
      '{"scenario_id":"s\\u00e9","task_index":5,"rollout_index":null,"status":"completed","reward":0.5,"provenance":{},"agent_ref":{"name": "a"},' +
        '"failure_class":null,"failure_terminal":false,"failure_reason":null,"failure_stage":null,"rollout_id":null,"attempt":null,"task_id":null,"environment_server":null,' +
        `"task":${spaced.trim()},"rollout":{"_ng_task_index":5,"reward":0.5}}\n`,
    )
  })

  it('rejects tasks without an index, without _dd_scenario_id, or with bad fields', async () => {
    const cases: [string, string, string][] = [
      ['{"responses_create_params":{},"_dd_scenario_id":"x"}', 'id', 'id: every task must contain _ng_task_index or id'],
      ['{"_ng_task_index":null,"id":5,"_dd_scenario_id":"x"}', '_ng_task_index', '_ng_task_index: every task must contain _ng_task_index or id'],
      ['{"_ng_task_index":"5","_dd_scenario_id":"x"}', '_ng_task_index', '_ng_task_index: task index must be an integer, got "5"'],
      ['{"_ng_task_index":5}', '_dd_scenario_id', '_dd_scenario_id: task 5 does not contain _dd_scenario_id'],
      ['{"_ng_task_index":5,"_dd_scenario_id":""}', '_dd_scenario_id', '_dd_scenario_id: task 5 does not contain _dd_scenario_id'],
      ['{"_ng_task_index":5,"_dd_scenario_id":7}', '_dd_scenario_id', '_dd_scenario_id: task 5 does not contain _dd_scenario_id'],
      ['{"_ng_task_index":5,"_dd_scenario_id":null}', '_dd_scenario_id', '_dd_scenario_id: task 5 does not contain _dd_scenario_id'],
      ['{"_ng_task_index":5.5,"_dd_scenario_id":"x"}', '_ng_task_index', '_ng_task_index: task index must be an integer, got 5.5'],
      ['{"_ng_task_\\u0069ndex":"é","_dd_scenario_id":"x"}', '_ng_task_index', '_ng_task_index: task index must be an integer, got "é"'],
      ['{"_ng_task_index":5,"_dd_scenario_id":"x","_dd_provenance":[1]}', '_dd_provenance', '_dd_provenance: must be a JSON object'],
      ['{"_ng_task_index":5,"_dd_scenario_id":"x","responses_create_params":{"t":1e400}}', 'responses_create_params.t', 'responses_create_params.t: must be a finite number: this float overflows a double (Python reads it as inf, which JSON cannot carry)'],
    ]
    for (const [line, field, message] of cases) {
      const {error, paths} = await rejection({tasks: [task('s1'), line]})
      expect(error).toMatchObject({code: 'E_TASK_INVALID', exit: 2, message, location: {file: paths.tasks, line: 2, field}})
    }
  })

  it('reports a nonexistent rollouts file before reading the tasks', async () => {
    const paths = await files({tasks: ['not json']})
    await expect(ingestRollouts({...paths, rollouts: path.join(paths.dir, 'nope.jsonl'), failures: undefined, dryRun: false})).rejects.toMatchObject({
      code: 'E_JSONL_MISSING',
      message: `JSONL file does not exist: ${path.join(paths.dir, 'nope.jsonl')}`,
    })
  })

  it('validates everything and writes nothing on a dry run', async () => {
    const paths = await files({tasks: [task('s1')], rollouts: [`{"_ng_task_index":${S1_INDEX}}`]})
    const summary = await ingestRollouts({...paths, failures: undefined, dryRun: true})
    expect(summary).toMatchObject({dryRun: true, records: 1})
    expect(await readdir(paths.dir)).not.toContain('normalized.jsonl')
  })

  it('refuses a rollout holding a float that overflows a double, as tasks build and export do', async () => {
    const {error, paths} = await rejection({tasks: [task('s1')], rollouts: [`{"_ng_task_index":${S1_INDEX},"x":1e400}`]})
    expect(error).toMatchObject({code: 'E_ROLLOUT_INVALID', exit: 2, location: {field: 'x', line: 1}, message: expect.stringMatching(/^x: must be a finite number/)})
    expect(await readdir(paths.dir)).not.toContain('normalized.jsonl')
  })
})
