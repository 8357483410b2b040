/**
 * The built-in contracts must reproduce the values of the proven, hand-written Relax recipes
 * (shared reference `relax-proven-values.md` §2, §4). Each built-in is rendered and its
 * training script, --agent-env, Gateway registration and ports are compared with the tables.
 * Paths (checkpoint and prompt locations) are deployment choices and are not compared.
 */
import {execFileSync} from 'node:child_process'
import path from 'node:path'
import {describe, expect, it} from 'vitest'

import {loadContractFile} from '../../src/contract/load.js'
import type {RecipeContract} from '../../src/contract/types.js'
import {renderRecipe} from '../../src/scaffold/render.js'
import {checkContractInvariants} from '../../src/contract/invariants.js'
import {type ScheduleMode, withSchedule} from '../../src/contract/schedule.js'

type Flags = Record<string, string | true>

interface GatewaySpec {config: string; environment: string; agent_name: string; readiness: Array<'agent' | 'resource'>; cleanup: 'agent' | 'resource' | null; interrupt_policy: string; max_concurrency: number; queue_capacity: number; max_deadline_s: number}

interface Proven {
  /** The built-in rendered (default: the key), and the schedule `new --schedule` gives it. */
  builtin?: string
  schedule?: ScheduleMode
  arrays: Record<'ROLLOUT_ARGS' | 'PERF_ARGS' | 'SGLANG_ARGS' | 'GRPO_ARGS' | 'OPTIMIZER_ARGS' | 'MISC_ARGS' | 'CKPT_ARGS' | 'SCHEDULE_ARGS', Flags>
  agentEnv: Record<string, string>
  gateway: GatewaySpec
  /** Further environments of the run, in registration order: agent and resources server at the next two ports each. */
  moreGateways?: GatewaySpec[]
  ports: {gateway: number; gcs: number; dashboard: number}
}

// Identical in all seven real training scripts (§2.2).
const GRPO: Flags = {'--advantage-estimator': 'grpo', '--kl-loss-coef': '0.0', '--entropy-coef': '0.0', '--eps-clip': '0.2', '--eps-clip-high': '0.28', '--use-tis': true}
const OPTIMIZER: Flags = {'--optimizer': 'adam', '--lr': '1e-6', '--lr-decay-style': 'constant', '--weight-decay': '0.1', '--adam-beta1': '0.9', '--adam-beta2': '0.98'}
const MISC: Flags = {'--skip-eval-before-train': true, '--attention-dropout': '0.0', '--hidden-dropout': '0.0', '--accumulate-allreduce-grads-in-fp32': true, '--attention-softmax-in-fp32': true, '--attention-backend': 'flash'}
const CKPT: Flags = {'--megatron-to-hf-mode': 'bridge', '--warm-hf-checkpoint-page-cache': true, '--save-interval': '100'}
// The Relax flags after run_training.sh's positionals (§2.8): colocated on-policy in six scripts.
const COLOCATE_8: Flags = {'--resource': '{"actor":[1,8],"rollout":[1,8]}', '--max-staleness': '0', '--num-data-storage-units': '1', '--colocate': true, '--use-health-check': true}
const ROLLOUT_COMMON: Flags = {'--input-key': 'input', '--metadata-key': 'metadata', '--rollout-shuffle': true, '--use-agentic-rollout': true}

// hy (run-qwen3-4B-8xgpu-nemo-gym-workplace-hybrid-async.sh) differs from wp only in TP, the SGLang engine, the circuit breaker and the schedule.
const PROVEN: Record<string, Proven> = {
  calendar: {
    arrays: {
      CKPT_ARGS: CKPT,
      ROLLOUT_ARGS: {...ROLLOUT_COMMON, '--agent-timeout': '660', '--agentic-reasoning-parser': 'qwen3', '--agentic-tool-call-parser': 'qwen', '--num-rollout': '200', '--rollout-batch-size': '32', '--n-samples-per-prompt': '8', '--rollout-max-prompt-len': '6144', '--rollout-max-response-len': '2048', '--rollout-max-context-len': '8192', '--rollout-temperature': '0.7', '--global-batch-size': '256'},
      PERF_ARGS: {'--tensor-model-parallel-size': '4', '--sequence-parallel': true, '--pipeline-model-parallel-size': '1', '--context-parallel-size': '1', '--expert-model-parallel-size': '1', '--expert-tensor-parallel-size': '1', '--micro-batch-size': '1', '--use-dynamic-batch-size': true, '--max-tokens-per-gpu': '8192', '--log-probs-max-tokens-per-gpu': '8192', '--log-probs-chunk-size': '1024'},
      SGLANG_ARGS: {'--rollout-num-gpus-per-engine': '8', '--sglang-mem-fraction-static': '0.7', '--sglang-cuda-graph-max-bs': '4'},
      GRPO_ARGS: GRPO,
      OPTIMIZER_ARGS: OPTIMIZER,
      MISC_ARGS: MISC,
      SCHEDULE_ARGS: COLOCATE_8,
    },
    agentEnv: {NEMO_GYM_ENVIRONMENT: 'calendar', NEMO_GYM_CONFIG: 'calendar-v1', NEMO_GYM_MODEL: 'model', NEMO_GYM_INTERRUPT_POLICY: 'protected', NEMO_GYM_DEADLINE_S: '600', NEMO_GYM_LEASE_S: '60'},
    gateway: {config: 'calendar-v1', environment: 'calendar', agent_name: 'calendar_simple_agent', readiness: ['agent', 'resource'], cleanup: null, interrupt_policy: 'protected', max_concurrency: 8, queue_capacity: 32, max_deadline_s: 1800},
    ports: {gateway: 29100, gcs: 6383, dashboard: 29365},
  },
  'workplace-assistant': {
    arrays: {
      CKPT_ARGS: CKPT,
      ROLLOUT_ARGS: {...ROLLOUT_COMMON, '--agent-timeout': '660', '--agentic-reasoning-parser': 'qwen3', '--agentic-tool-call-parser': 'qwen', '--num-rollout': '100', '--rollout-batch-size': '8', '--n-samples-per-prompt': '8', '--rollout-max-prompt-len': '8191', '--rollout-max-context-len': '8192', '--rollout-max-response-len': '2048', '--rollout-temperature': '0.7', '--global-batch-size': '64'},
      PERF_ARGS: {'--tensor-model-parallel-size': '8', '--sequence-parallel': true, '--pipeline-model-parallel-size': '1', '--context-parallel-size': '1', '--expert-model-parallel-size': '1', '--expert-tensor-parallel-size': '1', '--micro-batch-size': '1', '--use-dynamic-batch-size': true, '--max-tokens-per-gpu': '8192', '--log-probs-max-tokens-per-gpu': '8192', '--log-probs-chunk-size': '1024'},
      SGLANG_ARGS: {'--rollout-num-gpus-per-engine': '8', '--sglang-mem-fraction-static': '0.7', '--sglang-cuda-graph-max-bs': '4', '--sglang-router-policy': 'consistent_hashing'},
      GRPO_ARGS: GRPO,
      OPTIMIZER_ARGS: OPTIMIZER,
      MISC_ARGS: MISC,
      SCHEDULE_ARGS: COLOCATE_8,
    },
    agentEnv: {NEMO_GYM_ENVIRONMENT: 'workplace_assistant', NEMO_GYM_CONFIG: 'workplace-assistant-v1', NEMO_GYM_MODEL: 'model', NEMO_GYM_INTERRUPT_POLICY: 'protected', NEMO_GYM_DEADLINE_S: '600', NEMO_GYM_LEASE_S: '60'},
    gateway: {config: 'workplace-assistant-v1', environment: 'workplace_assistant', agent_name: 'workplace_assistant_simple_agent', readiness: ['agent', 'resource'], cleanup: 'resource', interrupt_policy: 'protected', max_concurrency: 8, queue_capacity: 32, max_deadline_s: 1800},
    ports: {gateway: 29000, gcs: 6382, dashboard: 28365},
  },
  'workplace-assistant --schedule hybrid': {
    builtin: 'workplace-assistant',
    schedule: 'hybrid',
    arrays: {
      CKPT_ARGS: CKPT,
      ROLLOUT_ARGS: {...ROLLOUT_COMMON, '--agent-timeout': '660', '--agentic-reasoning-parser': 'qwen3', '--agentic-tool-call-parser': 'qwen', '--num-rollout': '100', '--rollout-batch-size': '8', '--n-samples-per-prompt': '8', '--rollout-max-prompt-len': '8191', '--rollout-max-context-len': '8192', '--rollout-max-response-len': '2048', '--rollout-temperature': '0.7', '--global-batch-size': '64'},
      PERF_ARGS: {'--tensor-model-parallel-size': '4', '--sequence-parallel': true, '--pipeline-model-parallel-size': '1', '--context-parallel-size': '1', '--expert-model-parallel-size': '1', '--expert-tensor-parallel-size': '1', '--micro-batch-size': '1', '--use-dynamic-batch-size': true, '--max-tokens-per-gpu': '8192', '--log-probs-max-tokens-per-gpu': '8192', '--log-probs-chunk-size': '1024'},
      SGLANG_ARGS: {'--rollout-num-gpus-per-engine': '4', '--sglang-mem-fraction-static': '0.7', '--sglang-cuda-graph-max-bs': '4', '--sglang-router-policy': 'consistent_hashing', '--sglang-router-disable-circuit-breaker': true},
      GRPO_ARGS: GRPO,
      OPTIMIZER_ARGS: OPTIMIZER,
      MISC_ARGS: MISC,
      // hy 165-170: no --colocate
      SCHEDULE_ARGS: {'--resource': '{"actor":[1,4],"rollout":[1,4]}', '--max-staleness': '2', '--num-data-storage-units': '1', '--num-iters-per-train-update': '1', '--hybrid': true, '--use-health-check': true},
    },
    agentEnv: {NEMO_GYM_ENVIRONMENT: 'workplace_assistant', NEMO_GYM_CONFIG: 'workplace-assistant-v1', NEMO_GYM_MODEL: 'model', NEMO_GYM_INTERRUPT_POLICY: 'protected', NEMO_GYM_DEADLINE_S: '600', NEMO_GYM_LEASE_S: '60'},
    gateway: {config: 'workplace-assistant-v1', environment: 'workplace_assistant', agent_name: 'workplace_assistant_simple_agent', readiness: ['agent', 'resource'], cleanup: 'resource', interrupt_policy: 'protected', max_concurrency: 8, queue_capacity: 32, max_deadline_s: 1800},
    ports: {gateway: 29000, gcs: 6382, dashboard: 28365},
  },
  // me (run-qwen3-4B-8xgpu-nemo-gym-multienv.sh, start_multienv_gym.sh): math_with_judge and workplace in one run.
  'multienv-math-workplace': {
    arrays: {
      // me 85-90: save interval 200 (the order of the flags differs, not their values)
      CKPT_ARGS: {...CKPT, '--save-interval': '200'},
      ROLLOUT_ARGS: {...ROLLOUT_COMMON, '--agent-timeout': '1860', '--agentic-reasoning-parser': 'qwen3', '--agentic-tool-call-parser': 'qwen', '--num-rollout': '200', '--rollout-batch-size': '32', '--n-samples-per-prompt': '8', '--rollout-max-prompt-len': '6144', '--rollout-max-response-len': '16384', '--rollout-max-context-len': '24576', '--rollout-temperature': '1.0', '--global-batch-size': '256'},
      PERF_ARGS: {'--tensor-model-parallel-size': '4', '--sequence-parallel': true, '--pipeline-model-parallel-size': '1', '--context-parallel-size': '1', '--expert-model-parallel-size': '1', '--expert-tensor-parallel-size': '1', '--micro-batch-size': '1', '--use-dynamic-batch-size': true, '--max-tokens-per-gpu': '24576', '--log-probs-max-tokens-per-gpu': '24576', '--log-probs-chunk-size': '1024'},
      // me 158-169: no cuda-graph flag
      SGLANG_ARGS: {'--rollout-num-gpus-per-engine': '2', '--sglang-mem-fraction-static': '0.8', '--sglang-router-policy': 'consistent_hashing'},
      GRPO_ARGS: GRPO,
      OPTIMIZER_ARGS: OPTIMIZER,
      MISC_ARGS: MISC,
      SCHEDULE_ARGS: COLOCATE_8,
    },
    // §2.7: no NEMO_GYM_ENVIRONMENT / NEMO_GYM_CONFIG: each row routes by its own metadata.
    agentEnv: {NEMO_GYM_MODEL: 'model', NEMO_GYM_INTERRUPT_POLICY: 'protected', NEMO_GYM_DEADLINE_S: '1800', NEMO_GYM_LEASE_S: '60'},
    gateway: {config: 'math-with-judge-v1', environment: 'math_with_judge', agent_name: 'math_with_judge_simple_agent', readiness: ['agent', 'resource'], cleanup: null, interrupt_policy: 'protected', max_concurrency: 256, queue_capacity: 1024, max_deadline_s: 1800},
    moreGateways: [{config: 'workplace-assistant-v1', environment: 'workplace_assistant', agent_name: 'workplace_assistant_simple_agent', readiness: ['agent', 'resource'], cleanup: 'resource', interrupt_policy: 'protected', max_concurrency: 256, queue_capacity: 1024, max_deadline_s: 1800}],
    ports: {gateway: 29300, gcs: 6384, dashboard: 30365},
  },
  'r2e-gym': {
    arrays: {
      CKPT_ARGS: CKPT,
      ROLLOUT_ARGS: {...ROLLOUT_COMMON, '--agent-timeout': '1260', '--agentic-tool-call-parser': 'qwen3_coder', '--num-rollout': '32', '--rollout-batch-size': '8', '--n-samples-per-prompt': '8', '--rollout-max-prompt-len': '8192', '--rollout-max-response-len': '43008', '--rollout-max-context-len': '51200', '--rollout-temperature': '0.7', '--global-batch-size': '64'},
      PERF_ARGS: {'--tensor-model-parallel-size': '2', '--pipeline-model-parallel-size': '1', '--context-parallel-size': '4', '--sequence-parallel': true, '--calculate-per-token-loss': true, '--expert-model-parallel-size': '1', '--expert-tensor-parallel-size': '1', '--recompute-granularity': 'full', '--recompute-method': 'uniform', '--recompute-num-layers': '1', '--no-rope-fusion': true, '--use-dynamic-batch-size': true, '--max-tokens-per-gpu': '12800', '--log-probs-chunk-size': '512'},
      SGLANG_ARGS: {'--rollout-num-gpus-per-engine': '2', '--sglang-mem-fraction-static': '0.7', '--sglang-cuda-graph-max-bs': '4', '--sglang-router-policy': 'consistent_hashing'},
      GRPO_ARGS: GRPO,
      OPTIMIZER_ARGS: OPTIMIZER,
      MISC_ARGS: MISC,
      SCHEDULE_ARGS: COLOCATE_8,
    },
    agentEnv: {NEMO_GYM_ENVIRONMENT: 'r2e_gym', NEMO_GYM_CONFIG: 'r2e-gym-v1', NEMO_GYM_MODEL: 'model', NEMO_GYM_INTERRUPT_POLICY: 'protected', NEMO_GYM_DEADLINE_S: '1200', NEMO_GYM_LEASE_S: '120'},
    gateway: {config: 'r2e-gym-v1', environment: 'r2e_gym', agent_name: 'swe_agents', readiness: ['agent'], cleanup: null, interrupt_policy: 'protected', max_concurrency: 16, queue_capacity: 32, max_deadline_s: 7200},
    ports: {gateway: 28100, gcs: 6381, dashboard: 28265},
  },
}

// Paths are where a deployment keeps things, not training values.
const PATH_FLAGS = new Set(['--hf-checkpoint', '--ref-load', '--save', '--prompt-data', '--agent-command', '--agent-cwd'])

/** Shell words of one `NAME=( ... )` array in a script, quotes removed. */
function arrayWords(script: string, name: string): string[] {
  const start = script.indexOf(`\n${name}=(`)
  if (start < 0) throw new Error(`${name} is not defined`)
  const body = script.slice(start + name.length + 3, script.indexOf('\n)', start))
  return [...body.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3])
}

/** Flags of an argument array: a flag followed by a non-flag word takes it as its value. */
function flagsOf(words: string[]): {flags: Flags; agentEnv: Record<string, string>} {
  const flags: Flags = {}
  const agentEnv: Record<string, string> = {}
  for (let i = 0; i < words.length; i++) {
    const word = words[i]
    if (!word.startsWith('--')) throw new Error(`stray word ${word}`)
    if (word === '--agent-env') {
      while (i + 1 < words.length && !words[i + 1].startsWith('--')) {
        const [key, ...value] = words[++i].split('=')
        agentEnv[key] = value.join('=')
      }
      continue
    }
    const next = words[i + 1]
    if (next !== undefined && !next.startsWith('--')) {
      flags[word] = next
      i++
    } else flags[word] = true
  }
  for (const p of PATH_FLAGS) delete flags[p]
  return {flags: numeric(flags), agentEnv}
}

/** Compare numbers by value: the real scripts spell 0.0 where the templates spell 0. */
function numeric(flags: Flags): Flags {
  return Object.fromEntries(Object.entries(flags).map(([k, v]) => [k, typeof v === 'string' && /^-?\d+(\.\d+)?(e-?\d+)?$/.test(v) ? String(Number(v)) : v]))
}

/** Run the Gateway registration heredoc of the start script, as the container would. */
function gatewayRegistration(start: string, gatewayPort: number): Record<string, any> {
  const program = start.slice(start.indexOf("<<'PY'\n") + 7, start.indexOf('\nPY\n'))
  const out = execFileSync('python3', ['-c', program], {env: {GW_HOST: 'gym-host', GW_PORT: String(gatewayPort), PATH: process.env.PATH}, encoding: 'utf8'})
  return JSON.parse(out)
}

describe.each(Object.keys(PROVEN))('built-in %s reproduces the proven Relax values', (name) => {
  const proven = PROVEN[name]
  const load = async (): Promise<{contract: RecipeContract; run: string; start: string}> => {
    const recorded = await loadContractFile(path.resolve('recipes', `${proven.builtin ?? name}.yaml`))
    const contract = proven.schedule ? {...recorded, training: withSchedule(recorded.training, proven.schedule)} : recorded
    expect(checkContractInvariants(contract)).toEqual([])
    const files = await renderRecipe(contract)
    return {contract, run: files.find((f) => f.role === 'run')!.content, start: files.find((f) => f.role === 'start')!.content}
  }

  it('every training argument array', async () => {
    const {run} = await load()
    for (const [name, expected] of Object.entries(proven.arrays)) {
      expect({array: name, flags: flagsOf(arrayWords(run, name)).flags}).toEqual({array: name, flags: numeric(expected)})
    }
  })

  it('the --agent-env values', async () => {
    const {run} = await load()
    const {agentEnv} = flagsOf(arrayWords(run, 'ROLLOUT_ARGS'))
    expect(agentEnv).toEqual({NEMO_GYM_URL: '${GATEWAY_URL}', ...proven.agentEnv})
  })

  it('every flag of the submitted entrypoint lives in an argument array', async () => {
    const {run} = await load()
    const submit = run.slice(run.lastIndexOf('ray job submit'))
    const entrypoint = run.slice(run.indexOf('entrypoint_portable bash'))
    expect(submit).not.toMatch(/\s--(?:resource|max-staleness|colocate|hybrid)\b/)
    expect(entrypoint).toContain('"${DATA_LIMIT}" \\\n  "${SCHEDULE_ARGS[@]}" "${MODEL_ARGS[@]}"')
  })

  it('the Gateway registration, ports and limits', async () => {
    const {contract, start} = await load()
    const registered = gatewayRegistration(start, proven.ports.gateway)
    const specs = [proven.gateway, ...(proven.moreGateways ?? [])]
    expect(Object.keys(registered)).toEqual(specs.map((g) => g.config))
    specs.forEach((g, i) => {
      const url = {agent: `http://gym-host:${proven.ports.gateway + 1 + 2 * i}`, resource: `http://gym-host:${proven.ports.gateway + 2 + 2 * i}`}
      expect(registered[g.config]).toEqual({
        environment: g.environment,
        agent_name: g.agent_name,
        agent_url: url.agent,
        readiness_urls: g.readiness.map((r) => url[r]),
        interrupt_policy: g.interrupt_policy,
        max_concurrency: g.max_concurrency,
        queue_capacity: g.queue_capacity,
        max_deadline_s: g.max_deadline_s,
        ...(g.cleanup ? {abort_url: `${url[g.cleanup]}/cleanup/{rollout_id}`, force_cleanup_url: `${url[g.cleanup]}/cleanup/{rollout_id}`, cleanup_probe_url: `${url[g.cleanup]}/cleanup/{rollout_id}`} : {}),
      })
    })
    expect({gateway: contract.service.gateway_port, gcs: contract.ray.gcs_port, dashboard: contract.ray.dashboard_port}).toEqual(proven.ports)
  })
})
