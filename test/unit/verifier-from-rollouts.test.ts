/**
 * Verifier examples from an environment's own example rollouts: which rollout is taken as correct,
 * which as wrong, how a rollout is tied to its task row, and when there is nothing to take; and
 * which fields of the example rows every training row must carry.
 */
import {mkdir, mkdtemp, rm, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {afterEach, describe, expect, it} from 'vitest'

import {loadBuiltin} from '../../src/contract/builtin.js'
import {loadGymGraph} from '../../src/contract/gym-config.js'
import {exampleRowsFiles} from '../../src/contract/gym-config/example-rows.js'
import {summarizeExamples} from '../../src/scaffold/new-recipe.js'
import {turnsToOutputItems} from '../../src/scaffold/view.js'
import {verifierFromRollouts} from '../../src/scaffold/verifier-from-rollouts.js'

const roots: string[] = []
afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, {recursive: true, force: true})
})

const CONFIG = `quiz:
  resources_servers:
    quiz:
      entrypoint: app.py
quiz_agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server: {type: resources_servers, name: quiz}
      model_server: {type: responses_api_models, name: policy_model}
      datasets:
      - {name: example, type: example, jsonl_fpath: resources_servers/quiz/data/example.jsonl, license: Apache 2.0}
`
const task = (q: string, extra: object = {}) => JSON.stringify({responses_create_params: {input: [{role: 'user', content: q}]}, answer: q.length, ...extra})
/** A rollout as Gym writes it: the input as the model saw it (typed, parts), the response, the reward. */
const rollout = (q: string, answer: string, reward: number, extra: object[] = [], fields: object = {}) =>
  JSON.stringify({
    responses_create_params: {input: [{content: [{type: 'input_text', text: q}], type: 'message', role: 'user'}], temperature: 1},
    response: {output: [{type: 'reasoning', summary: [{text: 'thinking'}]}, ...extra, {type: 'message', role: 'assistant', content: [{type: 'output_text', text: answer}]}]},
    reward,
    ...fields,
  })

/** A Gym checkout holding the quiz environment; `serverFields` adds YAML lines to its resources server. */
async function gym(rows: string[], rollouts: string[] | undefined, serverFields?: string): Promise<{root: string; graph: Awaited<ReturnType<typeof loadGymGraph>>}> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'gr-rollouts-'))
  roots.push(root)
  await mkdir(path.join(root, 'resources_servers/quiz/configs'), {recursive: true})
  await mkdir(path.join(root, 'resources_servers/quiz/data'), {recursive: true})
  await writeFile(path.join(root, 'resources_servers/quiz/configs/quiz.yaml'), serverFields ? CONFIG.replace('      entrypoint: app.py\n', `      entrypoint: app.py\n      ${serverFields}\n`) : CONFIG)
  await writeFile(path.join(root, 'resources_servers/quiz/data/example.jsonl'), `${rows.join('\n')}\n`)
  if (rollouts) await writeFile(path.join(root, 'resources_servers/quiz/data/example_rollouts.jsonl'), `${rollouts.join('\n')}\n`)
  return {root, graph: await loadGymGraph(root, ['resources_servers/quiz/configs/quiz.yaml'])}
}

describe('verifier examples from example rollouts', () => {
  it('takes the best-rewarded answer as correct and a lower one for the same task as wrong, tied to its task row', async () => {
    const {root, graph} = await gym([task('one'), task('two'), task('three')], [rollout('two', 'wrong answer', 0), rollout('three', 'right', 1), rollout('three', 'also wrong', 0)])
    const base = await loadBuiltin('calendar')
    const r = await verifierFromRollouts(root, graph, 'quiz_agent', base)
    if ('none' in r) throw new Error(r.none)
    expect(r.override.verifier).toMatchObject({kind: 'direct', task: {file: 'resources_servers/quiz/data/example.jsonl', row: 2}, payload: null, correct: [{text: 'right'}], wrong: [{text: 'also wrong'}], success_reward: 1, failure_reward: 0})
    expect(r.override.trial).toMatchObject({task: {file: 'resources_servers/quiz/data/example.jsonl', row: 2}, turns: [{text: 'right'}], expect: {status: 'completed', reward: 1}})
    expect(r.from).toBe('the example rollouts: correct resources_servers/quiz/data/example_rollouts.jsonl:2 (reward 1) for resources_servers/quiz/data/example.jsonl row 2; wrong resources_servers/quiz/data/example_rollouts.jsonl:3 (reward 0), same task')
  })

  it("without a wrong answer for the same task, another task's lower-rewarded answer is graded on its own row; with none at all, one is derived", async () => {
    const other = await gym([task('one'), task('two')], [rollout('one', 'right', 1), rollout('two', 'nope', 0)])
    const base = await loadBuiltin('calendar')
    const r1 = await verifierFromRollouts(other.root, other.graph, 'quiz_agent', base)
    if ('none' in r1) throw new Error(r1.none)
    // The grader scored "nope" 0 for row 1; for row 0 it might score it anything.
    expect(r1.override.verifier).toMatchObject({task: {row: 0}, correct: [{text: 'right'}], wrong: [{text: 'nope'}], wrong_task: {file: 'resources_servers/quiz/data/example.jsonl', row: 1}, failure_reward: 0})
    expect(r1.from).toMatch(/example_rollouts\.jsonl:2 \(reward 0\) for resources_servers\/quiz\/data\/example\.jsonl row 1, graded on its own row$/)
    // A lower-rewarded answer that carries only its task fields (no row) stays another task's answer.
    const fieldsOnly = await gym([task('one')], [rollout('one', 'right', 1), rollout('elsewhere', 'nope', 0, [], {expected_answer: 'x'})])
    const r3 = await verifierFromRollouts(fieldsOnly.root, fieldsOnly.graph, 'quiz_agent', base)
    if ('none' in r3) throw new Error(r3.none)
    expect(r3.override.verifier).toMatchObject({wrong: [{text: 'nope'}], failure_reward: null})
    expect(r3.override.verifier.wrong_task).toBeUndefined()
    expect(r3.from).toMatch(/another task's answer$/)
    const allRight = await gym([task('one')], [rollout('one', 'right', 1)])
    const r2 = await verifierFromRollouts(allRight.root, allRight.graph, 'quiz_agent', base)
    if ('none' in r2) throw new Error(r2.none)
    expect(r2.override.verifier.wrong).toEqual([{text: 'I cannot answer this.'}])
    expect(r2.from).toMatch(/derived \("I cannot answer this\."\): every rollout earned 1$/)
  })

  it('the most clearly wrong answer is taken: the lowest reward, not a near miss', async () => {
    const {root, graph} = await gym([task('one')], [rollout('one', 'right', 1), rollout('one', 'close', 0.95), rollout('one', 'far off', 0.1)])
    const r = await verifierFromRollouts(root, graph, 'quiz_agent', await loadBuiltin('calendar'))
    if ('none' in r) throw new Error(r.none)
    expect(r.override.verifier).toMatchObject({wrong: [{text: 'far off'}], failure_reward: 0.1})
  })

  it("where a judge model grades, the wrong answer is another task's rewarded answer, not a near miss another judge might pass", async () => {
    const rollouts = [rollout('one', 'amino acids', 0), rollout('one', 'amino', 1), rollout('two', 'the sun', 1)]
    const calendar = await loadBuiltin('calendar')
    const judged = await gym([task('one'), task('two')], rollouts, 'judge_model_server: {type: responses_api_models, name: judge_model}')
    const r = await verifierFromRollouts(judged.root, judged.graph, 'quiz_agent', calendar)
    if ('none' in r) throw new Error(r.none)
    expect(r.override.verifier).toMatchObject({task: {row: 0}, correct: [{text: 'amino'}], wrong: [{text: 'the sun'}], failure_reward: null})
    expect(r.override.verifier.wrong_task).toBeUndefined()
    expect(r.from).toMatch(/example_rollouts\.jsonl:3 \(reward 1\), another task's rewarded answer graded on this task \(a judge model grades it, so no near miss\)$/)
    // Without a judge, or with the judge switched off, the recorded near miss stays the wrong answer.
    for (const extra of [undefined, 'judge_model_server: {type: responses_api_models, name: judge_model}\n      should_use_judge: false']) {
      const plain = await gym([task('one'), task('two')], rollouts, extra)
      const p = await verifierFromRollouts(plain.root, plain.graph, 'quiz_agent', calendar)
      if ('none' in p) throw new Error(p.none)
      expect(p.override.verifier).toMatchObject({wrong: [{text: 'amino acids'}], failure_reward: 0})
    }
    // With only one task answered, a judged environment keeps the same task's lower answer.
    const single = await gym([task('one')], [rollout('one', 'amino', 1), rollout('one', 'amino acids', 0)], 'judge_model_server: {type: responses_api_models, name: judge_model}')
    const s1 = await verifierFromRollouts(single.root, single.graph, 'quiz_agent', calendar)
    if ('none' in s1) throw new Error(s1.none)
    expect(s1.override.verifier).toMatchObject({wrong: [{text: 'amino acids'}], failure_reward: 0})
  })

  it('a rollout that answers no example row but carries its task fields is replayed from those fields, without a trial', async () => {
    const {root, graph} = await gym([task('one')], [rollout('elsewhere', '42', 1, [], {expected_answer: '42'}), rollout('elsewhere', '41', 0, [], {expected_answer: '42'})])
    const r = await verifierFromRollouts(root, graph, 'quiz_agent', await loadBuiltin('calendar'))
    if ('none' in r) throw new Error(r.none)
    expect(r.override.verifier).toMatchObject({task: null, payload: {expected_answer: '42', responses_create_params: {temperature: 1}}, correct: [{text: '42'}], wrong: [{text: '41'}], failure_reward: 0})
    expect(r.override.verifier.payload).not.toHaveProperty('response')
    expect(r.override.verifier.payload).not.toHaveProperty('reward')
    expect(r.override.trial).toBeNull()
    expect(r.from).toMatch(/with the task fields it carries/)
  })

  it('says why when there is nothing to take: no rollouts, no matching task row, only calls that cannot be written back', async () => {
    const base = await loadBuiltin('calendar')
    const none = await gym([task('one')], undefined)
    expect(await verifierFromRollouts(none.root, none.graph, 'quiz_agent', base)).toEqual({none: expect.stringMatching(/^no example rollouts/)})
    const unmatched = await gym([task('one')], [rollout('something else', 'x', 1)])
    expect(await verifierFromRollouts(unmatched.root, unmatched.graph, 'quiz_agent', base)).toEqual({none: expect.stringMatching(/none answers a task row of its example data or carries its task fields$/)})
    const broken = await gym([task('one')], [rollout('one', 'x', 1, [{type: 'function_call', name: 'look', arguments: '{not json', call_id: 'c'}, {type: 'function_call_output', call_id: 'c', output: 'seen'}])])
    expect(await verifierFromRollouts(broken.root, broken.graph, 'quiz_agent', base)).toEqual({none: expect.stringMatching(/no call in them that can be written back/)})
  })

  it('ties a rollout whose prompt the environment rewrote to its row by _ng_task_index, never to its own verify fields', async () => {
    const base = await loadBuiltin('calendar')
    const rewritten = await gym([task('one'), task('two')], [rollout('seeded prompt', 'right', 1, [], {_ng_task_index: 1, matched_tool: 'x'}), rollout('seeded prompt', 'wrong', 0, [], {_ng_task_index: 1, matched_tool: 'y'})])
    const r = await verifierFromRollouts(rewritten.root, rewritten.graph, 'quiz_agent', base)
    if ('none' in r) throw new Error(r.none)
    expect(r.override.verifier).toMatchObject({task: {file: 'resources_servers/quiz/data/example.jsonl', row: 1}, payload: null, correct: [{text: 'right'}], wrong: [{text: 'wrong'}]})
    // An index past the example rows ties nothing: the rollout's own fields are the payload then.
    const past = await gym([task('one')], [rollout('seeded prompt', 'right', 1, [], {_ng_task_index: 7, answer: 3})])
    const p = await verifierFromRollouts(past.root, past.graph, 'quiz_agent', base)
    if ('none' in p) throw new Error(p.none)
    expect(p.override.verifier).toMatchObject({task: null, payload: {answer: 3, _ng_task_index: 7}})
  })

  it('replays a rollout that fed tool results back to /verify as recorded, with no trial (a replay through the Gateway would need the tools)', async () => {
    const base = await loadBuiltin('calendar')
    const used = [{type: 'function_call', name: 'look', arguments: '{"q": "x"}', call_id: 'c1'}, {type: 'function_call_output', call_id: 'c1', output: [{type: 'text', text: 'seen'}]}]
    const tools = await gym([task('one')], [rollout('one', 'right', 1, used), rollout('one', 'wrong', 0, used)])
    const r = await verifierFromRollouts(tools.root, tools.graph, 'quiz_agent', base)
    if ('none' in r) throw new Error(r.none)
    expect(r.override.verifier.correct).toEqual([{tool_call: {name: 'look', arguments: {q: 'x'}}}, {tool_output: '[{"type":"text","text":"seen"}]'}, {text: 'right'}])
    expect(r.override.verifier.wrong.at(-1)).toEqual({text: 'wrong'})
    expect(r.override.trial).toBeNull()
    // Written as the Responses API output the grader scored: the result answers the call before it.
    expect(turnsToOutputItems(r.override.verifier.correct).map((item) => [item.type, item.call_id ?? null])).toEqual([['function_call', 'call_0'], ['function_call_output', 'call_0'], ['message', null]])
  })

  it('never takes an answer that earned nothing as the correct one (the rewarded rollout holds a call that cannot be written back)', async () => {
    const base = await loadBuiltin('calendar')
    const badCall = [{type: 'function_call', name: 'run', arguments: '[1]', call_id: 'c'}, {type: 'function_call_output', call_id: 'c', output: '3'}]
    const zeros = await gym([task('one'), task('two')], [rollout('one', 'a', 0), rollout('two', 'b', 0), rollout('one', 'right', 1, badCall)])
    const r = await verifierFromRollouts(zeros.root, zeros.graph, 'quiz_agent', base)
    expect(r).toEqual({none: expect.stringMatching(/earned a reward above 0 \(the best earned 0; those that did hold calls that cannot be written back/)})
    const negative = await gym([task('one')], [rollout('one', 'a', -1), rollout('one', 'b', -2)])
    expect(await verifierFromRollouts(negative.root, negative.graph, 'quiz_agent', base)).toEqual({none: expect.stringMatching(/the best earned -1\)$/)})
  })
})

describe('verifier fields from example rows', () => {
  it('a field some example row lacks (or holds null) is not demanded of every row', async () => {
    const {root, graph} = await gym([task('one', {answer_type: 'int', hint: null}), task('two', {hint: 'x'}), task('three', {answer_type: 'int', hint: 'y'})], undefined)
    const rows = await summarizeExamples(await exampleRowsFiles(root, graph, 'quiz_agent'))
    expect(rows?.fields.sort()).toEqual(['answer', 'responses_create_params'])
  })
})
