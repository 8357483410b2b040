import {describe, expect, it} from 'vitest'

import {type GymDataset, type GymGraph, loadGymGraph} from '../../src/contract/gym-config.js'
import {snapshotRoot} from '../helpers/cli.js'

// Expected graphs are written out by hand from the YAML files in ../shared/nemo-gym-snapshot.

const load = (...configs: string[]) => loadGymGraph(snapshotRoot, configs)

function summary(graph: GymGraph) {
  return {
    resourcesServers: graph.resourcesServers.map((server) => [server.id, server.implementation]),
    agents: graph.agents.map((agent) => ({
      id: agent.id,
      type: agent.implementation,
      resourcesServer: agent.resourcesServer,
      modelServer: agent.modelServer,
      maxSteps: agent.maxSteps,
      datasets: agent.datasets.map((dataset) => dataset.name),
    })),
    models: graph.models.map((model) => model.id),
  }
}

const noSourceDataset = {license: null, numRepeats: null, sources: [], promptConfig: null, prepareScript: null}

function hfDataset(name: 'train' | 'validation', jsonlFpath: string, repoId: string, license: string): GymDataset {
  return {
    name,
    type: name,
    jsonlFpath,
    license,
    numRepeats: null,
    sources: [{type: 'huggingface', repoId, artifactFpath: `${name}.jsonl`, form: 'huggingface_identifier'}],
    promptConfig: null,
    prepareScript: null,
  }
}

const missingPolicyModel = (agent: string, impl: string, file: string, line: number) => ({
  severity: 'warning',
  pointer: `/${agent}/responses_api_agents/${impl}/model_server/name`,
  file,
  line,
  message: expect.stringContaining("model server 'policy_model', which no loaded config defines"),
})

describe('loadGymGraph on the NeMo Gym snapshot', () => {
  for (const [config, prefix] of [
    ['environments/calendar/config.yaml', 'environments/calendar/data'],
    ['resources_servers/calendar/configs/calendar.yaml', 'resources_servers/calendar/data'],
  ]) {
    it(`reads ${config}`, async () => {
      const graph = await load(config)
      expect(graph.files).toEqual([config])
      expect(summary(graph)).toEqual({
        resourcesServers: [['calendar', 'calendar']],
        agents: [{id: 'calendar_simple_agent', type: 'simple_agent', resourcesServer: 'calendar', modelServer: 'policy_model', maxSteps: null, datasets: ['train', 'validation', 'example']}],
        models: [],
      })
      expect(graph.resourcesServers[0].fields).toMatchObject({entrypoint: 'app.py', domain: 'agent', verified: false})
      expect(graph.agents[0].datasets).toEqual([
        hfDataset('train', `${prefix}/train.jsonl`, 'nvidia/Nemotron-RL-agent-calendar_scheduling', 'Apache 2.0'),
        hfDataset('validation', `${prefix}/validation.jsonl`, 'nvidia/Nemotron-RL-agent-calendar_scheduling', 'Apache 2.0'),
        {name: 'example', type: 'example', jsonlFpath: `${prefix}/example.jsonl`, ...noSourceDataset},
      ])
      expect(graph.problems).toEqual([missingPolicyModel('calendar_simple_agent', 'simple_agent', config, 18)])
    })
  }

  it('reads resources_servers/workplace_assistant/configs/workplace_assistant.yaml (max_steps 6, HF identifiers)', async () => {
    const config = 'resources_servers/workplace_assistant/configs/workplace_assistant.yaml'
    const graph = await load(config)
    expect(summary(graph)).toEqual({
      resourcesServers: [['workplace_assistant', 'workplace_assistant']],
      agents: [{id: 'workplace_assistant_simple_agent', type: 'simple_agent', resourcesServer: 'workplace_assistant', modelServer: 'policy_model', maxSteps: 6, datasets: ['train', 'validation', 'example']}],
      models: [],
    })
    expect(graph.agents[0].datasets).toEqual([
      hfDataset('train', 'resources_servers/workplace_assistant/data/train.jsonl', 'nvidia/Nemotron-RL-agent-workplace_assistant', 'Apache 2.0'),
      hfDataset('validation', 'resources_servers/workplace_assistant/data/validation.jsonl', 'nvidia/Nemotron-RL-agent-workplace_assistant', 'Apache 2.0'),
      {name: 'example', type: 'example', jsonlFpath: 'resources_servers/workplace_assistant/data/example.jsonl', ...noSourceDataset},
    ])
    expect(graph.problems).toEqual([missingPolicyModel('workplace_assistant_simple_agent', 'simple_agent', config, 19)])
  })

  it('reads environments/workplace_assistant/config.yaml (max_steps 6, no download source)', async () => {
    const config = 'environments/workplace_assistant/config.yaml'
    const graph = await load(config)
    expect(summary(graph).agents).toEqual([
      {id: 'workplace_assistant_simple_agent', type: 'simple_agent', resourcesServer: 'workplace_assistant', modelServer: 'policy_model', maxSteps: 6, datasets: ['train', 'validation', 'example']},
    ])
    expect(graph.agents[0].datasets).toEqual([
      {...noSourceDataset, name: 'train', type: 'train', jsonlFpath: 'environments/workplace_assistant/data/train.jsonl', license: 'Apache 2.0'},
      {...noSourceDataset, name: 'validation', type: 'validation', jsonlFpath: 'environments/workplace_assistant/data/validation.jsonl', license: 'Apache 2.0'},
      {...noSourceDataset, name: 'example', type: 'example', jsonlFpath: 'environments/workplace_assistant/data/example.jsonl'},
    ])
    expect(graph.problems).toEqual([missingPolicyModel('workplace_assistant_simple_agent', 'simple_agent', config, 20)])
  })

  it('reads resources_servers/math_with_judge/configs/math_with_judge.yaml (judge reference, two licenses)', async () => {
    const config = 'resources_servers/math_with_judge/configs/math_with_judge.yaml'
    const graph = await load(config)
    expect(summary(graph)).toEqual({
      resourcesServers: [['math_with_judge', 'math_with_judge']],
      agents: [{id: 'math_with_judge_simple_agent', type: 'simple_agent', resourcesServer: 'math_with_judge', modelServer: 'policy_model', maxSteps: null, datasets: ['train', 'validation', 'example']}],
      models: [],
    })
    expect(graph.resourcesServers[0].fields).toMatchObject({
      judge_model_server: {type: 'responses_api_models', name: 'policy_model'},
      judge_responses_create_params: {input: []},
      should_use_judge: false,
      domain: 'math',
    })
    expect(graph.agents[0].datasets).toEqual([
      hfDataset('train', 'resources_servers/math_with_judge/data/OpenMathReasoning_train.jsonl', 'nvidia/Nemotron-RL-math-OpenMathReasoning', 'Creative Commons Attribution 4.0 International'),
      hfDataset('validation', 'resources_servers/math_with_judge/data/OpenMathReasoning_aime24_validation.jsonl', 'nvidia/Nemotron-RL-math-OpenMathReasoning', 'Apache 2.0'),
      {name: 'example', type: 'example', jsonlFpath: 'resources_servers/math_with_judge/data/example.jsonl', ...noSourceDataset},
    ])
    expect(graph.problems).toEqual([
      {
        severity: 'warning',
        pointer: '/math_with_judge/resources_servers/math_with_judge/judge_model_server/name',
        file: config,
        line: 7,
        message: expect.stringContaining("judge_model_server names model server 'policy_model'"),
      },
      missingPolicyModel('math_with_judge_simple_agent', 'simple_agent', config, 25),
    ])
  })

  it('reads benchmarks/gsm8k/config.yaml: config_paths + _inherit_from swap the generic instances out', async () => {
    const graph = await load('benchmarks/gsm8k/config.yaml')
    expect(graph.files).toEqual(['resources_servers/math_with_judge/configs/math_with_judge.yaml', 'benchmarks/gsm8k/config.yaml'])
    expect(summary(graph)).toEqual({
      resourcesServers: [['gsm8k_math_with_judge_resources_server', 'math_with_judge']],
      agents: [
        {
          id: 'gsm8k_math_with_judge_simple_agent',
          type: 'simple_agent',
          resourcesServer: 'gsm8k_math_with_judge_resources_server',
          modelServer: 'policy_model',
          maxSteps: null,
          datasets: ['gsm8k'],
        },
      ],
      models: [],
    })
    // The generic math_with_judge instances are gone from the merged config too.
    expect(Object.keys(graph.merged)).toEqual(['config_paths', 'gsm8k_math_with_judge_resources_server', 'gsm8k_math_with_judge_simple_agent'])
    // Inherited fields stay; only the resources_server name is overridden locally.
    const agent = graph.agents[0]
    expect(agent.fields.entrypoint).toBe('app.py')
    expect(agent.fields.resources_server).toEqual({type: 'resources_servers', name: 'gsm8k_math_with_judge_resources_server'})
    expect(agent.fields.model_server).toEqual({type: 'responses_api_models', name: 'policy_model'})
    expect(graph.resourcesServers[0].fields).toMatchObject({entrypoint: 'app.py', domain: 'math', should_use_judge: false, judge_model_server: {type: 'responses_api_models', name: 'policy_model'}})
    // Lists replace: the local benchmark dataset is the only one left.
    expect(agent.datasets).toEqual([
      {
        name: 'gsm8k',
        type: 'benchmark',
        jsonlFpath: 'benchmarks/gsm8k/data/gsm8k_benchmark.jsonl',
        license: null,
        numRepeats: null,
        sources: [],
        promptConfig: 'benchmarks/prompts/generic/math.yaml',
        prepareScript: 'benchmarks/gsm8k/prepare.py',
      },
    ])
    expect(graph.merged.config_paths).toEqual(['benchmarks/gsm8k/config.yaml', 'resources_servers/math_with_judge/configs/math_with_judge.yaml'])
    // Problems on inherited values point at the file they were written in.
    expect(graph.problems.map((problem) => [problem.severity, problem.pointer, problem.file, problem.line])).toEqual([
      ['warning', '/gsm8k_math_with_judge_resources_server/resources_servers/math_with_judge/judge_model_server/name', 'resources_servers/math_with_judge/configs/math_with_judge.yaml', 7],
      ['warning', '/gsm8k_math_with_judge_simple_agent/responses_api_agents/simple_agent/model_server/name', 'resources_servers/math_with_judge/configs/math_with_judge.yaml', 25],
    ])
  })

  it('reads resources_servers/example_multi_step/configs/example_multi_step.yaml (source: form)', async () => {
    const config = 'resources_servers/example_multi_step/configs/example_multi_step.yaml'
    const graph = await load(config)
    expect(summary(graph)).toEqual({
      resourcesServers: [['example_multi_step_resources_server', 'example_multi_step']],
      agents: [
        {
          id: 'example_multi_step_simple_agent',
          type: 'simple_agent',
          resourcesServer: 'example_multi_step_resources_server',
          modelServer: 'policy_model',
          maxSteps: null,
          datasets: ['train', 'validation', 'example'],
        },
      ],
      models: [],
    })
    const gitlab = (artifact: string) => [{type: 'gitlab', datasetName: 'example_multi_step', version: '0.0.1', artifactFpath: artifact, form: 'source'}]
    expect(graph.agents[0].datasets).toEqual([
      {...noSourceDataset, name: 'train', type: 'train', jsonlFpath: 'resources_servers/example_multi_step/data/train.jsonl', license: 'Apache 2.0', sources: gitlab('train.jsonl')},
      {...noSourceDataset, name: 'validation', type: 'validation', jsonlFpath: 'resources_servers/example_multi_step/data/validation.jsonl', license: 'Apache 2.0', sources: gitlab('validation.jsonl')},
      {...noSourceDataset, name: 'example', type: 'example', jsonlFpath: 'resources_servers/example_multi_step/data/example.jsonl'},
    ])
    expect(graph.problems).toEqual([missingPolicyModel('example_multi_step_simple_agent', 'simple_agent', config, 17)])
  })

  it('reads responses_api_agents/swe_agents/configs/swebench_openhands.yaml and reports its ??? values', async () => {
    const config = 'responses_api_agents/swe_agents/configs/swebench_openhands.yaml'
    const graph = await load(config)
    expect(summary(graph)).toEqual({
      resourcesServers: [],
      agents: [{id: 'swe_agents', type: 'swe_agents', resourcesServer: null, modelServer: 'policy_model', maxSteps: null, datasets: ['train', 'validation', 'example']}],
      models: [],
    })
    const agent = graph.agents[0]
    expect(agent.fields).toMatchObject({container_formatter: '???', dataset_path: '???', container_folder_path: null, agent_max_turns: 100, swebench_agent_timeout: 1800})
    expect(agent.datasets).toEqual([
      {
        ...noSourceDataset,
        name: 'train',
        type: 'train',
        jsonlFpath: 'responses_api_agents/swe_agents/data/swegym_for_sweagent_and_openhands.jsonl',
        license: 'Apache 2.0',
        sources: [{type: 'gitlab', datasetName: 'swegym_for_sweagent_and_openhands', version: '0.0.2', artifactFpath: 'swegym-converted.jsonl', form: 'gitlab_identifier'}],
      },
      {
        ...noSourceDataset,
        name: 'validation',
        type: 'validation',
        jsonlFpath: 'responses_api_agents/swe_agents/data/swebench_verified_for_sweagent_and_openhands.jsonl',
        license: 'TBD',
        sources: [
          {
            type: 'gitlab',
            datasetName: 'swebench_verified_for_sweagent_and_openhands',
            version: '0.0.1',
            artifactFpath: 'swebench_verified_for_sweagent_and_openhands.jsonl',
            form: 'gitlab_identifier',
          },
        ],
      },
      {...noSourceDataset, name: 'example', type: 'example', jsonlFpath: 'responses_api_agents/swe_agents/data/example.jsonl'},
    ])
    expect(graph.problems).toEqual([
      {severity: 'warning', kind: 'unset-value', key: 'swe_agents.responses_api_agents.swe_agents.container_formatter', pointer: '/swe_agents/responses_api_agents/swe_agents/container_formatter', file: config, line: 15, message: expect.stringContaining('is ??? (mandatory value not set)')},
      {severity: 'warning', kind: 'unset-value', key: 'swe_agents.responses_api_agents.swe_agents.dataset_path', pointer: '/swe_agents/responses_api_agents/swe_agents/dataset_path', file: config, line: 22, message: expect.stringContaining('is ??? (mandatory value not set)')},
      missingPolicyModel('swe_agents', 'swe_agents', config, 26),
    ])
  })

  it('merges several --gym-config left to right: the later calendar variant wins', async () => {
    const graph = await load('environments/calendar/config.yaml', 'resources_servers/calendar/configs/calendar.yaml')
    expect(graph.files).toEqual(['environments/calendar/config.yaml', 'resources_servers/calendar/configs/calendar.yaml'])
    expect(graph.agents.map((agent) => agent.id)).toEqual(['calendar_simple_agent'])
    expect(graph.agents[0].datasets.map((dataset) => dataset.jsonlFpath)).toEqual([
      'resources_servers/calendar/data/train.jsonl',
      'resources_servers/calendar/data/validation.jsonl',
      'resources_servers/calendar/data/example.jsonl',
    ])
  })

  it('merges two environments into one graph with both agents', async () => {
    const graph = await load('environments/calendar/config.yaml', 'environments/workplace_assistant/config.yaml')
    expect(summary(graph)).toEqual({
      resourcesServers: [
        ['calendar', 'calendar'],
        ['workplace_assistant', 'workplace_assistant'],
      ],
      agents: [
        {id: 'calendar_simple_agent', type: 'simple_agent', resourcesServer: 'calendar', modelServer: 'policy_model', maxSteps: null, datasets: ['train', 'validation', 'example']},
        {id: 'workplace_assistant_simple_agent', type: 'simple_agent', resourcesServer: 'workplace_assistant', modelServer: 'policy_model', maxSteps: 6, datasets: ['train', 'validation', 'example']},
      ],
      models: [],
    })
  })
})
