/**
 * The training rung of a recipe that trains several environments reads the reward signal of
 * each: samples of Relax's rollout dumps are attributed to an environment by their prompt (the
 * last user turn of the raw row), and an environment whose rewards never vary fails the rung by
 * name, with a triage of its own samples, however well the others learn.
 */
import {mkdir, mkdtemp, readFile, rm, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {newRecipe} from '../../src/scaffold/new-recipe.js'
import {trainingRung} from '../../src/ladder/training/index.js'
import {samplePromptKey} from '../../src/ladder/training/environments.js'
import {snapshotRoot} from '../helpers/cli.js'
import {addModelConfigs} from '../helpers/recipes.js'
import {rungContext} from '../helpers/trial-helpers.js'

const WORKPLACE = 'resources_servers/workplace_assistant/configs/workplace_assistant.yaml'
const CALENDAR = 'environments/calendar/config.yaml'

type Row = Record<string, any>

/** Qwen-style ChatML, as Relax dumps `prompt` for a chat model. */
function chatml(messages: Array<{role: string; content: string}>): string {
  return messages.map((m) => `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`).join('') + '<|im_start|>assistant\n'
}

describe('training rung: reward variance per environment', () => {
  let relax: string
  let rows: Row[]
  const env: Record<string, string> = {}

  beforeAll(async () => {
    relax = await mkdtemp(path.join(os.tmpdir(), 'gr-training-envs-'))
    await addModelConfigs(relax)
    await newRecipe({
      id: 'mixed', gymRoot: snapshotRoot, gymConfigs: [WORKPLACE, CALENDAR], relaxRoot: relax, from: 'workplace-assistant',
      agent: 'workplace_assistant_simple_agent', moreAgents: ['calendar_simple_agent'], smoke: false, force: false, dryRun: false, version: 'test',
    })
    const stamped = async (file: string, environment: string, config: string) =>
      (await readFile(path.join(snapshotRoot, file), 'utf8')).split('\n').filter((l) => l.trim()).map((l) => ({...JSON.parse(l), environment, config, data_source: environment}))
    rows = [
      ...(await stamped('resources_servers/workplace_assistant/data/example.jsonl', 'workplace_assistant', 'workplace-assistant-v1')),
      ...(await stamped('environments/calendar/data/example.jsonl', 'calendar', 'calendar-v1')),
    ]
    const raw = path.join(relax, 'shared', 'mixed_train.jsonl')
    await mkdir(path.dirname(raw), {recursive: true})
    await writeFile(raw, rows.map((r) => JSON.stringify(r)).join('\n') + '\n')
    Object.assign(env, {NEMO_GYM_SOURCE_DATA: raw, EXP_DIR: path.join(relax, 'exp')})
  }, 120_000)

  afterAll(async () => {
    if (relax) await rm(relax, {recursive: true, force: true})
  })

  /** Dump one rollout: four samples per row of `rowIndexes`, rewards from `rewardOf`. */
  async function dump(rowIndexes: number[], rewardOf: (row: Row, sample: number) => number | null, prompt: (row: Row) => unknown = (row) => chatml(row.responses_create_params.input)) {
    const dir = path.join(relax, 'exp', 'Qwen3-4B_mcore_8xgpu', 'rollout_result', 'train')
    await rm(dir, {recursive: true, force: true})
    await mkdir(dir, {recursive: true})
    const records = rowIndexes.flatMap((r, group) => Array.from({length: 4}, (_, k) => ({
      rollout_id: 0, sample_index: group * 4 + k, prompt: prompt(rows[r]), response: 'done', reward: rewardOf(rows[r], k), prompt_length: 10, response_length: 2, total_length: 12,
      prompt_token_count: 10, response_token_count: 2, total_token_count: 12, agent_turns: 1, status: 'completed', group_index: group,
    })))
    await writeFile(path.join(dir, '0.jsonl'), records.map((r) => JSON.stringify(r)).join('\n') + '\n')
  }

  async function environmentsCheck() {
    const ctx = await rungContext(relax, 'mixed', {env})
    const check = trainingRung.checks(ctx).find((c) => c.id === 'training.environments')
    expect(check, 'the training rung of a several-environment recipe has a per-environment check').toBeDefined()
    const [result] = (await check!.run(ctx)) as Array<{status: string; message: string; evidence?: any}>
    return result
  }

  it('passes when every environment has a group whose rewards vary, and reports each', async () => {
    // Rows 0-4 are workplace, 5-9 calendar; two groups of each.
    await dump([0, 1, 5, 6], (_row, k) => (k % 2 === 0 ? 1 : 0))
    const result = await environmentsCheck()
    expect(result.status, result.message).toBe('pass')
    expect(result.message).toBe('per environment: workplace_assistant 8 sample(s), 2/2 group(s) varied, mean reward 0.5; calendar 8 sample(s), 2/2 group(s) varied, mean reward 0.5')
    expect(result.evidence.per_environment.calendar).toEqual({samples: 8, groups: 2, groups_with_variance: 2, mean_reward: 0.5, rewards: [0, 1]})
  })

  it('fails, naming the environment, when one environment never scores although the other learns', async () => {
    await dump([0, 1, 5, 6], (row, k) => (row.environment === 'calendar' ? 0 : k % 2))
    const result = await environmentsCheck()
    expect(result.status).toBe('fail')
    expect(result.message).toMatch(/^calendar never varies: every reward 0 in its 2 group\(s\) of 8 sample\(s\), zero advantage; triage of calendar: the model answered wrongly \(8 model\)/)
    expect(result.message).toContain('— per environment: workplace_assistant 8 sample(s), 2/2 group(s) varied, mean reward 0.5; calendar 8 sample(s), 0/2 group(s) varied, mean reward 0')
    expect(result.message).not.toMatch(/workplace_assistant never varies/)
  })

  it('triages an environment whose verifier never ran apart from one whose model answered wrongly', async () => {
    await dump([0, 5], (row, k) => (row.environment === 'workplace_assistant' ? null : k % 2))
    const result = await environmentsCheck()
    expect(result.status).toBe('fail')
    expect(result.message).toMatch(/^workplace_assistant never varies: no group with reward variance .*triage of workplace_assistant: the verifier never ran or could not parse the response/)
  })

  it('fails when an environment has no sample at all among those attributed', async () => {
    await dump([0, 1], (_row, k) => k % 2)
    const result = await environmentsCheck()
    expect(result.status).toBe('fail')
    expect(result.message).toMatch(/^calendar has no sample among the 8 attributed: it never trained in this run/)
  })

  it('attributes prompts dumped as message lists too, and counts what it cannot attribute', async () => {
    await dump([0, 5, 6], (_row, k) => k % 2, (row) => (row.environment === 'calendar' ? row.responses_create_params.input : chatml([{role: 'user', content: 'a prompt no row has'}])))
    const result = await environmentsCheck()
    expect(result.status).toBe('fail') // workplace's only group was not attributed
    expect(result.message).toContain('workplace_assistant has no sample among the 8 attributed')
    expect(result.evidence.unattributed).toBe(4)
    expect(result.evidence.per_environment.calendar.samples).toBe(8)
  })

  it('skips, saying why, when no dumped prompt matches a row of the raw file', async () => {
    await dump([0, 5], (_row, k) => k % 2, () => 'plain text with no chat turns')
    const result = await environmentsCheck()
    expect(result.status).toBe('skip')
    expect(result.message).toContain("none of the 8 dumped prompt(s) matches the last user turn of a row")
  })

  it('reads the last user turn of a ChatML prompt, not an earlier one or the system prompt', () => {
    expect(samplePromptKey(chatml([{role: 'system', content: 'sys'}, {role: 'user', content: ' first '}, {role: 'assistant', content: 'a'}, {role: 'user', content: ' second\nline '}]))).toBe('second\nline')
    expect(samplePromptKey([{role: 'user', content: [{type: 'input_text', text: 'part one '}, {type: 'input_text', text: 'two'}]}])).toBe('part one two')
    expect(samplePromptKey(42)).toBeNull()
  })
})
