import {configRootName} from './gym-config/paths.js'
import {checkOwnPorts} from './ports.js'
import type {RecipeContract} from './types.js'
import {environmentsOf, trainingSchedule} from './types.js'

type Add = (pointer: string, message: string, expected: string, hint: string) => void

export interface Invariant {
  pointer: string
  message: string
  expected: string
  hint: string
}

/**
 * Rules the JSON Schema cannot express: cross-field budgets, the split guard,
 * archetype requirements and the port layout. Each names the field to fix.
 */
export function checkContractInvariants(c: RecipeContract): Invariant[] {
  const out: Invariant[] = []
  const add: Add = (pointer, message, expected, hint) => out.push({pointer, message, expected, hint})
  for (const rules of [serviceAndTiming, trainingBudgets, dataRules, archetypeRules, verifierRules, scheduleRules]) rules(c, add)
  return out
}

/** The port layout, the callback allowlist, and the Gateway's timing against Relax's agent timeout. */
function serviceAndTiming(c: RecipeContract, add: Add): void {
  for (const v of checkOwnPorts(c)) {
    add(v.pointer, v.message, 'ports outside 32768-60999 that do not overlap', 'Let `gymrecipe new` pick a free block, or choose a base such as 29400.')
  }

  c.service.callback_networks.forEach((network, i) => {
    if (/\/0+$/.test(network)) add(`/service/callback_networks/${i}`, `callback network ${network} allows every address`, 'a strict CIDR that contains the Relax callback IP', 'Use the Relax nodes\' own network, e.g. 10.0.0.0/8; the Gateway refuses /0 anyway.')
  })

  const g = c.gateway
  if (g.deadline_s > g.max_deadline_s) {
    add('/gateway/deadline_s', `trial deadline ${g.deadline_s}s exceeds the Gateway max_deadline_s ${g.max_deadline_s}s`, `deadline_s <= ${g.max_deadline_s}`, 'The Gateway answers 400 "deadline_s exceeds the registered environment maximum".')
  }
  if (c.training.agent_timeout_s <= g.deadline_s) {
    add('/training/agent_timeout_s', `--agent-timeout ${c.training.agent_timeout_s}s must exceed the trial deadline ${g.deadline_s}s`, `agent_timeout_s > ${g.deadline_s} (usually deadline + 60)`, 'Otherwise Relax kills the agent before the Gateway can report the trial.')
  }
  if (g.lease_s >= g.deadline_s) {
    add('/gateway/lease_s', `lease ${g.lease_s}s is not shorter than the deadline ${g.deadline_s}s`, 'lease_s < deadline_s', 'The lease is renewed every lease/3 seconds; it should be much shorter than the deadline.')
  }
}

/** Token budgets and batch sizes Relax and GRPO need. */
function trainingBudgets(c: RecipeContract, add: Add): void {
  const r = c.training.rollout
  if (r.max_prompt_len >= r.max_context_len) {
    add('/training/rollout/max_prompt_len', `prompt budget ${r.max_prompt_len} is not below the context ${r.max_context_len}`, 'max_prompt_len < max_context_len', 'Leave room to generate: keep prompt < context.')
  }
  if (r.max_response_len > r.max_context_len) {
    add('/training/rollout/max_response_len', `response budget ${r.max_response_len} exceeds the context ${r.max_context_len}`, 'max_response_len <= max_context_len', 'Keep response <= context.')
  }
  const perf = c.training.perf
  if (perf.max_tokens_per_gpu * perf.context_parallel < r.max_context_len) {
    add('/training/perf/max_tokens_per_gpu', `max_tokens_per_gpu ${perf.max_tokens_per_gpu} x context_parallel ${perf.context_parallel} is below the context ${r.max_context_len}`, 'max_tokens_per_gpu x context_parallel >= max_context_len', 'Relax refuses to start otherwise: one full sample must fit across the context-parallel group.')
  }
  if (perf.context_parallel > 1 && !c.training.extra_args.perf.includes('--calculate-per-token-loss')) {
    add('/training/extra_args/perf', `context_parallel ${perf.context_parallel} needs --calculate-per-token-loss`, '--calculate-per-token-loss among extra_args.perf', 'Relax (Megatron validate_args) refuses context parallelism without per-token loss.')
  }
  if (r.n_samples_per_prompt < 4) {
    add('/training/rollout/n_samples_per_prompt', `n_samples_per_prompt ${r.n_samples_per_prompt} gives GRPO too little group variance`, 'n_samples_per_prompt >= 4', 'With one sample per prompt the advantage is zero and nothing is learned.')
  }
  if ((r.batch_size * r.n_samples_per_prompt) % r.global_batch_size !== 0) {
    add('/training/rollout/global_batch_size', `rollout batch ${r.batch_size} x ${r.n_samples_per_prompt} samples is not a multiple of global_batch_size ${r.global_batch_size}`, 'batch_size * n_samples_per_prompt divisible by global_batch_size', 'Relax computes whole optimizer steps per rollout.')
  }
}

/** The split guard, the raw file, and a mix that gives every environment its rows. */
function dataRules(c: RecipeContract, add: Add): void {
  if (c.data.split !== 'train' && !c.data.smoke) {
    add('/data/split', `split "${c.data.split}" is not a training split`, 'split: train (or smoke: true for a deliberate smoke run)', 'Training on validation, example, benchmark or test data contaminates evaluation. Set data.smoke: true only for a smoke run.')
  }
  if (c.data.raw_filename.endsWith('_relax.jsonl')) {
    add('/data/raw_filename', `raw_filename "${c.data.raw_filename}" names the converted preview, not the raw Gym data`, 'a raw Gym JSONL name such as <recipe>_train.jsonl', 'The job converts the raw file itself; a converted file loses verifier fields.')
  }
  if (c.data.source.type === 'mix') {
    // Every environment of the recipe takes exactly one part: a part nothing routes to would be dropped by the Gateway, an environment with none never trains.
    const environments = environmentsOf(c)
    const routes = new Set(environments.map((e) => `${e.environment}/${e.gateway_config}`))
    const seen = new Set<string>()
    c.data.source.parts.forEach((part, i) => {
      const route = `${part.environment}/${part.gateway_config}`
      if (!routes.has(route)) add(`/data/source/parts/${i}`, `mix part ${route} is not an environment of this recipe`, `one of ${[...routes].join(', ')}`, 'Each part stamps its rows with an environment/config the Gateway registers; rows of any other are refused.')
      else if (seen.has(route)) add(`/data/source/parts/${i}`, `mix part ${route} appears twice`, 'one part per environment', 'Give each environment one dataset; raise its cap for more rows.')
      seen.add(route)
      if (part.split !== 'train' && !c.data.smoke) add(`/data/source/parts/${i}/split`, `mix part ${part.environment} uses the ${part.split} split`, 'split: train (or data.smoke: true)', 'Training on validation, example, benchmark or test data contaminates evaluation.')
    })
    const missing = [...routes].filter((route) => !seen.has(route))
    if (missing.length > 0) add('/data/source/parts', `the mix gives no rows to ${missing.join(', ')}`, 'a part for every environment of the recipe', 'An environment without rows is registered and started but never trained.')
  } else if (c.data.source.type !== 'file' && (c.gym.additional_environments?.length ?? 0) > 0) {
    add('/data/source', `a recipe of ${1 + (c.gym.additional_environments?.length ?? 0)} environments reads one ${c.data.source.type} dataset, whose rows carry no environment of their own`, 'type: mix (one part per environment) or type: file (rows stamped with environment and config)', 'Run `gymrecipe new <id> --update` to record a mix of each environment\'s own dataset.')
  }
  if (!c.data.verifier_fields.includes('responses_create_params.input')) {
    add('/data/verifier_fields', 'verifier_fields must include responses_create_params.input', 'responses_create_params.input among the fields', 'Every Gym row needs its prompt.')
  }
}

/** What the archetype needs of the Gateway and the trial. */
function archetypeRules(c: RecipeContract, add: Add): void {
  const g = c.gateway
  if (c.gym.resources_server === null && g.readiness.includes('resource')) {
    add('/gateway/readiness', 'readiness lists "resource" but the recipe has no resources server', 'readiness: [agent]', 'Sandbox agents without a resources server are checked through the agent only.')
  }
  if (g.cleanup?.server === 'resource' && c.gym.resources_server === null) {
    add('/gateway/cleanup/server', 'cleanup targets the resources server, which this recipe does not have', 'server: agent', 'Point cleanup at the server that owns the per-rollout state.')
  }
  if (c.archetype === 'stateful-tools' && g.cleanup === null) {
    add('/gateway/cleanup', 'a stateful tool environment needs cleanup URLs (abort, force, probe)', 'cleanup: {server: resource, path: /cleanup/{rollout_id}}', 'Without them an aborted trial ends as cleanup_unverified and sessions leak.')
  }
  if (c.archetype !== 'simple-agent' && c.trial === null) {
    add('/trial', `a ${c.archetype} recipe needs a deterministic trial (scripted turns and expected results)`, 'a trial block', 'A direct /verify call does not prove tool results are fed back through the Gateway.')
  }
  if (c.trial && c.trial.cleanup_probe && g.cleanup === null) {
    add('/trial/cleanup_probe', 'cleanup_probe is set but the Gateway has no cleanup URLs', 'cleanup_probe: false, or a gateway.cleanup block', 'The probe is the cleanup URL queried with GET.')
  }
  if (c.trial) {
    const calls = c.trial.turns.filter((t) => t.tool_call).length
    if (c.trial.expect.tool_calls !== calls) {
      add('/trial/expect/tool_calls', `expect.tool_calls is ${c.trial.expect.tool_calls} but the script makes ${calls} tool call(s)`, `tool_calls: ${calls}`, 'The expectation must follow from the scripted turns.')
    }
    if (c.trial.deadline_s > g.max_deadline_s) {
      add('/trial/deadline_s', `trial deadline ${c.trial.deadline_s}s exceeds max_deadline_s ${g.max_deadline_s}s`, `deadline_s <= ${g.max_deadline_s}`, 'The Gateway would refuse the trial with 400.')
    }
  }
}

/** A verifier that can prove something: examples that tell right from wrong, or a golden row; a pending one says what is missing. */
function verifierRules(c: RecipeContract, add: Add): void {
  // A row in a tree of the user's own is found (and mounted) only through a root the recipe names.
  const roots = new Set(c.gym.config_roots ?? [])
  const refs = [['/verifier/task/file', c.verifier.task], ['/verifier/wrong_task/file', c.verifier.wrong_task], ['/trial/task/file', c.trial?.task]] as const
  for (const [pointer, ref] of refs) {
    const root = ref ? configRootName(ref.file) : undefined
    if (root && !roots.has(root)) add(pointer, `${ref!.file} is under ${root}, which gym.config_roots does not name`, `a root among ${[...roots].join(', ') || '(none)'}`, 'Name the tree with --config-root NAME=<directory>; the start script mounts only the roots the recipe names.')
  }
  const v = c.verifier
  if (v.kind === 'direct') {
    if ((v.task === null) === (v.payload === null)) {
      add('/verifier/task', 'a direct verifier needs exactly one of task (a row of a Gym JSONL in the image) or payload (an inline /verify body)', 'task or payload, not both', 'Use task for environments with large rows (tools), payload for small hand-written cases.')
    }
    if (v.correct.length === 0 || v.wrong.length === 0) {
      add('/verifier/correct', 'a direct verifier needs both a known-correct and a known-wrong model output', 'non-empty correct and wrong turn lists', 'A verifier that only sees correct answers cannot prove it rejects wrong ones.')
    }
    for (const which of ['correct', 'wrong'] as const) {
      const first = v[which].findIndex((t) => t.tool_output !== undefined)
      if (first >= 0 && !v[which].slice(0, first).some((t) => t.tool_call)) {
        add(`/verifier/${which}/${first}`, `a tool_output turn with no tool_call before it`, 'tool_output only after the tool_call it answers', 'A recorded tool result answers the call before it; /verify would see a result of no call.')
      }
    }
    if (c.gym.resources_server === null) {
      add('/verifier/kind', 'a direct verifier calls the resources server /verify, but this recipe has none', 'kind: golden', 'Sandbox agents are verified with a golden trial through the Gateway.')
    }
  } else if (v.kind === 'pending') {
    if (!v.pending) add('/verifier/pending', 'a pending verifier says what is missing', 'pending: <what to write, and how to give it>', 'The service rung and train print it until examples are given.')
    if (v.correct.length > 0 || v.wrong.length > 0 || c.trial !== null) {
      add('/verifier/kind', 'a pending verifier has no examples yet, but this one lists some', 'kind: direct (or golden) with its examples, or empty correct/wrong and trial: null', 'Say which it is: examples given, or still to write.')
    }
  } else if (v.task === null) {
    add('/verifier/task', 'a golden verifier needs the task row it replays', 'task: {file, row}', 'Name a row whose golden patch must earn the success reward.')
  }
}

/** The GPU layout: the schedule's split, parallelism and SGLang engines dividing the GPUs. */
function scheduleRules(c: RecipeContract, add: Add): void {
  const gpus = c.training.gpus
  const p = c.training.perf
  const schedule = trainingSchedule(c.training)
  if (schedule.mode === 'hybrid') {
    if (schedule.actor_gpus + schedule.rollout_gpus !== gpus) {
      add('/training/schedule/actor_gpus', `hybrid: ${schedule.actor_gpus} actor + ${schedule.rollout_gpus} rollout GPUs is not the job's ${gpus}`, `actor_gpus + rollout_gpus = ${gpus}`, 'Under --hybrid actor and rollout each hold their own GPUs; together they are the job.')
    }
    if (schedule.max_staleness < 1) {
      add('/training/schedule/max_staleness', `hybrid with max_staleness ${schedule.max_staleness}: rollouts may never run ahead of training, so actor and rollout wait on each other`, 'max_staleness >= 1 (Relax\'s hybrid-async recipe uses 2)', 'Use the colocate schedule for on-policy training.')
    }
  } else if (schedule.actor_gpus !== gpus || schedule.rollout_gpus !== gpus) {
    add('/training/schedule/actor_gpus', `colocate: actor ${schedule.actor_gpus} and rollout ${schedule.rollout_gpus} GPUs must both be the job's ${gpus}`, `actor_gpus = rollout_gpus = ${gpus}`, 'Colocated, actor and rollout take turns on the same GPUs (Relax forces the rollout GPU count to the actor\'s).')
  }
  if (schedule.actor_gpus % (p.tensor_parallel * p.pipeline_parallel * p.context_parallel) !== 0) {
    add('/training/perf/tensor_parallel', `TP ${p.tensor_parallel} x PP ${p.pipeline_parallel} x CP ${p.context_parallel} does not divide ${schedule.actor_gpus} actor GPUs`, `a parallel layout dividing ${schedule.actor_gpus}`, 'Megatron needs whole data-parallel replicas.')
  }
  if (schedule.rollout_gpus % c.training.sglang.num_gpus_per_engine !== 0) {
    add('/training/sglang/num_gpus_per_engine', `${c.training.sglang.num_gpus_per_engine} GPUs per SGLang engine does not divide ${schedule.rollout_gpus} rollout GPUs`, `a divisor of ${schedule.rollout_gpus}`, 'Every rollout engine needs the same number of GPUs.')
  }
}
