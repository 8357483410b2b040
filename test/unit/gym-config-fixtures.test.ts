import path from 'node:path'
import {describe, expect, it} from 'vitest'

import {loadGymGraph, redactSecrets} from '../../src/contract/gym-config.js'
import {repoRoot} from '../helpers/cli.js'

// Hand-written configs under test/fixtures/gym-configs/root; expected values come from reading them.
const fixtureRoot = path.join(repoRoot, 'test', 'fixtures', 'gym-configs', 'root')
const load = (...configs: string[]) => loadGymGraph(fixtureRoot, configs)

function fieldsOf(graph: Awaited<ReturnType<typeof load>>, id: string) {
  const server = [...graph.resourcesServers, ...graph.agents, ...graph.models].find((candidate) => candidate.id === id)
  if (!server) throw new Error(`no server ${id}`)
  return server.fields
}

describe('config_paths includes', () => {
  it('merges nested includes: including file overrides included, later siblings win, lists replace', async () => {
    const graph = await load('nested/top.yaml')
    expect(graph.files).toEqual(['nested/leaf.yaml', 'nested/middle.yaml', 'nested/sibling_a.yaml', 'nested/sibling_b.yaml', 'nested/top.yaml'])
    expect(graph.resourcesServers.map((server) => [server.id, server.implementation])).toEqual([
      ['shared_tools', 'tool_impl'],
      ['leaf_only', 'leaf_only_impl'],
    ])
    expect(fieldsOf(graph, 'shared_tools')).toEqual({entrypoint: 'app.py', domain: 'other', value: 'sibling_a', port: 3, tags: ['m'], description: 'top'})
    expect(graph.agents.map((agent) => [agent.id, agent.resourcesServer, agent.maxSteps])).toEqual([['tools_agent', 'shared_tools', 3]])
  })

  it('loads a file included twice once, at its first position, and says so', async () => {
    const graph = await load('diamond/top.yaml')
    expect(graph.files).toEqual(['diamond/base.yaml', 'diamond/left.yaml', 'diamond/right.yaml', 'diamond/top.yaml'])
    expect(fieldsOf(graph, 'diamond_rs').written_by).toBe('right')
    expect(graph.problems).toEqual([
      // At Relax's pinned Gym, the included base.yaml would win instead.
      {severity: 'warning', pointer: '/diamond_rs/resources_servers/base_impl/written_by', file: 'diamond/right.yaml', line: 7, message: expect.stringMatching(/gives "right"; Gym's other order .* would give "base"$/)},
      {severity: 'warning', pointer: '/config_paths', file: 'diamond/right.yaml', line: 3, message: expect.stringContaining('diamond/base.yaml is listed again')},
    ])
  })

  it('discovers includes breadth-first like Gym, so a shared include merges in the first subtree that reached it', async () => {
    const graph = await load('bfs/top.yaml')
    expect(graph.files).toEqual(['bfs/z.yaml', 'bfs/x.yaml', 'bfs/w.yaml', 'bfs/y.yaml', 'bfs/top.yaml'])
    expect(fieldsOf(graph, 'bfs_rs').z_or_w).toBe('w')
  })

  it('accepts an absolute --gym-config inside the root and reports it relative to the root', async () => {
    const graph = await load(path.join(fixtureRoot, 'nested', 'leaf.yaml'))
    expect(graph.files).toEqual(['nested/leaf.yaml'])
  })

  it('takes every name from the YAML keys, never from the directory', async () => {
    const graph = await load('resources_servers/fancy_env/configs/fancy_env.yaml')
    expect(graph.resourcesServers.map((server) => [server.id, server.implementation])).toEqual([['weather_rs', 'weather_tools']])
    expect(graph.agents.map((agent) => [agent.id, agent.implementation, agent.resourcesServer])).toEqual([['weather_agent', 'simple_agent', 'weather_rs']])
  })
})

describe('directives', () => {
  it('_copy keeps the source, _delete_key removes local and inherited keys', async () => {
    const graph = await load('directives/copy-delete.yaml')
    expect(graph.resourcesServers.map((server) => server.id)).toEqual(['base_tools', 'copied_tools', 'trimmed_tools'])
    expect(fieldsOf(graph, 'base_tools')).toEqual({
      entrypoint: 'app.py',
      domain: 'agent',
      debug: true,
      judge_model_server: {type: 'responses_api_models', name: 'judge_model'},
      extra_a: 1,
      extra_b: 2,
      labels: ['x', 'y'],
    })
    // extra_a/extra_b are deleted after the merge; debug, written locally, only loses its local value.
    expect(fieldsOf(graph, 'copied_tools')).toEqual({
      entrypoint: 'app.py',
      domain: 'games',
      debug: true,
      judge_model_server: {type: 'responses_api_models', name: 'judge_model'},
      labels: ['z'],
    })
    expect(graph.merged.trimmed_tools).toEqual({resources_servers: {tools: {entrypoint: 'app.py', domain: 'other'}}})
    expect(graph.models.map((model) => [model.id, model.implementation])).toEqual([['judge_model', 'openai_model']])
    expect(graph.problems).toEqual([
      {
        severity: 'warning',
        pointer: '/trimmed_tools/resources_servers/tools/_delete_key',
        file: 'directives/copy-delete.yaml',
        line: 29,
        message: expect.stringContaining("'absent_key', which is not a key here"),
      },
    ])
  })

  it('applies ${inherit_from:path} (source removed) and ${copy:path} (source kept)', async () => {
    const graph = await load('directives/string-forms.yaml')
    expect(graph.resourcesServers.map((server) => [server.id, server.implementation])).toEqual([['specific_rs', 'generic_impl']])
    expect(fieldsOf(graph, 'specific_rs')).toEqual({entrypoint: 'app.py', domain: 'math', flavor: 'generic'})
    expect(graph.merged).not.toHaveProperty('generic_rs')
    expect(graph.agents.map((agent) => [agent.id, agent.implementation, agent.resourcesServer, agent.maxSteps])).toEqual([
      ['mirror_agent_source', 'simple_agent', 'specific_rs', 4],
      ['mirror_agent', 'simple_agent', 'specific_rs', 4],
    ])
  })

  it('resolves chained _inherit_from and removes every source in the chain', async () => {
    const graph = await load('directives/chain.yaml')
    expect(graph.resourcesServers.map((server) => server.id)).toEqual(['child'])
    expect(fieldsOf(graph, 'child')).toEqual({entrypoint: 'app.py', domain: 'other', level: 'child', keep: true, from_parent: 1})
    expect(graph.problems).toEqual([])
  })

  it('leaves a directive written on a list item alone, as Gym does, and warns', async () => {
    const graph = await load('directives/list-item.yaml')
    expect(fieldsOf(graph, 'item_rs').steps).toEqual([{_copy: 'item_rs.resources_servers.item_impl.template', name: 'first'}])
    expect(graph.problems.map((problem) => [problem.severity, problem.pointer, problem.line])).toEqual([['warning', '/item_rs/resources_servers/item_impl/steps/0/_copy', 8]])
  })
})

describe('values', () => {
  it('resolves ${...} references: absolute, relative, embedded, list indexes; leaves the rest with warnings', async () => {
    const graph = await load('interpolation/edge.yaml')
    expect(graph.merged).toMatchObject({
      loop_a: '${loop_b}',
      loop_b: '${loop_a}',
      from_env: '${oc.env:HOME}',
      unset_ref: '${nobody_sets_this}',
      dotted_index: 8001,
      bracket_index: 8000,
      whole_node: {inner: {up: 'found'}, sibling: 'found'},
      nested: {inner: {up: 'found'}, sibling: 'found'},
    })
    expect(graph.problems.map((problem) => [problem.pointer, problem.line, problem.message])).toEqual([
      ['/loop_b', 2, expect.stringContaining('interpolation cycle')],
      ['/unset_ref', 4, expect.stringContaining('no loaded config sets')],
    ])
  })

  it('a model config merged after an environment satisfies its model_server reference and resolves policy_* values', async () => {
    const graph = await load('directives/string-forms.yaml', 'models/policy.yaml')
    expect(graph.models.map((model) => [model.id, model.implementation])).toEqual([['policy_model', 'openai_model']])
    expect(fieldsOf(graph, 'policy_model')).toEqual({
      entrypoint: 'app.py',
      openai_base_url: 'http://127.0.0.1:8000/v1',
      openai_api_key: 'fixture-key-not-real',
      openai_model: 'fixture-policy',
      responses_url: 'http://127.0.0.1:8000/v1/responses',
    })
    expect(graph.problems).toEqual([])
  })

  it('reads scalars with PyYAML 1.1 rules, as OmegaConf does', async () => {
    const graph = await load('yaml/pyyaml-scalars.yaml')
    expect(fieldsOf(graph, 'scalars_rs')).toEqual({
      entrypoint: 'app.py',
      domain: 'other',
      enabled: true,
      disabled: false,
      y: 'a key, not a boolean',
      released: '2024-01-01',
      learning_rate: 0.00001,
      version: '0.0.1',
      mode: 0o755,
    })
  })

  it('a later ??? does not erase a value; unset ??? values are reported and do not crash', async () => {
    const graph = await load('missing/override.yaml')
    expect(graph.files).toEqual(['missing/base.yaml', 'missing/override.yaml'])
    const agent = graph.agents[0]
    expect([agent.id, agent.implementation, agent.resourcesServer, agent.maxSteps]).toEqual(['needy_agent', 'swe_agents', 'ghost_rs', null])
    expect(agent.fields).toMatchObject({dataset_path: '/data/set.jsonl', container_formatter: '???', max_steps: '???'})
    // The dangling ghost_rs reference survives override.yaml's `name: ???` and is located where it was written.
    expect(graph.problems.map((problem) => [problem.severity, problem.pointer, problem.file, problem.line])).toEqual([
      ['warning', '/needy_agent/responses_api_agents/swe_agents/container_formatter', 'missing/override.yaml', 8],
      ['warning', '/needy_agent/responses_api_agents/swe_agents/max_steps', 'missing/override.yaml', 9],
      ['warning', '/needy_agent/responses_api_agents/swe_agents/model_server/name', 'missing/base.yaml', 6],
      ['error', '/needy_agent/responses_api_agents/swe_agents/resources_server/name', 'missing/base.yaml', 7],
    ])
  })
})

describe('graph', () => {
  it('reads several agents, skips reserved keys and reports an agent whose resources server does not exist', async () => {
    const graph = await load('graph/multi-agent.yaml')
    expect(graph.resourcesServers.map((server) => [server.id, server.implementation])).toEqual([['shop', 'shop_impl']])
    expect(graph.agents.map((agent) => [agent.id, agent.implementation, agent.resourcesServer, agent.modelServer, agent.maxSteps])).toEqual([
      ['shop_fast_agent', 'simple_agent', 'shop', 'policy_model', 2],
      ['shop_slow_agent', 'react_agent', 'shop', 'policy_model', 12],
      ['orphan_agent', 'simple_agent', 'warehouse', 'policy_model', null],
    ])
    // token_id_capture is reserved: not a model server although it is shaped like one.
    expect(graph.models.map((model) => [model.id, model.implementation])).toEqual([['policy_model', 'vllm_model']])
    expect(fieldsOf(graph, 'policy_model').model).toBe('fixture-model')
    expect(graph.problems).toEqual([
      {
        severity: 'error',
        pointer: '/orphan_agent/responses_api_agents/simple_agent/resources_server/name',
        file: 'graph/multi-agent.yaml',
        line: 38,
        message: expect.stringContaining("resources server 'warehouse', which no loaded config defines (defined: shop)"),
      },
    ])
  })

  it('redactSecrets hides literal credentials but keeps references and ordinary *_tokens settings', async () => {
    const graph = redactSecrets(await load('graph/multi-agent.yaml'))
    expect(graph.merged.hf_token).toBe('<redacted>')
    expect(fieldsOf(graph, 'policy_model').api_key).toBe('<redacted>')
    expect(JSON.stringify(graph)).not.toMatch(/sk-fixture-not-real|hf_fixture_not_a_real_token/)
    expect(redactSecrets({openai_api_key: '${policy_api_key}', max_output_tokens: 512, token_id_capture: {enabled: true}})).toEqual({
      openai_api_key: '${policy_api_key}',
      max_output_tokens: 512,
      token_id_capture: {enabled: true},
    })
  })
})

describe('datasets', () => {
  it('reads every source form, primary first, and reports malformed entries', async () => {
    const graph = await load('datasets/sources.yaml')
    const datasets = graph.agents[0].datasets
    const none = {numRepeats: null, promptConfig: null, prepareScript: null}
    expect(datasets).toEqual([
      {
        ...none,
        name: 'train',
        type: 'train',
        jsonlFpath: 'data/train.jsonl',
        license: 'MIT',
        numRepeats: 4,
        sources: [
          {type: 'gitlab', datasetName: 'fixture_train', version: '0.0.3', artifactFpath: 'train.jsonl', form: 'gitlab_identifier'},
          {type: 'huggingface', repoId: 'org/fixture-train', artifactFpath: 'train.jsonl', form: 'huggingface_identifier'},
        ],
      },
      {
        ...none,
        name: 'validation',
        type: 'validation',
        jsonlFpath: 'data/validation.jsonl',
        license: 'Apache 2.0',
        sources: [{type: 'huggingface', repoId: 'org/fixture-validation', artifactFpath: null, form: 'huggingface_identifier'}],
      },
      {...none, name: 'hub', type: 'train', jsonlFpath: 'data/hub.jsonl', license: 'CC BY-SA 4.0', sources: [{type: 'huggingface', repoId: 'org/fixture-hub', artifactFpath: null, form: 'source'}]},
      {
        ...none,
        name: 'both',
        type: 'validation',
        jsonlFpath: 'data/both.jsonl',
        license: 'Apache 2.0',
        sources: [
          {type: 'gitlab', datasetName: 'both', version: '1.0', artifactFpath: 'both.jsonl', form: 'source'},
          {type: 'huggingface', repoId: 'org/both', artifactFpath: null, form: 'huggingface_identifier'},
        ],
      },
      {...none, name: 'unlicensed', type: 'train', jsonlFpath: 'data/unlicensed.jsonl', license: null, sources: []},
      {
        ...none,
        name: 'numeric_version',
        type: 'example',
        jsonlFpath: 'data/example.jsonl',
        license: null,
        sources: [{type: 'gitlab', datasetName: 'numeric', version: '1', artifactFpath: 'ex.jsonl', form: 'gitlab_identifier'}],
      },
    ])
    const base = '/data_agent/responses_api_agents/simple_agent'
    expect(graph.problems.map((problem) => [problem.severity, problem.pointer, problem.line])).toEqual([
      ['error', `${base}/datasets/3/source`, 32],
      ['error', `${base}/datasets/4`, 35],
      ['error', `${base}/datasets/5/gitlab_identifier/version`, 41],
      ['warning', `${base}/model_server/name`, 9],
    ])
  })
})
