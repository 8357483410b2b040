import type {AdditionalEnvironment, RecipeContract, ScriptedTurn} from '../contract/types.js'
import {describeMix, environmentPorts, environmentsOf, modelServerPorts, recipeFileNames, RECIPES_DIR, servicePorts, trainingSchedule} from '../contract/types.js'
import {RAY_COMPONENT_PORTS} from '../contract/ports.js'
import {placedAs} from '../contract/placement.js'
import {endpointOverrides, endpointVariables, hydraValue, modelServerOverrides} from '../contract/gym-config/model-servers.js'
import {trainingLogName} from '../contract/endpoints.js'
import {configRootName} from '../contract/gym-config/paths.js'
import {isSecretName} from '../redact.js'

/** Formats a number the way the proven scripts spell it: 1e-06 as 1e-6, 0.7 as 0.7. */
export function formatNumber(n: number): string {
  if (n !== 0 && Math.abs(n) < 1e-3) return n.toExponential().replace('e-', 'e-').replace(/\.0+e/, 'e')
  return String(n)
}

/** The instances whose host and port the start line sets: an inherited one is placed through its source. */
function placement(e: AdditionalEnvironment) {
  return {
    agentPlacedAs: placedAs(e.agent),
    resourcePlacedAs: e.resources_server ? placedAs(e.resources_server) : undefined,
    placedThroughSource: [e.agent, ...(e.resources_server ? [e.resources_server] : [])].flatMap((s) => (s.placed_via ? [{name: s.name, source: s.placed_via}] : [])),
  }
}

function underscored(id: string): string {
  return id.replaceAll('-', '_')
}

/** Responses output items for scripted turns, as the verifier sends them to /verify. */
export function turnsToOutputItems(turns: ScriptedTurn[]): Record<string, unknown>[] {
  let lastCall = -1
  return turns.map((turn, index) => {
    // A recorded tool result answers the call before it.
    if (turn.tool_output !== undefined) return {type: 'function_call_output', call_id: `call_${lastCall}`, output: turn.tool_output}
    if (turn.tool_call) {
      lastCall = index
      return {
        type: 'function_call',
        id: `fc_${index}`,
        call_id: `call_${index}`,
        name: turn.tool_call.name,
        arguments: JSON.stringify(turn.tool_call.arguments),
        status: 'completed',
      }
    }
    return {
      type: 'message',
      id: `msg_${index}`,
      role: 'assistant',
      status: 'completed',
      content: [{type: 'output_text', text: turn.text ?? '', annotations: []}],
    }
  })
}

/** Values of this deployment the files start from (env.sh defaults), never recorded in recipe.yaml. */
export interface RenderDeployment {
  /** Directory of each config root the contract names. */
  configRootDirs?: Record<string, string>
}

/**
 * Everything the templates need, computed once. Templates only place values;
 * all derivation (ports, file names, argument arrays) happens here.
 */
export function buildView(contract: RecipeContract, deployment: RenderDeployment = {}) {
  const files = recipeFileNames(contract)
  const ports = servicePorts(contract)
  const c = contract
  const gymRoot = '/opt/nemo-gym'
  const resource = c.gym.resources_server
  const allConfigPaths = ['responses_api_models/relax_gateway_model/configs/relax_gateway_model.yaml', ...c.gym.config_paths]
  const rayComponentFlags = RAY_COMPONENT_PORTS.map((flag, i) => ({flag, port: c.ray.component_port_base + i}))
  const num = formatNumber

  const allEnvironments = environmentsOf(c)
  const multiEnvironment = allEnvironments.length > 1
  const headOffset = ports.head - ports.gateway
  const placed = environmentPorts(c)
  const environments = allEnvironments.map((e, i) => ({
    ...e,
    hasResource: e.resources_server !== null,
    ...placement(e),
    agentOffset: placed[i].agent - ports.gateway,
    resourceOffset: placed[i].resource - ports.gateway,
    portVar: i === 0 ? '' : `env${i + 1}_`,
    portLabel: multiEnvironment ? `${e.environment} ` : '',
    // The Gateway waits on these before it reports ready: agent first, then the resources server.
    readiness: (['agent', 'resource'] as const).filter((server) => e.readiness.includes(server)),
    maxDeadline: num(e.max_deadline_s),
  }))

  const cleanupUrl = c.gateway.cleanup
    ? `http://{host}:${c.gateway.cleanup.server === 'agent' ? 'agent' : 'resource'}{cleanup}`
    : null

  return {
    ...dataView(c, allEnvironments),
    ...trainingView(c, multiEnvironment),
    ...verifierView(c, allEnvironments, gymRoot),
    c,
    id: c.id,
    idUnderscored: underscored(c.id),
    idUpperSnake: underscored(c.id).toUpperCase(),
    title: c.id,
    files,
    recipeDirInRepo: `${RECIPES_DIR}/${c.id}`,
    recipeDirInImage: `/opt/relax-integration/${RECIPES_DIR}/${c.id}`,
    gymRoot,
    ports,
    archetype: {
      simple: c.archetype === 'simple-agent',
      stateful: c.archetype === 'stateful-tools',
      sandbox: c.archetype === 'sandbox',
      name: c.archetype,
    },
    hasResource: resource !== null,
    resource,
    agent: c.gym.agent,
    configPathsList: allConfigPaths.join(','),
    gymConfigPaths: c.gym.config_paths,
    rayComponentFlags,
    // The Gateway waits on these before it reports ready: agent first, then the resources server.
    readiness: (['agent', 'resource'] as const).filter((server) => c.gateway.readiness.includes(server)),
    cleanup: c.gateway.cleanup,
    cleanupUrl,
    callbackNetworks: c.service.callback_networks.join(','),
    callbackHosts: c.service.callback_hosts.join(','),
    configRoots: (c.gym.config_roots ?? []).map((name) => ({name, dir: deployment.configRootDirs?.[name] ?? ''})),
    envVars: (c.gym.env_vars ?? []).map((v) => ({...v, ocEnv: `\${oc.env:${v.name}}`, secret: isSecretName(v.name), unsetPath: c.gym.unset_values?.find((u) => 'env' in u && u.env === v.name)?.path})),
    environments,
    multiEnvironment,
    routesJson: JSON.stringify(Object.fromEntries(allEnvironments.map((e) => [`${e.environment}/${e.gateway_config}`, e.verifier_fields]))),
    headOffset,
    ...startLineVariables(c, ports.gateway),
    requiredEnvVars: (c.gym.env_vars ?? []).filter((v) => v.required).map((v) => v.name),
    extraRootsList: (c.gym.config_roots ?? []).map((name) => `\${${name}}`).join(':'),
    sourceDescription: describeSource(c),
    verifierFields: c.data.verifier_fields,
    deadline: num(c.gateway.deadline_s),
    lease: num(c.gateway.lease_s),
    maxDeadline: num(c.gateway.max_deadline_s),
  }
}


/** The data source as the prepare script needs it: file, Gym dataset, or a mix of each environment's own. */
function dataView(c: RecipeContract, allEnvironments: ReturnType<typeof environmentsOf>) {
  return {
    rawFilename: c.data.raw_filename,
    relaxFilename: c.data.raw_filename.replace(/\.jsonl$/, '_relax.jsonl'),
    source: c.data.source,
    sourceIsFile: c.data.source.type === 'file',
    sourceIsMix: c.data.source.type === 'mix',
    sourceIsGym: c.data.source.type !== 'mix' && c.data.source.type !== 'file',
    // Each part is fetched beside the temporary raw file (removed with it), then stamped, filtered, capped and shuffled into it.
    mixParts: c.data.source.type === 'mix' ? c.data.source.parts.map((part, i) => ({...part, output: `\${tmp_raw}.part${i}`})) : [],
    mixJson: c.data.source.type === 'mix' ? JSON.stringify({seed: c.data.source.seed, parts: c.data.source.parts.map((part) => ({environment: part.environment, config: part.gateway_config, cap: part.cap, fields: allEnvironments.find((e) => e.environment === part.environment && e.gateway_config === part.gateway_config)?.verifier_fields ?? []}))}) : '',
  }
}

/** The training script's values: rollout, the agent's environment, the argument arrays and the GPU layout. */
function trainingView(c: RecipeContract, multiEnvironment: boolean) {
  const t = c.training
  const r = t.rollout
  const p = t.perf
  const schedule = trainingSchedule(t)
  const num = formatNumber
  const rolloutArgs: string[][] = [
    ['--prompt-data', '${PROMPT_SET}'],
    ['--input-key', 'input'],
    ['--metadata-key', 'metadata'],
    ['--rollout-shuffle'],
    ['--use-agentic-rollout'],
  ]
  const rollout = {
    agentTimeout: num(t.agent_timeout_s),
    numRollout: r.num_rollout,
    batchSize: r.batch_size,
    nSamples: r.n_samples_per_prompt,
    maxPrompt: r.max_prompt_len,
    maxResponse: r.max_response_len,
    maxContext: r.max_context_len,
    temperature: num(r.temperature),
    globalBatch: r.global_batch_size,
  }

  // Several environments: each row names its own (metadata.environment/config), so none is fixed here.
  const agentEnv = [
    'NEMO_GYM_URL=${GATEWAY_URL}',
    ...(multiEnvironment ? [] : [`NEMO_GYM_ENVIRONMENT=${c.gym.environment}`, `NEMO_GYM_CONFIG=${c.gym.gateway_config}`]),
    'NEMO_GYM_MODEL=model',
    `NEMO_GYM_INTERRUPT_POLICY=${c.gateway.interrupt_policy}`,
    `NEMO_GYM_DEADLINE_S=${num(c.gateway.deadline_s)}`,
    `NEMO_GYM_LEASE_S=${num(c.gateway.lease_s)}`,
  ]

  return {
    rollout,
    rolloutFixedArgs: rolloutArgs,
    agentEnv,
    perf: p,
    grpo: {...t.grpo, kl: num(t.grpo.kl_loss_coef), entropy: num(t.grpo.entropy_coef), epsClip: num(t.grpo.eps_clip), epsClipHigh: num(t.grpo.eps_clip_high)},
    optimizer: {lr: num(t.optimizer.lr), weightDecay: num(t.optimizer.weight_decay), beta1: num(t.optimizer.adam_beta1), beta2: num(t.optimizer.adam_beta2)},
    sglang: {...t.sglang, memFraction: num(t.sglang.mem_fraction_static)},
    resourceJson: JSON.stringify({actor: [1, schedule.actor_gpus], rollout: [1, schedule.rollout_gpus]}),
    schedule: {...schedule, hybrid: schedule.mode === 'hybrid'},
    logName: trainingLogName(c),
    submissionPrefix: `relax-nemo-gym-${c.id}`,
  }
}

/** The verify script's examples, the recipe's and each further environment's. */
function verifierView(c: RecipeContract, allEnvironments: ReturnType<typeof environmentsOf>, gymRoot: string) {
  const num = formatNumber
  return {
    verifierPayload: c.verifier.payload,
    verifierCorrect: turnsToOutputItems(c.verifier.correct),
    verifierWrong: turnsToOutputItems(c.verifier.wrong),
    verifierTaskPath: c.verifier.task ? inImage(gymRoot, c.verifier.task.file) : null,
    verifierWrongTask: c.verifier.wrong_task ? {path: inImage(gymRoot, c.verifier.wrong_task.file), row: c.verifier.wrong_task.row, sameFile: c.verifier.task?.file === c.verifier.wrong_task.file} : null,
    verifierGolden: c.verifier.kind === 'golden',
    verifierPending: c.verifier.kind === 'pending' ? (c.verifier.pending ?? 'no example is recorded') : undefined,
    // Further environments' direct verifiers, run by the same script with --environment NAME.
    moreVerifiers: c.verifier.kind === 'golden' ? [] : allEnvironments.slice(1).flatMap((e) => {
      const v = e.verifier
      if (!v || v.kind !== 'direct') return []
      return [{
        environment: e.environment,
        spec: {
          success_reward: v.success_reward,
          failure_reward: v.failure_reward ?? null,
          task_jsonl: v.task ? inImage(gymRoot, v.task.file) : null,
          task_row: v.task?.row ?? 0,
          wrong_task_jsonl: v.wrong_task && v.wrong_task.file !== v.task?.file ? inImage(gymRoot, v.wrong_task.file) : null,
          wrong_task_row: v.wrong_task?.row ?? null,
          inline_payload: v.payload,
          correct_output: turnsToOutputItems(v.correct),
          wrong_output: turnsToOutputItems(v.wrong),
        },
      }]
    }),
    successReward: num(c.verifier.success_reward),
    failureReward: c.verifier.failure_reward === undefined || c.verifier.failure_reward === null ? null : num(c.verifier.failure_reward),
  }
}

/**
 * A data file's path inside the Gym container: under the Gym checkout, or `${NAME}/…` under a config
 * root, which the start script mounts at the same absolute path and passes as NAME (the verify
 * script expands it there).
 */
function inImage(gymRoot: string, file: string): string {
  return configRootName(file) !== undefined ? file : `${gymRoot}/${file}`
}

function describeSource(c: RecipeContract): string {
  const s = c.data.source
  switch (s.type) {
    case 'huggingface':
      return `HuggingFace ${s.repo_id} (${s.artifact})`
    case 'gitlab':
      return `GitLab dataset ${s.dataset_name} ${s.version} (${s.artifact})`
    case 'bundled':
      return `the file ${s.path} shipped in the pinned Gym checkout`
    case 'benchmark':
      return `gym eval prepare --benchmark ${s.benchmark} (${s.path})`
    case 'file':
      return 'the task file named by NEMO_GYM_TASK_DATA (your own data)'
    case 'mix':
      return `each environment's own dataset, mixed: ${describeMix(s)}, shuffled with seed ${s.seed}`
  }
}

export type RecipeView = ReturnType<typeof buildView>

/**
 * What the start line sets from deployment variables: added model servers (each on its port of the
 * service block), endpoint fields of judges moved off the policy, and values the config leaves ???.
 */
function startLineVariables(c: RecipeContract, gatewayPort: number) {
  const servers = c.gym.model_servers ?? []
  const endpoints = c.gym.endpoints ?? []
  const unset = c.gym.unset_values ?? []
  return {
    modelServers: servers.map((server, i) => ({...server, offset: modelServerPorts(c)[i].port - gatewayPort, overrides: modelServerOverrides(server), vars: endpointVariables(server.env_prefix)})),
    endpoints: endpoints.map((endpoint) => ({...endpoint, label: `${endpoint.owner}.${endpoint.role}`, overrides: endpointOverrides(endpoint), vars: endpointVariables(endpoint.env_prefix)})),
    probesSecondModels: servers.length + endpoints.length > 0,
    unsetValues: unset.map((u) => ({...u, override: `++${u.path}=${hydraValue('env' in u ? `\${oc.env:${u.env}}` : u.value)}`})),
    unsetValueVars: unset.flatMap((u) => ('env' in u ? [u.env] : [])),
    readsEnvOnStartLine: servers.length + endpoints.length + unset.length > 0,
  }
}
