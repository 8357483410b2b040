/**
 * JSON Schema of recipe.yaml. Patterns keep every value that reaches a shell
 * script or a path to a safe alphabet; the templates also quote them, so a
 * value can neither escape the recipe folder nor break out of a shell quote.
 */

export const RECIPE_ID_PATTERN = '^[a-z0-9][a-z0-9-]*$'
const NAME = '^[A-Za-z0-9][A-Za-z0-9_.-]*$'
const RELATIVE_PATH = '^(?!/)(?!.*(?:^|/)\\.\\.(?:/|$))[A-Za-z0-9_][A-Za-z0-9_./-]*$'
/** A Gym config path: relative to the Gym root, or `${NAME}/…` in a config root the recipe names. */
const CONFIG_PATH = '^(?:\\$\\{[A-Z][A-Z0-9_]{0,63}\\}/)?(?!/)(?!.*(?:^|/)\\.\\.(?:/|$))[A-Za-z0-9_][A-Za-z0-9_./-]*$'
const ABSOLUTE_PATH = '^/(?!.*(?:^|/)\\.\\.(?:/|$))[A-Za-z0-9_./-]+$'
const IMAGE = '^[a-z0-9][a-z0-9._/-]*(?::[A-Za-z0-9_][A-Za-z0-9_.-]*)?$'
/** A file inside the recipe folder: no folder, no hidden file. */
const FILE_NAME = '^[A-Za-z0-9][A-Za-z0-9_.-]*$'
const ONE_LINE = '^[^\\n\\r\\u0000]*$'
const PORT = {type: 'integer', minimum: 1, maximum: 65535} as const
const POSITIVE = {type: 'integer', minimum: 1} as const
const NUMBER = {type: 'number'} as const
const OPTIONAL_POSITIVE = {anyOf: [{type: 'null'}, POSITIVE]} as const

const GYM_DATA_SOURCES = [
  {
    type: 'object',
    additionalProperties: false,
    required: ['type', 'repo_id', 'artifact'],
    properties: {type: {const: 'huggingface'}, repo_id: {type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$'}, artifact: {type: 'string', pattern: RELATIVE_PATH}},
  },
  {
    type: 'object',
    additionalProperties: false,
    required: ['type', 'dataset_name', 'version', 'artifact'],
    properties: {type: {const: 'gitlab'}, dataset_name: {type: 'string', pattern: NAME}, version: {type: 'string', pattern: NAME}, artifact: {type: 'string', pattern: RELATIVE_PATH}},
  },
  {
    type: 'object',
    additionalProperties: false,
    required: ['type', 'path'],
    properties: {type: {const: 'bundled'}, path: {type: 'string', pattern: RELATIVE_PATH}},
  },
  {
    type: 'object',
    additionalProperties: false,
    required: ['type', 'benchmark', 'path'],
    properties: {type: {const: 'benchmark'}, benchmark: {type: 'string', pattern: NAME}, path: {type: 'string', pattern: RELATIVE_PATH}},
  },
] as const

/** One environment's share of a mixed dataset; cap 0 keeps every gradable row. */
const MIX_PART = {
  type: 'object',
  additionalProperties: false,
  required: ['environment', 'gateway_config', 'dataset', 'split', 'source', 'cap'],
  properties: {
    environment: {type: 'string', pattern: NAME},
    gateway_config: {type: 'string', pattern: NAME},
    dataset: {type: 'string', pattern: NAME},
    split: {enum: ['train', 'validation', 'example', 'benchmark', 'test']},
    source: {oneOf: GYM_DATA_SOURCES},
    cap: {type: 'integer', minimum: 0},
  },
} as const

const READINESS = {type: 'array', minItems: 1, uniqueItems: true, items: {enum: ['agent', 'resource']}} as const
const CLEANUP = {
  anyOf: [
    {type: 'null'},
    {
      type: 'object',
      additionalProperties: false,
      required: ['server', 'path'],
      properties: {server: {enum: ['agent', 'resource']}, path: {type: 'string', pattern: '^/[A-Za-z0-9_./-]*\\{rollout_id\\}[A-Za-z0-9_./-]*$'}},
    },
  ],
} as const
const VERIFIER_FIELDS = {type: 'array', minItems: 1, uniqueItems: true, items: {type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*(?:\\.[A-Za-z_][A-Za-z0-9_]*)*$'}} as const
const TASK_REF = {
  type: 'object',
  additionalProperties: false,
  required: ['file', 'row'],
  // Relative to the Gym root, or `${NAME}/…` in a config root the recipe names.
  properties: {file: {type: 'string', pattern: CONFIG_PATH}, row: {type: 'integer', minimum: 0}},
} as const
const TURNS = {
  type: 'array',
  items: {
    type: 'object',
    additionalProperties: false,
    minProperties: 1,
    maxProperties: 1,
    properties: {
      tool_call: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'arguments'],
        properties: {name: {type: 'string', pattern: NAME}, arguments: {type: 'object'}},
      },
      text: {type: 'string'},
    },
  },
} as const
/** A verifier's outputs may also carry a tool's result as a rollout recorded it: /verify grades it, nothing runs it. */
const VERIFIER_TURNS = {
  ...TURNS,
  items: {...TURNS.items, properties: {...TURNS.items.properties, tool_output: {type: 'string'}}},
} as const
const AGENT = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'type', 'max_steps'],
  properties: {
    name: {type: 'string', pattern: NAME},
    type: {type: 'string', pattern: NAME},
    max_steps: {anyOf: [{type: 'null'}, POSITIVE]},
    placed_via: {type: 'string', pattern: NAME},
  },
} as const
const RESOURCES_SERVER = {
  anyOf: [
    {type: 'null'},
    {
      type: 'object',
      additionalProperties: false,
      required: ['name', 'implementation'],
      properties: {name: {type: 'string', pattern: NAME}, implementation: {type: 'string', pattern: NAME}, placed_via: {type: 'string', pattern: NAME}},
    },
  ],
} as const
const VERIFIER = {
  type: 'object',
  additionalProperties: false,
  required: ['kind', 'python', 'task', 'payload', 'correct', 'wrong', 'success_reward'],
  properties: {
    kind: {enum: ['direct', 'golden', 'pending']},
    pending: {type: 'string', minLength: 1},
    python: {type: 'string', pattern: ABSOLUTE_PATH},
    task: {anyOf: [{type: 'null'}, TASK_REF]},
    payload: {anyOf: [{type: 'null'}, {type: 'object'}]},
    correct: VERIFIER_TURNS,
    wrong: VERIFIER_TURNS,
    wrong_task: {anyOf: [{type: 'null'}, TASK_REF]},
    success_reward: NUMBER,
    // The grader's exact reward for a wrong answer, where it defines one (calendar and
    // workplace give 0.0); null accepts anything below the success reward.
    failure_reward: {anyOf: [{type: 'null'}, NUMBER]},
  },
} as const

const TRIAL = {
  anyOf: [
    {type: 'null'},
    {
      type: 'object',
      additionalProperties: false,
      required: ['task', 'turns', 'expect', 'deadline_s', 'lease_s', 'cleanup_probe'],
      properties: {
        task: TASK_REF,
        turns: TURNS,
        expect: {
          type: 'object',
          additionalProperties: false,
          required: ['status', 'reward', 'tool_calls', 'tool_outputs', 'tool_result_history'],
          properties: {
            status: {enum: ['completed', 'truncated']},
            reward: NUMBER,
            tool_calls: {type: 'integer', minimum: 0},
            tool_outputs: {type: 'integer', minimum: 0},
            tool_result_history: {type: 'array', items: {type: 'integer', minimum: 0}},
          },
        },
        deadline_s: {type: 'number', exclusiveMinimum: 0},
        lease_s: {type: 'number', exclusiveMinimum: 0},
        cleanup_probe: {type: 'boolean'},
      },
    },
  ],
} as const

const ARGS = {type: 'array', items: {type: 'string', minLength: 1, pattern: ONE_LINE}} as const

export const recipeSchema = {
  $id: 'https://gymrecipe.dev/schemas/recipe.json',
  type: 'object',
  additionalProperties: false,
  required: ['schema_version', 'id', 'archetype', 'description', 'gym', 'data', 'service', 'ray', 'gateway', 'verifier', 'trial', 'training'],
  properties: {
    schema_version: {const: 1},
    id: {type: 'string', pattern: RECIPE_ID_PATTERN, maxLength: 48},
    archetype: {enum: ['simple-agent', 'stateful-tools', 'sandbox']},
    description: {type: 'string', maxLength: 400, pattern: ONE_LINE},
    gym: {
      type: 'object',
      additionalProperties: false,
      required: ['commit', 'config_paths', 'environment', 'gateway_config', 'agent', 'resources_server', 'venv_dirs'],
      properties: {
        commit: {type: 'string', pattern: '^[0-9a-f]{40}$'},
        config_paths: {type: 'array', minItems: 1, items: {type: 'string', pattern: CONFIG_PATH}},
        config_roots: {type: 'array', items: {type: 'string', pattern: '^[A-Z][A-Z0-9_]{0,63}$'}, uniqueItems: true},
        env_vars: {
          type: 'array',
          items: {type: 'object', additionalProperties: false, required: ['name', 'required'], properties: {name: {type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]{0,127}$'}, required: {type: 'boolean'}}},
        },
        environment: {type: 'string', pattern: NAME},
        gateway_config: {type: 'string', pattern: NAME},
        agent: AGENT,
        resources_server: RESOURCES_SERVER,
        venv_dirs: {type: 'array', items: {type: 'string', pattern: RELATIVE_PATH}},
        models: {
          type: 'array',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['role', 'owner', 'key', 'server', 'policy', 'enabled'],
            properties: {
              role: {enum: ['judge', 'simulator', 'model']},
              owner: {type: 'string', pattern: NAME},
              key: {type: 'string', pattern: '^[A-Za-z0-9_.-]{1,200}$'},
              server: {anyOf: [{type: 'null'}, {type: 'string', pattern: NAME}]},
              policy: {type: 'boolean'},
              enabled: {type: 'boolean'},
            },
          },
        },
        additional_environments: {
          type: 'array',
          minItems: 1,
          maxItems: 3,
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['environment', 'gateway_config', 'agent', 'resources_server', 'max_concurrency', 'queue_capacity', 'max_deadline_s', 'readiness', 'cleanup', 'verifier_fields'],
            properties: {
              environment: {type: 'string', pattern: NAME},
              gateway_config: {type: 'string', pattern: NAME},
              agent: AGENT,
              resources_server: RESOURCES_SERVER,
              max_concurrency: POSITIVE,
              queue_capacity: {type: 'integer', minimum: 0},
              max_deadline_s: {type: 'number', exclusiveMinimum: 0},
              readiness: READINESS,
              cleanup: CLEANUP,
              verifier_fields: VERIFIER_FIELDS,
              verifier: VERIFIER,
              trial: TRIAL,
            },
          },
        },
        model_servers: {
          type: 'array',
          maxItems: 4,
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['name', 'type', 'role', 'env_prefix', 'fields', 'binds'],
            properties: {
              name: {type: 'string', pattern: '^[A-Za-z][A-Za-z0-9_-]{0,63}$'},
              type: {type: 'string', pattern: NAME},
              role: {enum: ['judge', 'simulator', 'model']},
              env_prefix: {type: 'string', pattern: '^[A-Z][A-Z0-9_]{0,63}$'},
              fields: {
                type: 'object',
                propertyNames: {pattern: '^[A-Za-z_][A-Za-z0-9_]{0,63}$'},
                additionalProperties: {
                  anyOf: [
                    {type: 'string', maxLength: 1000, pattern: ONE_LINE},
                    {type: 'number'},
                    {type: 'boolean'},
                    {type: 'null'},
                    {type: 'object', maxProperties: 0},
                    {type: 'array', maxItems: 0},
                  ],
                },
              },
              binds: {type: 'array', items: {type: 'string', pattern: '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,300}\\.name$'}},
            },
          },
        },
        endpoints: {
          type: 'array',
          maxItems: 4,
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['role', 'owner', 'env_prefix', 'overrides'],
            properties: {
              role: {enum: ['judge', 'simulator', 'model']},
              owner: {type: 'string', pattern: '^[A-Za-z][A-Za-z0-9_-]{0,63}$'},
              env_prefix: {type: 'string', pattern: '^[A-Z][A-Z0-9_]{0,63}$'},
              overrides: {
                type: 'object',
                minProperties: 1,
                maxProperties: 8,
                propertyNames: {pattern: '^[A-Za-z][A-Za-z0-9_-]{0,63}\\.(resources_servers|responses_api_agents)\\.[A-Za-z0-9_]+(\\.[A-Za-z_][A-Za-z0-9_]{0,63})+$'},
                additionalProperties: {type: 'string', maxLength: 1000, pattern: '^[^\\n\\r]*\\$\\{oc\\.env:[A-Z][A-Z0-9_]*(,[^}\\n\\r]*)?\\}[^\\n\\r]*$'},
              },
            },
          },
        },
        unset_values: {
          type: 'array',
          maxItems: 32,
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['path'],
            oneOf: [
              {required: ['env'], properties: {env: {type: 'string'}}},
              {required: ['value'], properties: {value: {type: 'string'}}},
            ],
            properties: {
              // A field of a server (instance.kind.implementation.field…) or a key of its own that a reference names.
              path: {type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_-]{0,63}(\\.[A-Za-z0-9_][A-Za-z0-9_-]{0,63}){0,15}$'},
              env: {type: 'string', pattern: '^[A-Z][A-Z0-9_]{0,63}$'},
              value: {type: 'string', pattern: '^[A-Za-z][A-Za-z0-9_-]{0,63}$'},
            },
          },
        },
        behaviour: {
          type: 'object',
          additionalProperties: false,
          required: ['include_order', 'waits_for_model_endpoints', 'guards_openai_version'],
          properties: {
            include_order: {enum: ['discovery', 'reverse-discovery', 'depth', 'post-order']},
            waits_for_model_endpoints: {type: 'boolean'},
            guards_openai_version: {type: 'boolean'},
          },
        },
      },
    },
    data: {
      type: 'object',
      additionalProperties: false,
      required: ['dataset', 'split', 'source', 'raw_filename', 'verifier_fields', 'tools', 'strip_agent_ref', 'smoke'],
      properties: {
        dataset: {type: 'string', pattern: NAME},
        split: {enum: ['train', 'validation', 'example', 'benchmark', 'test']},
        source: {
          oneOf: [
            ...GYM_DATA_SOURCES,
            {
              type: 'object',
              additionalProperties: false,
              required: ['type', 'path'],
              properties: {type: {const: 'file'}, path: {type: 'string', pattern: ABSOLUTE_PATH}},
            },
            {
              type: 'object',
              additionalProperties: false,
              required: ['type', 'seed', 'parts'],
              properties: {type: {const: 'mix'}, seed: {type: 'integer', minimum: 0, maximum: 4294967295}, parts: {type: 'array', minItems: 2, items: MIX_PART}},
            },
          ],
        },
        raw_filename: {type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*\\.jsonl$'},
        verifier_fields: VERIFIER_FIELDS,
        tools: {type: 'boolean'},
        strip_agent_ref: {type: 'boolean'},
        smoke: {type: 'boolean'},
      },
    },
    service: {
      type: 'object',
      additionalProperties: false,
      required: ['image', 'container', 'gateway_port', 'shm_size', 'privileged', 'cap_add', 'security_opt', 'start_timeout_s', 'callback_networks', 'callback_hosts'],
      properties: {
        image: {type: 'string', pattern: IMAGE},
        container: {type: 'string', pattern: '^[a-zA-Z0-9][a-zA-Z0-9_.-]*$'},
        gateway_port: PORT,
        shm_size: {type: 'string', pattern: '^[0-9]+[bkmg]?$'},
        privileged: {type: 'boolean'},
        cap_add: {type: 'array', items: {type: 'string', pattern: '^[A-Z_]+$'}},
        security_opt: {type: 'array', items: {type: 'string', pattern: '^[a-z_-]+(?:[=:][A-Za-z0-9_./-]+)?$'}},
        start_timeout_s: POSITIVE,
        callback_networks: {type: 'array', items: {type: 'string', pattern: '^[0-9A-Fa-f:.]+/[0-9]{1,3}$'}},
        callback_hosts: {type: 'array', items: {type: 'string', pattern: '^[a-z0-9][a-z0-9.-]*$'}},
        // A request the pinned Gym answers with an HTTP 500 (never a 422 validation error), so
        // the service rung can see where a 500's traceback goes.
        error_probe: {
          type: 'object',
          additionalProperties: false,
          required: ['server', 'path', 'content_type', 'body'],
          properties: {
            server: {enum: ['resource', 'agent']},
            path: {type: 'string', pattern: '^/[A-Za-z0-9_./-]*$'},
            content_type: {type: 'string', pattern: '^[a-z]+/[a-z0-9.+-]+$'},
            body: {type: 'string'},
          },
        },
      },
    },
    ray: {
      type: 'object',
      additionalProperties: false,
      required: ['gcs_port', 'dashboard_port', 'num_cpus', 'component_port_base', 'min_worker_port', 'max_worker_port'],
      properties: {gcs_port: PORT, dashboard_port: PORT, num_cpus: POSITIVE, component_port_base: PORT, min_worker_port: PORT, max_worker_port: PORT},
    },
    gateway: {
      type: 'object',
      additionalProperties: false,
      required: ['interrupt_policy', 'max_concurrency', 'queue_capacity', 'max_deadline_s', 'deadline_s', 'lease_s', 'callback_protocol', 'readiness', 'cleanup'],
      properties: {
        interrupt_policy: {enum: ['protected', 'interruptible', 'resumable']},
        max_concurrency: POSITIVE,
        queue_capacity: {type: 'integer', minimum: 0},
        max_deadline_s: {type: 'number', exclusiveMinimum: 0},
        deadline_s: {type: 'number', exclusiveMinimum: 0},
        lease_s: {type: 'number', exclusiveMinimum: 0},
        callback_protocol: {enum: ['responses', 'chat_completions', 'messages']},
        readiness: READINESS,
        cleanup: CLEANUP,
      },
    },
    verifier: VERIFIER,
    trial: TRIAL,
    training: {
      type: 'object',
      additionalProperties: false,
      required: ['model', 'gpus', 'parsers', 'agent_timeout_s', 'rollout', 'perf', 'grpo', 'optimizer', 'sglang', 'save_interval', 'extra_args', 'project_name', 'exp_name'],
      properties: {
        model: {
          type: 'object',
          additionalProperties: false,
          required: ['name', 'slug', 'config_script'],
          properties: {
            name: {type: 'string', pattern: NAME},
            slug: {type: 'string', pattern: NAME},
            config_script: {type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*\\.sh$'},
          },
        },
        gpus: {type: 'integer', minimum: 1, maximum: 1024},
        parsers: {
          type: 'object',
          additionalProperties: false,
          required: ['reasoning', 'tool_call'],
          properties: {reasoning: {anyOf: [{type: 'null'}, {type: 'string', pattern: NAME}]}, tool_call: {type: 'string', pattern: NAME}},
        },
        agent_timeout_s: {type: 'number', exclusiveMinimum: 0},
        rollout: {
          type: 'object',
          additionalProperties: false,
          required: ['num_rollout', 'batch_size', 'n_samples_per_prompt', 'max_prompt_len', 'max_response_len', 'max_context_len', 'temperature', 'global_batch_size'],
          properties: {
            num_rollout: POSITIVE,
            batch_size: POSITIVE,
            n_samples_per_prompt: POSITIVE,
            max_prompt_len: POSITIVE,
            max_response_len: POSITIVE,
            max_context_len: POSITIVE,
            temperature: {type: 'number', minimum: 0},
            global_batch_size: POSITIVE,
          },
        },
        perf: {
          type: 'object',
          additionalProperties: false,
          required: ['tensor_parallel', 'sequence_parallel', 'pipeline_parallel', 'context_parallel', 'expert_parallel', 'expert_tensor_parallel', 'micro_batch_size', 'max_tokens_per_gpu', 'log_probs_max_tokens_per_gpu', 'log_probs_chunk_size'],
          properties: {
            tensor_parallel: POSITIVE,
            sequence_parallel: {type: 'boolean'},
            pipeline_parallel: POSITIVE,
            context_parallel: POSITIVE,
            expert_parallel: POSITIVE,
            expert_tensor_parallel: POSITIVE,
            // null leaves the flag out: Relax then uses its own default (see the r2e-gym recipe).
            micro_batch_size: OPTIONAL_POSITIVE,
            max_tokens_per_gpu: POSITIVE,
            log_probs_max_tokens_per_gpu: OPTIONAL_POSITIVE,
            log_probs_chunk_size: POSITIVE,
          },
        },
        grpo: {
          type: 'object',
          additionalProperties: false,
          required: ['kl_loss_coef', 'entropy_coef', 'eps_clip', 'eps_clip_high', 'use_tis'],
          properties: {kl_loss_coef: NUMBER, entropy_coef: NUMBER, eps_clip: NUMBER, eps_clip_high: NUMBER, use_tis: {type: 'boolean'}},
        },
        optimizer: {
          type: 'object',
          additionalProperties: false,
          required: ['lr', 'weight_decay', 'adam_beta1', 'adam_beta2'],
          properties: {lr: {type: 'number', exclusiveMinimum: 0}, weight_decay: NUMBER, adam_beta1: NUMBER, adam_beta2: NUMBER},
        },
        sglang: {
          type: 'object',
          additionalProperties: false,
          required: ['num_gpus_per_engine', 'mem_fraction_static', 'cuda_graph_max_bs', 'router_policy'],
          properties: {
            num_gpus_per_engine: POSITIVE,
            mem_fraction_static: {type: 'number', exclusiveMinimum: 0, maximum: 1},
            cuda_graph_max_bs: OPTIONAL_POSITIVE,
            router_policy: {anyOf: [{type: 'null'}, {type: 'string', pattern: NAME}]},
            router_disable_circuit_breaker: {type: 'boolean'},
          },
        },
        schedule: {
          type: 'object',
          additionalProperties: false,
          required: ['mode', 'actor_gpus', 'rollout_gpus', 'max_staleness', 'num_iters_per_train_update', 'num_data_storage_units', 'use_health_check'],
          properties: {
            mode: {enum: ['colocate', 'hybrid']},
            actor_gpus: {type: 'integer', minimum: 1, maximum: 1024},
            rollout_gpus: {type: 'integer', minimum: 1, maximum: 1024},
            max_staleness: {type: 'integer', minimum: 0, maximum: 1000},
            num_iters_per_train_update: OPTIONAL_POSITIVE,
            num_data_storage_units: POSITIVE,
            use_health_check: {type: 'boolean'},
          },
        },
        save_interval: POSITIVE,
        extra_args: {
          type: 'object',
          additionalProperties: false,
          required: ['rollout', 'perf', 'grpo', 'optimizer', 'misc'],
          properties: {rollout: ARGS, perf: ARGS, grpo: ARGS, optimizer: ARGS, misc: ARGS},
        },
        project_name: {type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_./-]*$'},
        exp_name: {type: 'string', pattern: NAME},
      },
    },
    files: {
      description: 'Names of the recipe files where they differ from the generated ones (an adopted hand-written recipe).',
      type: 'object',
      additionalProperties: false,
      properties: Object.fromEntries(['env', 'prepare', 'start', 'run', 'verify', 'readme', 'pitfall'].map((role) => [role, {type: 'string', pattern: FILE_NAME}])) as Record<'env' | 'prepare' | 'start' | 'run' | 'verify' | 'readme' | 'pitfall', {type: 'string'; pattern: typeof FILE_NAME}>,
    },
    generated: {
      type: 'object',
      additionalProperties: false,
      required: ['gymrecipe_version', 'files'],
      properties: {
        gymrecipe_version: {type: 'string'},
        from: {type: 'string', pattern: NAME},
        files: {type: 'object', additionalProperties: {type: 'string', pattern: '^sha256:[0-9a-f]{64}$'}},
      },
    },
  },
} as const
