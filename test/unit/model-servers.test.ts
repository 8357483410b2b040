/**
 * Model servers gymrecipe adds for a judge or simulator: an instance of the checkout's own model
 * implementation, written as `gym env start` overrides, its endpoint read from the environment.
 */
import {describe, expect, it} from 'vitest'

import type {GymServer} from '../../src/contract/gym-config.js'
import {addedModelServer, endpointOverrides, envPrefixOf, flatEndpoint, hydraValue, modelServerOverrides, needsEndpoint, needsServer} from '../../src/contract/gym-config/model-servers.js'
import type {SecondModel} from '../../src/contract/gym-config/second-models.js'

const vllm: GymServer = {
  id: 'policy_model',
  kind: 'responses_api_models',
  implementation: 'vllm_model',
  fields: {entrypoint: 'app.py', base_url: '${policy_base_url}', api_key: '${policy_api_key}', model: '${policy_model_name}', uses_reasoning_parser: true, extra_body: null, default_headers: {}},
}

const judge = (over: Partial<SecondModel> = {}): SecondModel => ({role: 'judge', owner: 'quiz', key: 'judge_model_server', server: 'judge_model', policy: false, enabled: true, defined: false, ...over})

describe('model servers gymrecipe adds', () => {
  it('serves a judge whose server no config defines under the name the config uses, endpoint from the environment', () => {
    const server = addedModelServer(judge({server: 'genrm_model'}), 'quiz.resources_servers.quiz', vllm, new Set(['quiz']))
    expect(server).toEqual({
      name: 'genrm_model',
      type: 'vllm_model',
      role: 'judge',
      env_prefix: 'GENRM_MODEL',
      fields: {entrypoint: 'app.py', base_url: '${oc.env:GENRM_MODEL_BASE_URL}', api_key: '${oc.env:GENRM_MODEL_API_KEY,EMPTY}', model: '${oc.env:GENRM_MODEL_MODEL_NAME}', uses_reasoning_parser: true, extra_body: null, default_headers: {}},
      binds: [],
    })
  })

  it('moves a judge off the policy onto a server of its own, and points the judge at it', () => {
    const server = addedModelServer(judge({server: 'policy_model', policy: true, defined: true}), 'quiz.resources_servers.quiz', vllm, new Set(['quiz', 'judge_model']))
    expect(server).toMatchObject({name: 'judge_model_2', env_prefix: 'JUDGE_MODEL_2', binds: ['quiz.resources_servers.quiz.judge_model_server.name']})
    if (typeof server === 'string') throw new Error(server)
    expect(modelServerOverrides(server)).toEqual([
      "++judge_model_2.responses_api_models.vllm_model.entrypoint='app.py'",
      "++judge_model_2.responses_api_models.vllm_model.base_url='${oc.env:JUDGE_MODEL_2_BASE_URL}'",
      "++judge_model_2.responses_api_models.vllm_model.api_key='${oc.env:JUDGE_MODEL_2_API_KEY,EMPTY}'",
      "++judge_model_2.responses_api_models.vllm_model.model='${oc.env:JUDGE_MODEL_2_MODEL_NAME}'",
      '++judge_model_2.responses_api_models.vllm_model.uses_reasoning_parser=true',
      '++judge_model_2.responses_api_models.vllm_model.extra_body=null',
      '++judge_model_2.responses_api_models.vllm_model.default_headers={}',
      '++quiz.resources_servers.quiz.judge_model_server.name=judge_model_2',
    ])
  })

  it('which second models need one: undefined or ??? always; the policy only when asked; never a switched-off one', () => {
    expect(needsServer(judge(), [])).toBe(true)
    expect(needsServer(judge({server: '???'}), [])).toBe(true)
    expect(needsServer(judge({enabled: false}), [])).toBe(false)
    expect(needsServer(judge({server: 'policy_model', policy: true, defined: true}), [])).toBe(false)
    expect(needsServer(judge({server: 'policy_model', policy: true, defined: true}), ['judge'])).toBe(true)
    expect(needsServer(judge({server: 'policy_model', policy: true, defined: true}), ['simulator'])).toBe(false)
    expect(needsServer(judge({server: 'judge_model', defined: true}), ['judge'])).toBe(false)
  })

  it('refuses what cannot be one command-line instance: a dotted name, a nested field, an endpoint not taken from the policy', () => {
    expect(addedModelServer(judge({server: 'Qwen3.5-judge'}), 'quiz.resources_servers.quiz', vllm, new Set())).toMatch(/cannot be defined on the command line/)
    expect(addedModelServer(judge(), 'quiz.resources_servers.quiz', {...vllm, fields: {...vllm.fields, extra_body: {temperature: 0}}}, new Set())).toMatch(/field "extra_body" holds a nested value/)
    expect(addedModelServer(judge(), 'quiz.resources_servers.quiz', {...vllm, fields: {entrypoint: 'app.py', base_url: 'http://fixed:8000/v1'}}, new Set())).toMatch(/takes its endpoint from no \$\{policy_base_url\}/)
  })

  it('points a judge named by plain endpoint fields at its own variables, field by field, leaving the others', () => {
    const flat = judge({key: 'judge_base_url', server: null, policy: true, defined: true})
    const fields = {judge_base_url: '${policy_base_url}', judge_model: '${policy_model_name}', judge_api_key: '${policy_api_key}', judge_temperature: 0.7, grader_base_url: '${policy_base_url}'}
    const endpoint = flatEndpoint(flat, 'quiz.resources_servers.quiz', fields, new Set())
    expect(endpoint).toEqual({role: 'judge', owner: 'quiz', env_prefix: 'JUDGE', overrides: {
      'quiz.resources_servers.quiz.judge_base_url': '${oc.env:JUDGE_BASE_URL}',
      'quiz.resources_servers.quiz.judge_model': '${oc.env:JUDGE_MODEL_NAME}',
      'quiz.resources_servers.quiz.judge_api_key': '${oc.env:JUDGE_API_KEY,EMPTY}',
    }})
    if (typeof endpoint === 'string') throw new Error(endpoint)
    expect(endpointOverrides(endpoint)[0]).toBe("++quiz.resources_servers.quiz.judge_base_url='${oc.env:JUDGE_BASE_URL}'")
    // Nested fields keep their path; a prefix in use gets a number.
    const nested = flatEndpoint({...flat, key: 'llm.judge_base_url'}, 'quiz.resources_servers.quiz', {llm: {judge_base_url: '${policy_base_url}/v1', judge_model: 'fixed-model'}}, new Set(['JUDGE']))
    expect(nested).toEqual({role: 'judge', owner: 'quiz', env_prefix: 'JUDGE_2', overrides: {'quiz.resources_servers.quiz.llm.judge_base_url': '${oc.env:JUDGE_2_BASE_URL}/v1'}})
    // Only a model name from the policy is no endpoint gymrecipe can move.
    expect(flatEndpoint({...flat, key: 'judge_model'}, 'quiz.resources_servers.quiz', {judge_model: '${policy_model_name}', judge_base_url: 'http://fixed/v1'}, new Set())).toMatch(/takes its endpoint from no \$\{policy_base_url\} field/)
    expect(needsEndpoint(flat, ['judge'])).toBe(true)
    expect(needsEndpoint(flat, [])).toBe(false)
    expect(needsEndpoint({...flat, enabled: false}, ['judge'])).toBe(false)
    expect(needsServer(flat, ['judge'])).toBe(false)
  })

  it('quotes values the way Hydra reads them back', () => {
    expect(hydraValue("it's")).toBe("'it\\'s'")
    expect(hydraValue('a\\b')).toBe("'a\\\\b'")
    expect(hydraValue(3)).toBe('3')
    expect(hydraValue([])).toBe('[]')
    expect(envPrefixOf('Qwen3-235B-A22B')).toBe('QWEN3_235B_A22B')
  })
})
