import {readFile} from 'node:fs/promises'
import path from 'node:path'
import {describe, expect, it} from 'vitest'
import {parse, stringify} from 'yaml'

import {BUILTIN_DIR, listBuiltins, loadBuiltin} from '../../src/contract/builtin.js'
import {contractProblems, parseContract} from '../../src/contract/load.js'
import {allocatePorts, checkOwnPorts, freeGcsPort} from '../../src/contract/ports.js'
import {GymError, isGymError} from '../../src/errors.js'
import {renderRecipe, shellQuote} from '../../src/scaffold/render.js'

// calendar trains on 8 GPUs with TP 4: a 2 + 6 split leaves the actor 2.
const HYBRID = {mode: 'hybrid', actor_gpus: 2, rollout_gpus: 6, max_staleness: 2, num_iters_per_train_update: 1, num_data_storage_units: 1, use_health_check: true}

async function calendarText(): Promise<string> {
  return readFile(path.join(BUILTIN_DIR, 'calendar.yaml'), 'utf8')
}

function errorOf(fn: () => unknown): any {
  try {
    fn()
  } catch (error) {
    if (isGymError(error)) return error
    throw error
  }
  throw new Error('expected a GymError')
}

describe('built-in contracts', () => {
  it('are valid and reproduce the proven Relax values', async () => {
    expect(await listBuiltins()).toEqual(['calendar', 'multienv-math-workplace', 'r2e-gym', 'workplace-assistant'])
    const calendar = await loadBuiltin('calendar')
    expect(calendar.service.gateway_port).toBe(29100)
    expect(calendar.ray.gcs_port).toBe(6383)
    expect(calendar.gateway).toMatchObject({interrupt_policy: 'protected', max_concurrency: 8, queue_capacity: 32, max_deadline_s: 1800, deadline_s: 600, lease_s: 60})
    expect(calendar.training.agent_timeout_s).toBe(660)
    const workplace = await loadBuiltin('workplace-assistant')
    expect(workplace.service.gateway_port).toBe(29000)
    expect(workplace.gym.agent.max_steps).toBe(6)
    const r2e = await loadBuiltin('r2e-gym')
    expect(r2e.gateway).toMatchObject({max_deadline_s: 7200, deadline_s: 1200, lease_s: 120})
    expect(r2e.training.agent_timeout_s).toBe(1260)
    expect(r2e.training.parsers).toEqual({reasoning: null, tool_call: 'qwen3_coder'})
    expect(r2e.service.privileged).toBe(true)
  })
})

describe('contract errors name the file, line, JSON pointer, expectation and a hint', () => {
  it('reports an unknown field at its line', async () => {
    const text = (await calendarText()).replace('  lease_s: 60\n', '  lease_s: 60\n  lease_seconds: 60\n')
    const error = errorOf(() => parseContract(text, 'recipes/x/recipe.yaml'))
    expect(error.code).toBe('E_CONTRACT_INVALID')
    expect(error.exit).toBe(2)
    const problem = error.details.problems[0]
    expect(problem.pointer).toBe('/gateway/lease_seconds')
    expect(problem.line).toBe(text.split('\n').findIndex((l) => l.includes('lease_seconds')) + 1)
    expect(problem.file).toBe('recipes/x/recipe.yaml')
    expect(problem.hint).toContain('lease_seconds')
  })

  it('reports a wrong type and a bad enum with what was expected', async () => {
    const text = (await calendarText()).replace('  max_concurrency: 8', '  max_concurrency: eight').replace('archetype: simple-agent', 'archetype: simple')
    const error = errorOf(() => parseContract(text, 'recipe.yaml'))
    const pointers = error.details.problems.map((p: any) => p.pointer)
    expect(pointers).toContain('/gateway/max_concurrency')
    expect(pointers).toContain('/archetype')
    expect(error.details.problems.find((p: any) => p.pointer === '/archetype').expected).toContain('"simple-agent"')
  })

  it('reports YAML syntax errors with the line', () => {
    const error = errorOf(() => parseContract('id: x\n  bad: [\n', 'recipe.yaml'))
    expect(error.message).toContain('YAML syntax')
    expect(error.location.line).toBeGreaterThan(0)
  })

  it.each([
    ['a shell quote in the agent name', (c: any) => (c.gym.agent.name = "agent'; rm -rf / #"), '/gym/agent/name'],
    ['a command substitution in the image', (c: any) => (c.service.image = 'img:$(id)'), '/service/image'],
    ['a path escaping the Gym root', (c: any) => (c.gym.config_paths = ['../../etc/passwd']), '/gym/config_paths/0'],
    ['an absolute config path', (c: any) => (c.gym.config_paths = ['/etc/passwd']), '/gym/config_paths/0'],
    ['a newline in an extra argument', (c: any) => (c.training.extra_args.misc = ['--x\nrm -rf /']), '/training/extra_args/misc/0'],
    ['a backtick in the raw filename', (c: any) => (c.data.raw_filename = '`id`.jsonl'), '/data/raw_filename'],
  ])('rejects %s', async (_what, mutate, pointer) => {
    const value = parse(await calendarText())
    mutate(value)
    const problems = contractProblems(value)
    expect(problems.map((p) => p.pointer)).toContain(pointer)
  })

  it.each([
    ['deadline above the Gateway maximum', (c: any) => (c.gateway.deadline_s = 2000), '/gateway/deadline_s'],
    ['agent timeout not above the deadline', (c: any) => (c.training.agent_timeout_s = 600), '/training/agent_timeout_s'],
    ['prompt budget not below the context', (c: any) => (c.training.rollout.max_prompt_len = 8192), '/training/rollout/max_prompt_len'],
    ['response budget above the context', (c: any) => (c.training.rollout.max_response_len = 9000), '/training/rollout/max_response_len'],
    ['tokens per GPU below the context', (c: any) => (c.training.perf.max_tokens_per_gpu = 4096), '/training/perf/max_tokens_per_gpu'],
    ['tokens per GPU x CP below the context', (c: any) => Object.assign(c.training.perf, {max_tokens_per_gpu: 2048, context_parallel: 2}), '/training/perf/max_tokens_per_gpu'],
    ['context parallelism without per-token loss', (c: any) => Object.assign(c.training.perf, {max_tokens_per_gpu: 4096, context_parallel: 2}), '/training/extra_args/perf'],
    ['fewer than 4 samples per prompt', (c: any) => (c.training.rollout.n_samples_per_prompt = 1), '/training/rollout/n_samples_per_prompt'],
    ['a validation split without smoke', (c: any) => (c.data.split = 'validation'), '/data/split'],
    ['a converted file as raw filename', (c: any) => (c.data.raw_filename = 'calendar_train_relax.jsonl'), '/data/raw_filename'],
    ['a stateful recipe without cleanup', (c: any) => (c.archetype = 'stateful-tools'), '/gateway/cleanup'],
    ['[workplace-assistant#9] a service port in the ephemeral range', (c: any) => (c.service.gateway_port = 40000), '/service/gateway_port'],
    ['the Ray GCS port inside the service block', (c: any) => (c.ray.gcs_port = 29101), '/ray/gcs_port'],
    ['[gsm8k#9] a callback network that allows every address', (c: any) => (c.service.callback_networks = ['0.0.0.0/0']), '/service/callback_networks/0'],
    ['a direct verifier with both task and payload', (c: any) => (c.verifier.task = {file: 'x.jsonl', row: 0}), '/verifier/task'],
    ['a verifier row under a config root the recipe does not name', (c: any) => Object.assign(c.verifier, {task: {file: '${MY_ROOT}/data/example.jsonl', row: 0}, payload: null}), '/verifier/task/file'],
    ['a pending verifier that says nothing', (c: any) => Object.assign(c.verifier, {kind: 'pending', correct: [], wrong: []}, (c.trial = null)), '/verifier/pending'],
    ['a pending verifier that lists examples', (c: any) => Object.assign(c.verifier, {kind: 'pending', pending: 'no examples'}, (c.trial = null)), '/verifier/kind'],
    ['a pending verifier with a trial', (c: any) => Object.assign(c.verifier, {kind: 'pending', pending: 'no examples', correct: [], wrong: []}), '/verifier/kind'],
    ['a hybrid split that is not the job\'s GPUs', (c: any) => (c.training.schedule = {...HYBRID, actor_gpus: 4, rollout_gpus: 2}), '/training/schedule/actor_gpus'],
    ['hybrid with no staleness allowed', (c: any) => (c.training.schedule = {...HYBRID, max_staleness: 0}), '/training/schedule/max_staleness'],
    ['colocated on fewer GPUs than the job', (c: any) => (c.training.schedule = {...HYBRID, mode: 'colocate', actor_gpus: 8, rollout_gpus: 4}), '/training/schedule/actor_gpus'],
    ['a tensor-parallel size that does not divide the hybrid actor GPUs', (c: any) => (c.training.schedule = HYBRID), '/training/perf/tensor_parallel'],
    ['a schedule mode Relax does not have', (c: any) => (c.training.schedule = {...HYBRID, mode: 'fully-async'}), '/training/schedule/mode'],
  ])('invariant: %s', async (_what, mutate, pointer) => {
    const value = parse(await calendarText())
    mutate(value)
    expect(contractProblems(value).map((p) => p.pointer)).toContain(pointer)
  })
})

describe('a row in a config root', () => {
  it('is a valid task reference when the recipe names the root', async () => {
    const value = parse(await calendarText())
    value.gym.config_roots = ['MY_ROOT']
    Object.assign(value.verifier, {task: {file: '${MY_ROOT}/data/example.jsonl', row: 0}, payload: null})
    expect(contractProblems(value)).toEqual([])
  })
})

describe('a pending verifier', () => {
  it('is a valid contract when it says what is missing and lists no example and no trial', async () => {
    const value = parse(await calendarText())
    Object.assign(value.verifier, {kind: 'pending', pending: 'no known-correct and known-wrong outputs for calendar', task: null, payload: null, correct: [], wrong: []})
    value.trial = null
    expect(contractProblems(value)).toEqual([])
  })
})

describe('Ray port ranges', () => {
  it('[r2e-gym#7] refuses a Ray dashboard port inside the worker range', async () => {
    const value = parse(await calendarText())
    value.ray.dashboard_port = value.ray.min_worker_port + 5
    const messages = contractProblems(value).map((p) => p.message)
    expect(messages.some((m) => /overlaps/.test(m) && /dashboard/i.test(m) && /worker/i.test(m))).toBe(true)
  })
})

describe('token budget (Relax: max_tokens_per_gpu x context_parallel_size >= context)', () => {
  it('accepts a per-GPU budget below the context when context parallelism covers it', async () => {
    const value = parse(await calendarText())
    Object.assign(value.training.perf, {max_tokens_per_gpu: 4096, context_parallel: 2, tensor_parallel: 4})
    value.training.extra_args.perf = ['--calculate-per-token-loss']
    expect(contractProblems(value).map((p) => p.pointer)).toEqual([])
  })
})

describe('ports', () => {
  it('allocates a block outside the ephemeral range that avoids every occupied range', () => {
    const others = [{id: 'a', ranges: [{label: 'service block', pointer: '', low: 29000, high: 29099}, {label: 'gcs', pointer: '', low: 6381, high: 6381}]}]
    const ports = allocatePorts(others)
    expect(ports.gateway_port).toBe(29100)
    expect(ports.gcs_port).toBe(6382)
    const contract = {service: {gateway_port: ports.gateway_port}, ray: {...ports, num_cpus: 8}} as any
    expect(checkOwnPorts(contract)).toEqual([])
  })

  it('takes blocks from 20000 once 29000 up is full, and says what to do when every block is held', () => {
    const block = (base: number) => ({id: `r${base}`, ranges: [{label: 'service block', pointer: '', low: base, high: base + 99}, {label: 'gcs', pointer: '', low: 6381 + (base % 1000), high: 6381 + (base % 1000)}]})
    const high = Array.from({length: 37}, (_, i) => block(29000 + i * 100))
    expect(allocatePorts(high).gateway_port).toBe(20000)
    const all = [...high, ...Array.from({length: 90}, (_, i) => block(20000 + i * 100))]
    let thrown: unknown
    try {
      allocatePorts(all)
    } catch (error) {
      thrown = error
    }
    expect(thrown).toBeInstanceOf(GymError)
    expect(thrown).toMatchObject({code: 'E_NO_FREE_PORTS', exit: 3, details: {recipes: 127, blocks: 127}})
    expect((thrown as GymError).message).toBe('no free 100-port block between 20000 and 32767: the 127 recipes of this Relax checkout hold them all')
    expect((thrown as GymError).hint).toMatch(/Remove recipes you no longer use .* or make this recipe in another Relax checkout/)
    // The GCS port alone is still found: an explicit --port-base needs nothing more.
    expect(freeGcsPort([{id: 'a', ranges: [{label: 'gcs', pointer: '', low: 6381, high: 6383}]}])).toBe(6384)
  })
})

describe('rendering', () => {
  it('is a pure function of the contract', async () => {
    const contract = await loadBuiltin('calendar')
    const a = await renderRecipe(contract)
    const b = await renderRecipe(structuredClone(contract))
    expect(a.map((f) => f.sha256)).toEqual(b.map((f) => f.sha256))
    const changed = await renderRecipe({...contract, service: {...contract.service, gateway_port: 29400}})
    expect(changed.find((f) => f.role === 'env')!.content).toContain('NEMO_GYM_GATEWAY_PORT:-29400')
  })

  it('passes the Hugging Face token into the prepare container by name, never by value', async () => {
    for (const name of await listBuiltins()) {
      const prepare = (await renderRecipe(await loadBuiltin(name))).find((f) => f.role === 'prepare')!.content
      const run = prepare.slice(prepare.indexOf('docker run --rm'))
      expect(run, name).toMatch(/ -e HF_TOKEN -e HUGGING_FACE_HUB_TOKEN \\\n/)
      expect(prepare, name).not.toMatch(/HF_TOKEN=/)
    }
  })

  it('quotes shell values so they cannot break out', () => {
    expect(shellQuote("it's")).toBe(`'it'\\''s'`)
  })

  it('fails loudly (strict mode) when a template refers to a missing value', async () => {
    const contract: any = await loadBuiltin('calendar')
    delete contract.training.model
    await expect(renderRecipe(contract)).rejects.toThrow()
  })

  it('round-trips recipe.yaml through YAML without losing values', async () => {
    const contract = await loadBuiltin('workplace-assistant')
    expect(parse(stringify(contract))).toEqual(contract)
  })
})

describe('a mix of several environments\' datasets', () => {
  /** The workplace built-in with calendar as a second environment, trained on a mix of both train splits. */
  async function mixed(): Promise<any> {
    const c: any = structuredClone(await loadBuiltin('workplace-assistant'))
    const calendar: any = await loadBuiltin('calendar')
    c.gym.additional_environments = [{
      environment: 'calendar', gateway_config: 'calendar-v1', agent: calendar.gym.agent, resources_server: calendar.gym.resources_server,
      max_concurrency: 8, queue_capacity: 32, max_deadline_s: 1800, readiness: ['agent', 'resource'], cleanup: null, verifier_fields: calendar.data.verifier_fields,
    }]
    c.data.source = {type: 'mix', seed: 20260829, parts: [
      {environment: 'workplace_assistant', gateway_config: 'workplace-assistant-v1', dataset: 'train', split: 'train', source: c.data.source, cap: 0},
      {environment: 'calendar', gateway_config: 'calendar-v1', dataset: 'train', split: 'train', source: calendar.data.source, cap: 10},
    ]}
    return c
  }
  const problemsOf = (c: unknown) => contractProblems(c, 'recipe.yaml').map((p) => p.message)

  it('is a valid contract when every environment has exactly one part', async () => {
    expect(problemsOf(await mixed())).toEqual([])
  })

  it.each([
    ['a part for an environment the recipe does not register', (c: any) => (c.data.source.parts[1].gateway_config = 'calendar-v2'), '/data/source/parts/1: mix part calendar/calendar-v2 is not an environment of this recipe'],
    ['an environment with no part', (c: any) => (c.data.source.parts[1] = {...c.data.source.parts[0]}), '/data/source/parts/1: mix part workplace_assistant/workplace-assistant-v1 appears twice'],
    ['a part of a validation split outside a smoke run', (c: any) => (c.data.source.parts[1].split = 'validation'), '/data/source/parts/1/split: mix part calendar uses the validation split'],
  ])('refuses %s', async (_what, edit, problem) => {
    const c = await mixed()
    edit(c)
    expect(problemsOf(c)).toContain(problem)
  })

  it('names the environment the mix leaves without rows', async () => {
    const c = await mixed()
    c.data.source.parts[1] = {...c.data.source.parts[0]}
    expect(problemsOf(c)).toContain('/data/source/parts: the mix gives no rows to calendar/calendar-v1')
  })

  it('refuses a negative cap, a one-part mix and a file part in the schema', async () => {
    for (const [edit, pointer] of [
      [(c: any) => (c.data.source.parts[0].cap = -1), '/data/source'],
      [(c: any) => c.data.source.parts.pop(), '/data/source'],
      [(c: any) => (c.data.source.parts[0].source = {type: 'file', path: '/tmp/rows.jsonl'}), '/data/source'],
    ] as const) {
      const c = await mixed()
      edit(c)
      expect(contractProblems(c, 'recipe.yaml').map((p) => p.pointer).some((p) => p?.startsWith(pointer))).toBe(true)
    }
  })

  it('refuses several environments reading one Gym dataset whose rows name no environment', async () => {
    const c = await mixed()
    c.data.source = c.data.source.parts[0].source
    expect(problemsOf(c)).toContain('/data/source: a recipe of 2 environments reads one huggingface dataset, whose rows carry no environment of their own')
  })
})
