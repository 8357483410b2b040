/**
 * The recipe contract: everything gymrecipe needs to generate and verify a
 * recipe, recorded once in `recipe.yaml` beside the generated files. Field
 * names mirror the YAML (snake_case) so errors can quote JSON pointers as-is.
 */

export const ARCHETYPES = ['simple-agent', 'stateful-tools', 'sandbox'] as const
export type Archetype = (typeof ARCHETYPES)[number]

export const SPLITS = ['train', 'validation', 'example', 'benchmark', 'test'] as const
export type Split = (typeof SPLITS)[number]

/** Where one Gym dataset comes from inside the image. */
export type GymDataSource =
  | {type: 'huggingface'; repo_id: string; artifact: string}
  | {type: 'gitlab'; dataset_name: string; version: string; artifact: string}
  | {type: 'bundled'; path: string}
  | {type: 'benchmark'; benchmark: string; path: string}

export type DataSource =
  | GymDataSource
  /** The user's own Gym task JSONL (e.g. from `tasks export`): its path is env.sh's NEMO_GYM_TASK_DATA default. */
  | {type: 'file'; path: string}
  /** Several environments' datasets, each stamped with its environment, merged and shuffled into one raw file. */
  | {type: 'mix'; seed: number; parts: MixPart[]}

/**
 * One environment's share of a mix: its rows are stamped with environment, config and
 * data_source, rows missing a field its grader reads are dropped, and the first `cap` rows
 * that remain (0: all) are kept, in file order, before the whole mix is shuffled.
 */
export interface MixPart {
  environment: string
  gateway_config: string
  dataset: string
  split: Split
  source: GymDataSource
  cap: number
}

/** The parts of a mix in one line: environment, dataset and rows kept. */
export function describeMix(mix: Extract<DataSource, {type: 'mix'}>): string {
  return mix.parts.map((p) => `${p.environment} (${p.dataset}, ${p.cap > 0 ? `first ${p.cap} gradable rows` : 'every gradable row'})`).join(' and ')
}

export interface ScriptedTurn {
  /** A function call the scripted model makes. */
  tool_call?: {name: string; arguments: Record<string, unknown>}
  /** Final assistant text. */
  text?: string
  /** A verifier's output only: the result of the tool call before it, as an example rollout recorded it. */
  tool_output?: string
}

export interface RecipeContract {
  schema_version: 1
  id: string
  archetype: Archetype
  description: string
  gym: {
    commit: string
    /** Relative to the Gym root, or `${NAME}/…` in a config root outside it. */
    config_paths: string[]
    /** Variables naming trees outside the Gym checkout (env.sh holds their paths; mounted read-only). */
    config_roots?: string[]
    /** Variables the Gym config reads with `${oc.env:NAME}`: env.sh names them, the container is given them. */
    env_vars?: Array<{name: string; required: boolean}>
    environment: string
    gateway_config: string
    /** placed_via: the instance it inherits from, whose host and port the start line sets (see GymGraph.inheritedFrom). */
    agent: {name: string; type: string; max_steps: number | null; placed_via?: string}
    resources_server: {name: string; implementation: string; placed_via?: string} | null
    venv_dirs: string[]
    /**
     * Model servers the graph calls besides the policy (judges, user simulators), as read from
     * the config. `policy`: it is the policy model, i.e. under Relax the model being trained.
     */
    models?: Array<{role: 'judge' | 'simulator' | 'model'; owner: string; key: string; server: string | null; policy: boolean; enabled: boolean}>
    /**
     * Further environments trained in the same run (the first is the one above): each with its
     * own agent, resources server and Gateway registration; rows route by metadata.environment/config.
     */
    additional_environments?: AdditionalEnvironment[]
    /**
     * Model servers gymrecipe defines on the `gym env start` command line for a judge or simulator
     * that has none of its own; each listens on the service block after the Gym head and reads its
     * endpoint from <env_prefix>_BASE_URL / _MODEL_NAME / _API_KEY.
     */
    model_servers?: Array<{
      name: string
      type: string
      role: 'judge' | 'simulator' | 'model'
      env_prefix: string
      fields: Record<string, ModelServerField>
      binds: string[]
    }>
    /**
     * A judge or simulator whose config takes its endpoint as plain fields (`judge_base_url:
     * ${policy_base_url}` …) rather than a model server, pointed off the policy: each field is set on
     * the `gym env start` command line to read <env_prefix>_BASE_URL / _MODEL_NAME / _API_KEY.
     */
    endpoints?: Array<{
      role: 'judge' | 'simulator' | 'model'
      /** The graph instance whose fields are set. */
      owner: string
      env_prefix: string
      /** Dotted override path → the value it is set to (`${oc.env:…}` references). */
      overrides: Record<string, string>
    }>
    /**
     * Values the config leaves `???` in a server the recipe starts (a harness agent's container
     * formatter or dataset path): each is set on the `gym env start` line from a deployment
     * variable env.sh names; a host path given there is mounted read-only at the same path.
     */
    unset_values?: Array<{path: string; env: string} | {path: string; value: string}>
    /** How the Gym checkout the recipe was recorded from behaves where Gym changed over time. */
    behaviour?: {
      include_order: 'discovery' | 'reverse-discovery' | 'depth' | 'post-order'
      waits_for_model_endpoints: boolean
      guards_openai_version: boolean
    }
  }
  data: {
    dataset: string
    split: Split
    source: DataSource
    raw_filename: string
    verifier_fields: string[]
    tools: boolean
    strip_agent_ref: boolean
    /** A non-training split used on purpose for a smoke run. */
    smoke: boolean
  }
  service: {
    image: string
    container: string
    /** Gateway port; agent = +1, resource = +2, Gym head = +3. */
    gateway_port: number
    shm_size: string
    privileged: boolean
    cap_add: string[]
    security_opt: string[]
    start_timeout_s: number
    callback_networks: string[]
    callback_hosts: string[]
    /** A request the pinned Gym answers 500; absent: a JSON body sent as text/plain to the resources server's /verify (or the agent's /run). */
    error_probe?: ErrorProbe
  }
  ray: {
    gcs_port: number
    dashboard_port: number
    num_cpus: number
    /** object-manager, node-manager, ray-client-server, dashboard-agent-listen, dashboard-agent-grpc, runtime-env-agent, metrics-export = base .. base+6 */
    component_port_base: number
    min_worker_port: number
    max_worker_port: number
  }
  gateway: {
    interrupt_policy: 'protected' | 'interruptible' | 'resumable'
    max_concurrency: number
    queue_capacity: number
    max_deadline_s: number
    deadline_s: number
    lease_s: number
    callback_protocol: 'responses' | 'chat_completions' | 'messages'
    readiness: Array<'agent' | 'resource'>
    cleanup: null | {server: 'agent' | 'resource'; path: string}
  }
  verifier: {
    /**
     * direct: POST /verify with a known-correct and a known-wrong response. golden: one Gateway
     * trial in golden mode (sandbox agents). pending: no example is known yet (`pending` says what
     * to write); the service rung and train's pre-flight fail until one is given.
     */
    kind: 'direct' | 'golden' | 'pending'
    /** A pending verifier: what is missing and how to give it. */
    pending?: string
    /** Python inside the Gym image that runs verify_<recipe>.py (standard library only). */
    python: string
    /** The task row the verifier uses, read inside the image; or null with an inline payload. */
    task: {file: string; row: number} | null
    /** Inline /verify body (without `response`) when no task row is used. */
    payload: Record<string, unknown> | null
    /** Model output that must earn success_reward. */
    correct: ScriptedTurn[]
    /** Model output that must not earn success_reward. */
    wrong: ScriptedTurn[]
    /**
     * The row the wrong output answered, when it is not `task`: it is graded on its own row (an
     * answer fit for one row may be right for another, e.g. any text where a message is expected).
     */
    wrong_task?: {file: string; row: number} | null
    success_reward: number
    /** The grader's exact reward for a wrong answer, where it defines one; absent or null: anything below success_reward. */
    failure_reward?: number | null
  }
  trial: null | {
    task: {file: string; row: number}
    turns: ScriptedTurn[]
    expect: {status: 'completed' | 'truncated'; reward: number; tool_calls: number; tool_outputs: number; tool_result_history: number[]}
    deadline_s: number
    lease_s: number
    cleanup_probe: boolean
  }
  training: {
    model: {name: string; slug: string; config_script: string}
    gpus: number
    parsers: {reasoning: string | null; tool_call: string}
    agent_timeout_s: number
    rollout: {
      num_rollout: number
      batch_size: number
      n_samples_per_prompt: number
      max_prompt_len: number
      max_response_len: number
      max_context_len: number
      temperature: number
      global_batch_size: number
    }
    perf: {
      tensor_parallel: number
      sequence_parallel: boolean
      pipeline_parallel: number
      context_parallel: number
      expert_parallel: number
      expert_tensor_parallel: number
      /** null: the flag is left out and Relax's default applies. */
      micro_batch_size: number | null
      max_tokens_per_gpu: number
      /** null: Relax uses max_tokens_per_gpu. */
      log_probs_max_tokens_per_gpu: number | null
      log_probs_chunk_size: number
    }
    grpo: {kl_loss_coef: number; entropy_coef: number; eps_clip: number; eps_clip_high: number; use_tis: boolean}
    optimizer: {lr: number; weight_decay: number; adam_beta1: number; adam_beta2: number}
    sglang: {
      num_gpus_per_engine: number
      mem_fraction_static: number
      cuda_graph_max_bs: number | null
      router_policy: string | null
      /** --sglang-router-disable-circuit-breaker (Relax's hybrid-async recipe sets it). */
      router_disable_circuit_breaker?: boolean
    }
    /**
     * How actor and rollout share the job's GPUs. Absent: colocated on all of them, on-policy
     * (`--colocate --max-staleness 0`), as every proven recipe but the hybrid-async one.
     */
    schedule?: TrainingSchedule
    save_interval: number
    /** Extra verbatim flags appended to an argument array. */
    extra_args: {rollout: string[]; perf: string[]; grpo: string[]; optimizer: string[]; misc: string[]}
    project_name: string
    exp_name: string
  }
  /** File names where they differ from the generated ones (an adopted recipe keeps its own). */
  files?: Partial<RecipeFileNames>
  /** Written by `gymrecipe new`: what was generated, to detect later hand edits. */
  generated?: {
    gymrecipe_version: string
    /** The built-in recipe it started from, so an update starts from the same one. */
    from?: string
    files: Record<string, string>
  }
}

export interface ErrorProbe {
  server: 'resource' | 'agent'
  path: string
  content_type: string
  body: string
}

/**
 * Real Gym at the pinned commit answers a malformed body 422, but a valid JSON body declared as
 * text/plain makes its validation-error handler fail: a 500 with a traceback on any server.
 */
export function defaultErrorProbe(hasResourcesServer: boolean): ErrorProbe {
  return hasResourcesServer
    ? {server: 'resource', path: '/verify', content_type: 'text/plain', body: '{}'}
    : {server: 'agent', path: '/run', content_type: 'text/plain', body: '{}'}
}

export function errorProbeOf(contract: Pick<RecipeContract, 'service' | 'gym'>): ErrorProbe {
  return contract.service.error_probe ?? defaultErrorProbe(contract.gym.resources_server !== null)
}

/**
 * colocate: actor and rollout on the same GPUs, on-policy. hybrid: actor and rollout on their own
 * GPUs (Relax's --hybrid, which runs fully asynchronous), rollouts up to max_staleness updates old.
 */
export interface TrainingSchedule {
  mode: 'colocate' | 'hybrid'
  actor_gpus: number
  rollout_gpus: number
  max_staleness: number
  /** --num-iters-per-train-update; null leaves Relax's default. */
  num_iters_per_train_update: number | null
  num_data_storage_units: number
  use_health_check: boolean
}

/** The schedule a recipe trains with: recorded, or colocated on-policy on all its GPUs. */
export function trainingSchedule(training: Pick<RecipeContract['training'], 'gpus' | 'schedule'>): TrainingSchedule {
  return training.schedule ?? {mode: 'colocate', actor_gpus: training.gpus, rollout_gpus: training.gpus, max_staleness: 0, num_iters_per_train_update: null, num_data_storage_units: 1, use_health_check: true}
}

/** A field of a model server gymrecipe adds: a scalar, or an empty mapping or list. */
export type ModelServerField = string | number | boolean | null | {[key: string]: unknown} | unknown[]

/** An environment of a multi-environment recipe besides the first. */
export interface AdditionalEnvironment {
  environment: string
  gateway_config: string
  agent: {name: string; type: string; max_steps: number | null; placed_via?: string}
  resources_server: {name: string; implementation: string; placed_via?: string} | null
  max_concurrency: number
  queue_capacity: number
  max_deadline_s: number
  readiness: Array<'agent' | 'resource'>
  cleanup: null | {server: 'agent' | 'resource'; path: string}
  /** Fields every row of this environment must carry for its resources server to grade it. */
  verifier_fields: string[]
  /** Its known-correct and known-wrong outputs for its own grader (from the built-in of the same environment), if known. */
  verifier?: RecipeContract['verifier']
  /** Its deterministic trial through the Gateway (from the built-in of the same environment), if known. */
  trial?: RecipeContract['trial']
}

/** Every environment of a recipe, the first (recorded at the top of gym, gateway and data) included. */
export function environmentsOf(c: Pick<RecipeContract, 'gym' | 'gateway' | 'data'>): AdditionalEnvironment[] {
  const first: AdditionalEnvironment = {
    environment: c.gym.environment,
    gateway_config: c.gym.gateway_config,
    agent: c.gym.agent,
    resources_server: c.gym.resources_server,
    max_concurrency: c.gateway.max_concurrency,
    queue_capacity: c.gateway.queue_capacity,
    max_deadline_s: c.gateway.max_deadline_s,
    readiness: c.gateway.readiness,
    cleanup: c.gateway.cleanup,
    verifier_fields: c.data.verifier_fields,
  }
  return [first, ...(c.gym.additional_environments ?? [])]
}

/** Ports of the model servers gymrecipe adds, after the Gym head. */
export function modelServerPorts(contract: Pick<RecipeContract, 'service' | 'gym'>): Array<{name: string; port: number}> {
  const head = servicePorts(contract).head
  return (contract.gym.model_servers ?? []).map((server, i) => ({name: server.name, port: head + 1 + i}))
}

/**
 * The agent and resources server ports of each environment: environment i at gateway + 1 + 2i and
 * + 2 + 2i, as Relax's multienv recipe places math (+1, +2) and workplace (+3, +4).
 */
export function environmentPorts(contract: {service: Pick<RecipeContract['service'], 'gateway_port'>; gym?: Pick<RecipeContract['gym'], 'additional_environments'>}): Array<{agent: number; resource: number}> {
  const count = 1 + (contract.gym?.additional_environments?.length ?? 0)
  return Array.from({length: count}, (_, i) => ({agent: contract.service.gateway_port + 1 + 2 * i, resource: contract.service.gateway_port + 2 + 2 * i}))
}

/**
 * Every port of the service block in order, labelled: the Gateway, each environment's agent and
 * resources server (named by environment when there are several), the Gym head, the added model servers.
 */
export function serviceBlockPorts(contract: Pick<RecipeContract, 'service' | 'gym'>): Array<{label: string; port: number}> {
  const servers = [contract.gym.resources_server, ...(contract.gym.additional_environments ?? []).map((e) => e.resources_server)]
  const names = [contract.gym.environment, ...(contract.gym.additional_environments ?? []).map((e) => e.environment)]
  const who = (i: number) => (names.length > 1 ? `${names[i]} ` : '')
  return [
    {label: 'gateway', port: contract.service.gateway_port},
    ...environmentPorts(contract).flatMap((p, i) => [{label: `${who(i)}agent`, port: p.agent}, ...(servers[i] ? [{label: `${who(i)}resource`, port: p.resource}] : [])]),
    {label: 'head', port: servicePorts(contract).head},
    ...modelServerPorts(contract).map((m) => ({label: `model server ${m.name}`, port: m.port})),
  ]
}

/** Ports of the service block, derived from the gateway port: the first environment's agent and resources server, then the head after every environment. */
export function servicePorts(contract: Pick<RecipeContract, 'service'> & {gym?: Pick<RecipeContract['gym'], 'additional_environments'>}): {gateway: number; agent: number; resource: number; head: number} {
  const gateway = contract.service.gateway_port
  const environments = 1 + (contract.gym?.additional_environments?.length ?? 0)
  return {gateway, agent: gateway + 1, resource: gateway + 2, head: gateway + 1 + 2 * environments}
}

/** The seven recipe files, by role. */
export interface RecipeFileNames {
  env: string
  prepare: string
  start: string
  run: string
  verify: string
  readme: string
  pitfall: string
}

export function recipeFileNames(contract: Pick<RecipeContract, 'id' | 'training' | 'files'>): RecipeFileNames {
  return {...generatedFileNames(contract), ...contract.files}
}

function generatedFileNames(contract: Pick<RecipeContract, 'id' | 'training'>): RecipeFileNames {
  const id = contract.id
  // Relax spells script names with underscores (prepare_workplace_assistant.sh) and the
  // training script with the id as is (run-...-nemo-gym-workplace-assistant.sh).
  const snake = id.replaceAll('-', '_')
  return {
    env: 'env.sh',
    prepare: `prepare_${snake}.sh`,
    start: `start_${snake}_gym.sh`,
    run: `run-${contract.training.model.slug}-${contract.training.gpus}xgpu-nemo-gym-${id}.sh`,
    verify: `verify_${snake}.py`,
    readme: 'README.md',
    pitfall: 'PITFAIL.md',
  }
}

/** Where a recipe lives inside a Relax checkout. */
export const RECIPES_DIR = 'examples/nemo_gym_agentic/recipes'
