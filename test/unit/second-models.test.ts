/**
 * Judges, user simulators and other model servers a graph calls besides the policy: found by the
 * shape of a model reference, never by name; switched off by should_use_judge/use_judge: false.
 */
import {mkdir, mkdtemp, rm, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {afterEach, describe, expect, it} from 'vitest'

import {loadGymGraph} from '../../src/contract/gym-config.js'
import {secondModels} from '../../src/contract/gym-config/second-models.js'

const roots: string[] = []
afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, {recursive: true, force: true})
})

async function graphOf(yaml: string, options: {relaxPolicy?: boolean} = {}) {
  const root = await mkdtemp(path.join(os.tmpdir(), 'gr-models-'))
  roots.push(root)
  await mkdir(path.join(root, 'resources_servers/quiz/configs'), {recursive: true})
  await writeFile(path.join(root, 'resources_servers/quiz/configs/quiz.yaml'), yaml)
  const graph = await loadGymGraph(root, ['resources_servers/quiz/configs/quiz.yaml'], options)
  return secondModels(graph, graph.agents[0])
}

const agent = (extra = '') => `quiz_agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server: {type: resources_servers, name: quiz}
      model_server: {type: responses_api_models, name: policy_model}
${extra}`

describe('second models of a graph', () => {
  it('a judge that names policy_model is the policy; the agent\'s own model_server is not a second model', async () => {
    const models = await graphOf(`quiz:
  resources_servers:
    quiz:
      entrypoint: app.py
      judge_model_server: {type: responses_api_models, name: policy_model}
${agent()}`)
    expect(models).toEqual([{role: 'judge', owner: 'quiz', key: 'judge_model_server', server: 'policy_model', policy: true, enabled: true, defined: true}])
  })

  it('a switch turns the judge off; a judge server the configs define is not the policy', async () => {
    const off = await graphOf(`quiz:
  resources_servers:
    quiz:
      entrypoint: app.py
      should_use_judge: false
      judge_model_server: {type: responses_api_models, name: policy_model}
${agent()}`)
    expect(off).toMatchObject([{role: 'judge', policy: true, enabled: false}])
    const own = await graphOf(`judge_model:
  responses_api_models:
    openai_model: {entrypoint: app.py, openai_base_url: http://127.0.0.1:9/v1, openai_model: j}
quiz:
  resources_servers:
    quiz:
      entrypoint: app.py
      judge_model_server: {type: responses_api_models, name: judge_model}
${agent()}`)
    expect(own).toEqual([{role: 'judge', owner: 'quiz', key: 'judge_model_server', server: 'judge_model', policy: false, enabled: true, defined: true}])
  })

  it('a user simulator on the agent, an undefined genrm server, and flat ${policy_base_url} judge values', async () => {
    const models = await graphOf(`quiz:
  resources_servers:
    quiz:
      entrypoint: app.py
      genrm_model_server: {type: responses_api_models, name: genrm_model}
      judge_base_url: \${policy_base_url}
      judge_model: \${policy_model_name}
      judge_api_key: \${policy_api_key}
${agent('      user_model_server: {type: responses_api_models, name: policy_model}\n')}`)
    expect(models).toEqual([
      {role: 'simulator', owner: 'quiz_agent', key: 'user_model_server', server: 'policy_model', policy: true, enabled: true, defined: true},
      {role: 'judge', owner: 'quiz', key: 'genrm_model_server', server: 'genrm_model', policy: false, enabled: true, defined: false},
      {role: 'judge', owner: 'quiz', key: 'judge_base_url', server: null, policy: true, enabled: true, defined: true},
    ])
  })

  it("under Relax's start line a copy of policy_model is the Gateway: a simulator on it is the model being trained", async () => {
    const yaml = `simulator_model:
  _copy: policy_model
quiz:
  resources_servers:
    quiz:
      entrypoint: app.py
      user_model_server: {type: responses_api_models, name: simulator_model}
${agent()}`
    // Gym alone has no policy_model to copy; Relax's start line loads the Gateway's config first.
    await expect(graphOf(yaml)).rejects.toThrow("_copy 'policy_model' does not exist in the merged config")
    expect(await graphOf(yaml, {relaxPolicy: true})).toEqual([{role: 'simulator', owner: 'quiz', key: 'user_model_server', server: 'simulator_model', policy: true, enabled: true, defined: true}])
    // A simulator server of its own is not the policy.
    const own = await graphOf(`simulator_model:
  responses_api_models:
    vllm_model: {entrypoint: app.py}
quiz:
  resources_servers:
    quiz:
      entrypoint: app.py
      user_model_server: {type: responses_api_models, name: simulator_model}
${agent()}`, {relaxPolicy: true})
    expect(own[0]).toMatchObject({server: 'simulator_model', policy: false})
  })

  it('a graph without second models has none', async () => {
    expect(await graphOf(`quiz:\n  resources_servers:\n    quiz: {entrypoint: app.py}\n${agent()}`)).toEqual([])
  })
})
