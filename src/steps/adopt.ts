/**
 * `gymrecipe adopt`: record the contract a hand-written recipe actually uses in recipe.yaml, read
 * the way the static rung reads it — the launcher's graph overrides checked against the Gym
 * config, its ports and Gateway spec, the training arrays, the data file and split, the service
 * container. What cannot be read is listed and left for the user to fill (in a draft beside the
 * scripts); it is never guessed. `--fill-from <built-in>` fills it on request, and says so.
 */
import {promises as fsp} from 'node:fs'
import path from 'node:path'
import {Document, isMap, isScalar, isSeq, parse as parseYaml, YAMLMap} from 'yaml'

import {loadBuiltin} from '../contract/builtin.js'
import {sourceOf, splitOf, verifierFieldsFrom} from '../contract/from-gym.js'
import {loadGymGraph} from '../contract/gym-config.js'
import {assertGymRoot} from '../contract/gym-config/paths.js'
import {contractProblems} from '../contract/load.js'
import {ARCHETYPES, recipeFileNames, type RecipeContract, type RecipeFileNames, type ScriptedTurn, SPLITS} from '../contract/types.js'
import {ExitCode, GymError, messageOf} from '../errors.js'
import {checkContext, configPathsOf, describeService, expectedRawFilename, graphOverrides, recipeFiles, scriptEnv, type CheckContext} from '../ladder/index.js'
import {launcherRole, type LoadedFile} from '../recipe/files.js'
import {arrays, assignments, flagValues, rawLineOf, resolveWord, type Word} from '../recipe/shell.js'
import {resolveRecipe} from '../recipe/target.js'
import {writeFileAtomic} from '../runtime/fs.js'
import {objectFields} from '../runtime/http.js'
import {pythonConstants} from '../runtime/python-constants.js'
import {summarizeExamples} from '../scaffold/new-recipe.js'
import {exampleRowsFiles} from '../contract/gym-config/example-rows.js'
import {renderRecipe} from '../scaffold/render.js'
import {CONTRACT_FILE, serializeContract} from '../scaffold/plan.js'

export const DRAFT_FILE = 'recipe.adopt.yaml'
/** What the draft holds where a value is missing; anything else (null included) is the user's answer. */
export const TO_FILL = '<fill in>'

export interface AdoptOptions {
  relaxRoot: string
  recipe: string
  gymRoot?: string
  /** Fill what cannot be read from this built-in; every such value is listed. */
  fillFrom?: string
  force: boolean
  dryRun: boolean
  env: NodeJS.ProcessEnv
}

export interface AdoptedField {
  /** JSON pointer into recipe.yaml. */
  pointer: string
  from: string
}

export interface AdoptResult {
  recipe: string
  dir: string
  /** recipe.yaml when everything is known; else the draft to fill. */
  file: string
  complete: boolean
  dryRun: boolean
  read: AdoptedField[]
  /** Values you gave in the draft, or taken from --fill-from. */
  filled: AdoptedField[]
  unfilled: Array<{pointer: string; why: string}>
  notes: string[]
  /** What would be recorded: the values read and filled, "<fill in>" where one is missing. */
  contract: Record<string, unknown>
}

type Tree = Record<string, unknown>

/** The contract being read, with where each value came from. */
class Reading {
  readonly tree: Tree = {}
  readonly read: AdoptedField[] = []
  readonly why = new Map<string, string>()
  readonly notes: string[] = []

  readonly filled: AdoptedField[] = []

  /** A value read from the recipe's files. */
  set(pointer: string, value: unknown, from: string): void {
    if (value === undefined) return
    this.put(pointer, value)
    this.read.push({pointer, from})
  }

  /** A value the recipe's files do not hold, given by the user (the draft) or --fill-from. */
  fill(pointer: string, value: unknown, from: string): void {
    this.put(pointer, value)
    this.filled.push({pointer, from})
  }

  private put(pointer: string, value: unknown): void {
    const keys = pointer.split('/').slice(1)
    let at = this.tree
    for (const key of keys.slice(0, -1)) at = (at[key] ??= {}) as Tree
    at[keys.at(-1)!] = value
    this.why.delete(pointer)
  }

  /** Record why a value could not be read (the first reason given wins). */
  missing(pointer: string, why: string): void {
    if (!this.has(pointer) && !this.why.has(pointer)) this.why.set(pointer, why)
  }

  has(pointer: string): boolean {
    return valueAt(this.tree, pointer) !== undefined
  }
}

function valueAt(tree: unknown, pointer: string): unknown {
  let at: unknown = tree
  for (const key of pointer.split('/').slice(1)) {
    if (!at || typeof at !== 'object' || Array.isArray(at)) return undefined
    at = (at as Tree)[key]
  }
  return at
}

/** Values recorded as one piece (a list, a union, a block that is null or whole). */
const WHOLE = new Set(['/data/source', '/verifier/task', '/verifier/payload', '/trial', '/gateway/cleanup', '/gym/resources_server', '/service/error_probe', '/gym/agent'])

/** Every value pointer a contract has, taken from a built-in's shape. */
function leafPointers(value: unknown, prefix = ''): string[] {
  if (WHOLE.has(prefix) || !value || typeof value !== 'object' || Array.isArray(value)) return [prefix]
  return Object.entries(value as Tree).flatMap(([k, v]) => (k === 'generated' ? [] : leafPointers(v, `${prefix}/${k}`)))
}

const numberOf = (text: string | undefined) => (text !== undefined && /^-?\d+(?:\.\d+)?(?:e-?\d+)?$/i.test(text.trim()) ? Number(text) : undefined)
const intOf = (text: string | undefined) => {
  const n = numberOf(text)
  return n !== undefined && Number.isInteger(n) ? n : undefined
}

// ------------------------------------------------------------------ the training script

/** Contract values and the flags that carry them (as in the generated training script). */
const TRAINING_FLAGS: Array<[string, string, 'int' | 'number' | 'bool' | 'text']> = [
  ['/training/agent_timeout_s', '--agent-timeout', 'int'],
  ['/training/rollout/num_rollout', '--num-rollout', 'int'],
  ['/training/rollout/batch_size', '--rollout-batch-size', 'int'],
  ['/training/rollout/n_samples_per_prompt', '--n-samples-per-prompt', 'int'],
  ['/training/rollout/max_prompt_len', '--rollout-max-prompt-len', 'int'],
  ['/training/rollout/max_response_len', '--rollout-max-response-len', 'int'],
  ['/training/rollout/max_context_len', '--rollout-max-context-len', 'int'],
  ['/training/rollout/temperature', '--rollout-temperature', 'number'],
  ['/training/rollout/global_batch_size', '--global-batch-size', 'int'],
  ['/training/perf/tensor_parallel', '--tensor-model-parallel-size', 'int'],
  ['/training/perf/sequence_parallel', '--sequence-parallel', 'bool'],
  ['/training/perf/pipeline_parallel', '--pipeline-model-parallel-size', 'int'],
  ['/training/perf/context_parallel', '--context-parallel-size', 'int'],
  ['/training/perf/expert_parallel', '--expert-model-parallel-size', 'int'],
  ['/training/perf/expert_tensor_parallel', '--expert-tensor-parallel-size', 'int'],
  ['/training/perf/micro_batch_size', '--micro-batch-size', 'int'],
  ['/training/perf/max_tokens_per_gpu', '--max-tokens-per-gpu', 'int'],
  ['/training/perf/log_probs_max_tokens_per_gpu', '--log-probs-max-tokens-per-gpu', 'int'],
  ['/training/perf/log_probs_chunk_size', '--log-probs-chunk-size', 'int'],
  ['/training/grpo/kl_loss_coef', '--kl-loss-coef', 'number'],
  ['/training/grpo/entropy_coef', '--entropy-coef', 'number'],
  ['/training/grpo/eps_clip', '--eps-clip', 'number'],
  ['/training/grpo/eps_clip_high', '--eps-clip-high', 'number'],
  ['/training/grpo/use_tis', '--use-tis', 'bool'],
  ['/training/optimizer/lr', '--lr', 'number'],
  ['/training/optimizer/weight_decay', '--weight-decay', 'number'],
  ['/training/optimizer/adam_beta1', '--adam-beta1', 'number'],
  ['/training/optimizer/adam_beta2', '--adam-beta2', 'number'],
  ['/training/sglang/num_gpus_per_engine', '--rollout-num-gpus-per-engine', 'int'],
  ['/training/sglang/mem_fraction_static', '--sglang-mem-fraction-static', 'number'],
  ['/training/sglang/cuda_graph_max_bs', '--sglang-cuda-graph-max-bs', 'int'],
  ['/training/sglang/router_policy', '--sglang-router-policy', 'text'],
  ['/training/save_interval', '--save-interval', 'int'],
  ['/training/parsers/tool_call', '--agentic-tool-call-parser', 'text'],
  ['/training/parsers/reasoning', '--agentic-reasoning-parser', 'text'],
]

/** Optional in the contract: absent in the script means Relax's own default (null). */
const NULL_WHEN_ABSENT = new Set(['/training/perf/micro_batch_size', '/training/perf/log_probs_max_tokens_per_gpu', '/training/sglang/cuda_graph_max_bs', '/training/sglang/router_policy', '/training/parsers/reasoning'])

/** Every flag the generated training script writes: anything else a hand-written one passes is kept verbatim. */
async function generatedFlags(): Promise<Set<string>> {
  const rendered = await renderRecipe(await loadBuiltin('calendar'))
  const run = rendered.find((f) => f.role === 'run')!
  return new Set([...arrays(run.content).values()].flat().map((w) => w.value).filter((v) => v.startsWith('--')))
}

function readTraining(r: Reading, run: LoadedFile, generated: Set<string>): void {
  const where = (line: number) => `${run.name}:${line}`
  const words = [...arrays(run.text).values()].flat()
  const flagAt = (flag: string): {word: Word; value?: Word} | undefined => {
    const i = words.findIndex((w) => w.value === flag)
    return i === -1 ? undefined : {word: words[i], value: words[i + 1]}
  }
  for (const [pointer, flag, kind] of TRAINING_FLAGS) {
    const found = flagAt(flag)
    if (kind === 'bool') {
      r.set(pointer, Boolean(found), found ? where(found.word.line) : `${run.name} (not passed)`)
      continue
    }
    if (!found?.value) {
      if (NULL_WHEN_ABSENT.has(pointer)) r.set(pointer, null, `${run.name} (not passed: Relax's default)`)
      else r.missing(pointer, `${run.name} does not pass ${flag} (Relax's own default applies, which gymrecipe does not know)`)
      continue
    }
    const resolved = resolveWord(found.value.value, run.lines)
    const text = resolved.value
    const value = kind === 'int' ? intOf(text) : kind === 'number' ? numberOf(text) : text
    if (value === undefined) r.missing(pointer, `${flag} at ${where(found.value.line)} is ${found.value.value}, which cannot be worked out without running the script`)
    else r.set(pointer, value, `${where(found.value.line)}${resolved.fromEnv.length > 0 ? ` (default of ${resolved.fromEnv.map((v) => v.name).join(', ')})` : ''}`)
  }
  const checkpoint = flagAt('--hf-checkpoint')?.value
  // The model folder is the last part of the path; MODEL_DIR before it is the deployment's.
  const model = checkpoint?.value.replace(/\/+$/, '').split('/').at(-1)
  if (checkpoint && model && !model.includes('$')) r.set('/training/model/name', model, where(checkpoint.line))
  else r.missing('/training/model/name', `${run.name} passes no --hf-checkpoint ending in the model folder`)
  const named = run.name.match(/^run-(.+?)-(\d+)xgpu-nemo-gym/)
  if (named) {
    r.set('/training/model/slug', named[1], `the file name ${run.name}`)
    r.set('/training/gpus', Number(named[2]), `the file name ${run.name}`)
  } else {
    r.missing('/training/model/slug', `${run.name} is not named run-<model>-<N>xgpu-nemo-gym…`)
    r.missing('/training/gpus', `${run.name} is not named run-<model>-<N>xgpu-nemo-gym…`)
  }
  const sourced = run.lines.find((l) => /^(?:source|\.)\s/.test(l.text) && /scripts\/models|MODEL_CONFIG_DIR/.test(l.text))
  const script = sourced?.text.match(/\/([\w.-]+\.sh)"?\s*$/)?.[1]
  if (script) r.set('/training/model/config_script', script, where(sourced!.line))
  else r.missing('/training/model/config_script', `${run.name} sources no scripts/models/<model>.sh`)
  for (const [pointer, name] of [['/training/project_name', 'PROJECT_NAME'], ['/training/exp_name', 'EXP_NAME']] as const) {
    const a = assignments(run.lines).find((x) => x.name === name)
    const value = a && resolveWord(a.value, run.lines).value
    if (value) r.set(pointer, value, where(a!.line))
    else r.missing(pointer, `${run.name} sets no ${name}`)
  }
  // Flags the generated script does not write are kept verbatim, array by array.
  const known = new Set([...TRAINING_FLAGS.map(([, f]) => f), ...generated])
  const extra: Record<string, string[]> = {rollout: [], perf: [], grpo: [], optimizer: [], misc: []}
  for (const [name, list] of arrays(run.text)) {
    if (name === 'CKPT_ARGS') continue
    const bucket = name.startsWith('ROLLOUT') ? 'rollout' : name.startsWith('PERF') ? 'perf' : name.startsWith('GRPO') ? 'grpo' : name.startsWith('OPTIMIZER') ? 'optimizer' : 'misc'
    for (let i = 0; i < list.length; i++) {
      const w = list[i].value
      if (!w.startsWith('--')) continue
      if (known.has(w)) {
        if (w === '--agent-env') while (list[i + 1] && !list[i + 1].value.startsWith('--')) i++
        continue
      }
      const next = list[i + 1]?.value
      extra[bucket].push(next !== undefined && !next.startsWith('--') ? `${w}=${next}` : w)
    }
  }
  r.set('/training/extra_args', extra, `${run.name} (flags the generated script does not write)`)
  const agentEnv = (key: string) => {
    const i = words.findIndex((w) => w.value.startsWith(`${key}=`))
    return i === -1 ? undefined : {value: words[i].value.slice(key.length + 1), line: words[i].line}
  }
  const deadline = agentEnv('NEMO_GYM_DEADLINE_S')
  if (deadline && intOf(resolveWord(deadline.value, run.lines).value) !== undefined) r.set('/gateway/deadline_s', intOf(resolveWord(deadline.value, run.lines).value), where(deadline.line))
  const policy = agentEnv('NEMO_GYM_INTERRUPT_POLICY')
  if (policy) r.set('/gateway/interrupt_policy', policy.value, where(policy.line))
}

// ------------------------------------------------------------------ launchers and the Gym graph

/** A value from the Gateway registration the launcher writes (JSON or a Python dict literal). */
function registration(text: string, key: string): string | undefined {
  return text.match(new RegExp(`["']${key}["']\\s*:\\s*(?:["']([^"']+)["']|(-?\\d+))`))?.slice(1).find((v) => v !== undefined)
}

/** `file:line` of the first physical line matching, or the file alone. */
function lineOf(file: LoadedFile, pattern: RegExp): string {
  const line = rawLineOf(file.text, pattern)
  return line === undefined ? file.name : `${file.name}:${line}`
}

async function readService(r: Reading, gym: LoadedFile | undefined, host: LoadedFile | undefined, scripts: LoadedFile[], gymRoot: string | undefined, env: Record<string, string>): Promise<void> {
  if (!gym) {
    for (const p of ['/gym/config_paths', '/gym/agent', '/gym/resources_server', '/gym/environment', '/gym/gateway_config', '/service/gateway_port', '/ray/gcs_port']) r.missing(p, 'no launcher in the folder runs `gym env start`')
    return
  }
  const configs = configPathsOf(gym).filter((c) => !c.startsWith('responses_api_models/'))
  if (configs.length > 0) r.set('/gym/config_paths', configs, lineOf(gym, /\+config_paths=/))
  else r.missing('/gym/config_paths', `${gym.name} passes no +config_paths=[…]`)

  const portOf = (kind: string) => {
    const m = gym.text.match(new RegExp(`\\+\\+[\\w.-]+\\.${kind}\\.[\\w-]+\\.port=(?:"?)(\\d+)`))
    return m ? Number(m[1]) : undefined
  }
  const gateway = portOf('responses_api_models') ?? intOf(env.NEMO_GYM_GATEWAY_PORT)
  if (portOf('responses_api_models') !== undefined) r.set('/service/gateway_port', gateway, lineOf(gym, /responses_api_models\.[\w-]+\.port=/))
  else if (gateway !== undefined) r.set('/service/gateway_port', gateway, 'NEMO_GYM_GATEWAY_PORT as env.sh sets it')
  else r.missing('/service/gateway_port', `${gym.name} sets no ++policy_model…port=, and env.sh no NEMO_GYM_GATEWAY_PORT`)
  const agentPort = portOf('responses_api_agents')
  if (gateway !== undefined && agentPort !== undefined && agentPort !== gateway + 1) r.notes.push(`the agent listens on ${agentPort}, not on the Gateway port + 1 (${gateway + 1}) as generated scripts place it`)

  for (const key of ['environment', 'interrupt_policy'] as const) {
    const value = registration(gym.text, key)
    if (value) r.set(key === 'environment' ? '/gym/environment' : '/gateway/interrupt_policy', value, lineOf(gym, new RegExp(`["']${key}["']`)))
  }
  // Hand-written registrations key the spec by its config; gymrecipe's list each environment's as "config" (the first is read).
  const config = gym.text.match(/["']([a-z0-9][a-z0-9_.-]*-v\d+)["']\s*:\s*\{/) ?? gym.text.match(/\bGATEWAY_CONFIG\s*=\s*["']([a-z0-9][a-z0-9_.-]*)["']/) ?? gym.text.match(/["']config["']\s*:\s*["']([a-z0-9][a-z0-9_.-]*)["']/)
  if (config) r.set('/gym/gateway_config', config[1], lineOf(gym, new RegExp(`["']${config[1]}["']`)))
  const readiness = gym.text.match(/\bREADINESS\s*=\s*\[([^\]]*)\]/) ?? gym.text.match(/["']readiness["']\s*:\s*\[([^\]]*)\]/)
  const readinessUrls = gym.text.match(/["']readiness_urls["']\s*:\s*\[([^\]]*)\]/)
  const resourcePort = portOf('resources_servers')
  if (readiness) r.set('/gateway/readiness', [...readiness[1].matchAll(/["'](agent|resource)["']/g)].map((m) => m[1]), lineOf(gym, /\bREADINESS\s*=|["']readiness["']\s*:/))
  else if (readinessUrls) {
    const ports = [...readinessUrls[1].matchAll(/:(\d{2,5})\b/g)].map((m) => Number(m[1]))
    const servers = ports.map((p) => (p === agentPort ? 'agent' : p === resourcePort ? 'resource' : undefined))
    if (ports.length > 0 && servers.every(Boolean)) r.set('/gateway/readiness', servers, `${lineOf(gym, /["']readiness_urls["']/)} (ports of the agent and resources server overrides)`)
    else r.missing('/gateway/readiness', `the readiness URLs in ${gym.name} are not all on the agent's or resources server's port`)
  }
  if (/\bCLEANUP\s*=\s*None\b|["']cleanup["']\s*:\s*None\b/.test(gym.text)) r.set('/gateway/cleanup', null, lineOf(gym, /\bCLEANUP\s*=|["']cleanup["']\s*:/))
  for (const [key, pointer] of [['max_concurrency', '/gateway/max_concurrency'], ['queue_capacity', '/gateway/queue_capacity'], ['max_deadline_s', '/gateway/max_deadline_s']] as const) {
    const value = intOf(registration(gym.text, key))
    if (value !== undefined) r.set(pointer, value, lineOf(gym, new RegExp(`["']${key}["']`)))
    else r.missing(pointer, `the Gateway registration in ${gym.name} gives no literal ${key}`)
  }
  r.missing('/gym/environment', `the Gateway registration in ${gym.name} names no environment`)
  r.missing('/gym/gateway_config', `the Gateway registration in ${gym.name} names no <name>-v1 config`)

  // The private Ray: the launcher's own `ray start`, or the host launcher's container command.
  for (const file of [gym, host]) {
    const start = file?.lines.find((l) => /\bray["']?\s+start\b/.test(l.text))
    if (!file || !start) continue
    const flag = (name: string) => {
      const m = start.text.match(new RegExp(`--${name}[= ]("?)([^"\\s]+)\\1`))
      return m ? intOf(resolveWord(m[2], file.lines).value) : undefined
    }
    const at = `${file.name}:${start.line}`
    if (flag('port') !== undefined) r.set('/ray/gcs_port', flag('port'), at)
    if (flag('dashboard-port') !== undefined) r.set('/ray/dashboard_port', flag('dashboard-port'), at)
    if (flag('num-cpus') !== undefined) r.set('/ray/num_cpus', flag('num-cpus'), at)
    if (flag('min-worker-port') !== undefined) r.set('/ray/min_worker_port', flag('min-worker-port'), at)
    if (flag('max-worker-port') !== undefined) r.set('/ray/max_worker_port', flag('max-worker-port'), at)
    if (flag('object-manager-port') !== undefined) r.set('/ray/component_port_base', flag('object-manager-port'), at)
  }
  for (const p of ['/ray/gcs_port', '/ray/dashboard_port', '/ray/num_cpus', '/ray/min_worker_port', '/ray/max_worker_port', '/ray/component_port_base']) r.missing(p, 'the private `ray start` does not set it (Ray picks one at start)')

  const pinned = scripts.map((f) => ({f, m: f.text.match(/\b[0-9a-f]{40}\b/)})).find((x) => x.m)
  if (pinned) r.set('/gym/commit', pinned.m![0], lineOf(pinned.f, /\b[0-9a-f]{40}\b/))
  else r.missing('/gym/commit', 'no script pins a 40-hex Gym commit')

  if (!gymRoot) {
    for (const p of ['/gym/agent', '/gym/resources_server', '/gym/venv_dirs', '/data/dataset', '/data/source', '/data/verifier_fields', '/data/tools', '/data/strip_agent_ref']) r.missing(p, 'no --gym-root: the Gym config cannot be read')
    return
  }
  const overrides = graphOverrides(gym)
  let graph
  try {
    graph = await loadGymGraph(gymRoot, configs)
  } catch (error) {
    for (const p of ['/gym/agent', '/gym/resources_server', '/gym/venv_dirs', '/data/dataset', '/data/source', '/data/verifier_fields', '/data/tools', '/data/strip_agent_ref']) r.missing(p, `the Gym config could not be read: ${messageOf(error).split('\n')[0]}`)
    return
  }
  const agentOverride = overrides.find((o) => o.kind === 'responses_api_agents')
  const agent = graph.agents.find((a) => a.id === agentOverride?.id)
  if (!agent) {
    const why = agentOverride ? `${gym.name} overrides agent ${agentOverride.id}, which the Gym config does not define (it defines ${graph.agents.map((a) => a.id).join(', ') || 'none'})` : `${gym.name} overrides no agent port`
    r.missing('/gym/agent', why)
    for (const p of ['/gym/resources_server', '/gym/venv_dirs', '/data/dataset', '/data/source', '/data/verifier_fields', '/data/tools', '/data/strip_agent_ref']) r.missing(p, `the agent is unknown: ${why}`)
    return
  }
  const at = `${gym.name}:${agentOverride!.line}, checked against ${configs.join(', ')}`
  r.set('/gym/agent', {name: agent.id, type: agent.implementation, max_steps: agent.maxSteps}, at)
  const resourceOverride = overrides.find((o) => o.kind === 'resources_servers')
  const resource = graph.resourcesServers.find((s) => s.id === (resourceOverride?.id ?? agent.resourcesServer))
  if (resourceOverride && !resource) r.missing('/gym/resources_server', `${gym.name} overrides resources server ${resourceOverride.id}, which the Gym config does not define`)
  else r.set('/gym/resources_server', resource ? {name: resource.id, implementation: resource.implementation} : null, resource ? at : `${configs.join(', ')} (the agent has no resources server)`)
  r.set('/gym/venv_dirs', [`responses_api_agents/${agent.implementation}`, ...(resource ? [`resources_servers/${resource.implementation}`] : [])], `the Gym config's implementations`)
  if (agent.implementation === 'swe_agents' || agent.implementation.includes('openhands')) r.set('/archetype', 'sandbox', `the agent implementation ${agent.implementation}`)

  const split = valueAt(r.tree, '/data/split')
  const dataset = agent.datasets.find((d) => splitOf(d) === split)
  if (dataset) {
    r.set('/data/dataset', dataset.name, `the agent's ${dataset.type} dataset in ${configs.join(', ')}`)
    try {
      r.set('/data/source', sourceOf(dataset), `dataset ${dataset.name} in the Gym config`)
    } catch (error) {
      r.missing('/data/source', messageOf(error))
    }
  } else {
    r.missing('/data/dataset', `the agent has no ${String(split ?? '?')} dataset in ${configs.join(', ')}`)
    r.missing('/data/source', `the agent has no ${String(split ?? '?')} dataset in ${configs.join(', ')}`)
  }
  const examples = await summarizeExamples(gymRoot, await exampleRowsFiles(gymRoot, graph, agent.id))
  if (examples) {
    r.set('/data/verifier_fields', verifierFieldsFrom(examples), `the example rows of ${agent.id}`)
    r.set('/data/tools', examples.hasTools, `the example rows of ${agent.id}`)
    r.set('/data/strip_agent_ref', examples.hasAgentRef, `the example rows of ${agent.id}`)
  } else for (const p of ['/data/verifier_fields', '/data/tools', '/data/strip_agent_ref']) r.missing(p, `no example rows of ${agent.id} in the Gym checkout`)
}

function readContainer(r: Reading, host: LoadedFile | undefined, scripts: LoadedFile[], readme: string): void {
  const image = scripts.map((f) => ({f, a: assignments(f.lines).find((a) => a.name === 'NEMO_GYM_IMAGE')})).find((x) => x.a)
  const imageValue = image && resolveWord(image.a!.value, image.f.lines).value
  if (imageValue) r.set('/service/image', imageValue, `${image!.f.name}:${image!.a!.line}`)
  else r.missing('/service/image', 'no script sets a NEMO_GYM_IMAGE default')
  if (!host) {
    const byHand = readme.match(/docker run[^\n]*--name[= ]"?([\w.-]+)/)
    if (byHand) r.set('/service/container', byHand[1], 'the docker run in README.md')
    for (const p of ['/service/container', '/service/shm_size', '/service/privileged', '/service/cap_add', '/service/security_opt', '/service/start_timeout_s']) r.missing(p, 'no host-side launcher creates the container (the README does it by hand)')
    return
  }
  const name = flagValues(host.lines, '--name')[0]
  const container = name && resolveWord(name.value, host.lines).value
  if (container) r.set('/service/container', container, `${host.name}:${name!.line}`)
  else r.missing('/service/container', `${host.name} names no container (--name)`)
  const shm = flagValues(host.lines, '--shm-size')[0]
  if (shm) r.set('/service/shm_size', shm.value, `${host.name}:${shm.line}`)
  else r.missing('/service/shm_size', `${host.name} sets no --shm-size (Docker's 64m default applies)`)
  r.set('/service/privileged', /--privileged\b/.test(host.text), `${host.name}${/--privileged\b/.test(host.text) ? '' : ' (no --privileged)'}`)
  r.set('/service/cap_add', flagValues(host.lines, '--cap-add').map((f) => f.value), host.name)
  r.set('/service/security_opt', flagValues(host.lines, '--security-opt').map((f) => f.value), host.name)
  const timeout = host.text.match(/\bSTART_TIMEOUT_S\w*=["']?\$\{\w+:-(\d+)\}/)
  const wait = host.text.match(/\$\(\(\s*SECONDS\s*\+\s*(\d+)\s*\)\)/)
  if (timeout) r.set('/service/start_timeout_s', Number(timeout[1]), lineOf(host, /\bSTART_TIMEOUT_S\w*=/))
  else if (wait) r.set('/service/start_timeout_s', Number(wait[1]), lineOf(host, /SECONDS\s*\+/))
  else r.missing('/service/start_timeout_s', `${host.name} waits for /readyz without a literal deadline`)
}

function readData(r: Reading, ctx: CheckContext, prepare: LoadedFile | undefined, env: LoadedFile | undefined, run: LoadedFile | undefined): void {
  const source = run && assignments(run.lines).find((a) => a.name === 'NEMO_GYM_SOURCE_DATA')
  const fromRun = source && resolveWord(source.value, run!.lines).value?.match(/([A-Za-z0-9_.-]+\.jsonl)$/)?.[1]
  const raw = (prepare ? expectedRawFilename(ctx, prepare, env) : undefined) ?? (fromRun && !fromRun.endsWith('_relax.jsonl') ? {name: fromRun, from: `the NEMO_GYM_SOURCE_DATA default at ${run!.name}:${source!.line}`} : undefined)
  if (!raw) {
    for (const p of ['/data/raw_filename', '/data/split', '/data/smoke']) r.missing(p, 'neither the prepare script (NEMO_GYM_SOURCE_DATA must end with /<name>.jsonl) nor the training script\'s NEMO_GYM_SOURCE_DATA default names the raw file')
    return
  }
  r.set('/data/raw_filename', raw.name, raw.from)
  const split = raw.name.match(/_(train|validation|example|benchmark|test)\.jsonl$/)?.[1]
  if (split && (SPLITS as readonly string[]).includes(split)) {
    r.set('/data/split', split, `the raw file name ${raw.name}`)
    r.set('/data/smoke', split !== 'train', `the ${split} split`)
  } else {
    r.missing('/data/split', `the raw file name ${raw.name} does not end in _<split>.jsonl`)
    r.missing('/data/smoke', `the split of ${raw.name} is unknown`)
  }
}

async function readVerifier(r: Reading, ctx: CheckContext, env: Record<string, string>, verifiers: LoadedFile[]): Promise<void> {
  const direct = verifiers.find((v) => !v.name.endsWith('_trial.py'))
  const trial = verifiers.find((v) => v.name.endsWith('_trial.py'))
  if (direct || trial) r.set('/verifier/kind', direct ? 'direct' : 'golden', `${(direct ?? trial)!.name}${direct ? ' (POSTs /verify)' : ' (a trial through the Gateway)'}`)
  else r.missing('/verifier/kind', 'the recipe has no verify_*.py')
  const python = (await describeService(ctx.target, env)).verifier?.python
  if (python) r.set('/verifier/python', python, 'the path the verifier or README runs it with')
  else r.missing('/verifier/python', 'no verifier or README names the Gym venv Python that runs it')
  const verifier = direct ?? trial
  if (verifier) await readVerifierConstants(r, verifier)
  const why = `${verifier?.name ?? 'no verifier'}: its known-correct and known-wrong outputs are code, not constants gymrecipe can read`
  for (const p of ['/verifier/task', '/verifier/payload', '/verifier/correct', '/verifier/wrong', '/verifier/success_reward']) r.missing(p, why)
  if (!trial) r.set('/trial', null, 'no trial verifier (verify_*_trial.py) in the folder')
  else r.missing('/trial', `${trial.name}: its task and scripted turns are code, not data gymrecipe can read`)
}

/** Output items as the Responses API writes them, back to the contract's scripted turns. */
function turnsOf(items: unknown): ScriptedTurn[] | undefined {
  if (!Array.isArray(items)) return undefined
  const turns: ScriptedTurn[] = []
  for (const item of items) {
    const o = item && typeof item === 'object' ? (item as Record<string, unknown>) : {}
    if (o.type === 'function_call' && typeof o.name === 'string' && typeof o.arguments === 'string') {
      try {
        turns.push({tool_call: {name: o.name, arguments: JSON.parse(o.arguments) as Record<string, unknown>}})
      } catch {
        return undefined
      }
    } else if (o.type === 'message' && Array.isArray(o.content)) {
      const text = (o.content as Array<Record<string, unknown>>).map((c) => (typeof c.text === 'string' ? c.text : '')).join('')
      turns.push({text})
    } else return undefined
  }
  return turns
}

/** The examples a verifier keeps as module constants (SUCCESS_REWARD, INLINE_PAYLOAD, CORRECT_OUTPUT, …). */
async function readVerifierConstants(r: Reading, verifier: LoadedFile): Promise<void> {
  const names = ['SUCCESS_REWARD', 'FAILURE_REWARD', 'TASK_JSONL', 'TASK_ROW', 'INLINE_PAYLOAD', 'CORRECT_OUTPUT', 'WRONG_OUTPUT']
  const read = await pythonConstants(verifier.path, names)
  if ('error' in read) {
    r.notes.push(`the constants of ${verifier.name} could not be read: ${read.error}`)
    return
  }
  const {constants} = read
  const where = (name: string) => lineOf(verifier, new RegExp(`^${name}\\s*=`))
  if (typeof constants.SUCCESS_REWARD === 'number') r.set('/verifier/success_reward', constants.SUCCESS_REWARD, where('SUCCESS_REWARD'))
  if (typeof constants.FAILURE_REWARD === 'number' || constants.FAILURE_REWARD === null) r.set('/verifier/failure_reward', constants.FAILURE_REWARD, where('FAILURE_REWARD'))
  if ('INLINE_PAYLOAD' in constants) r.set('/verifier/payload', constants.INLINE_PAYLOAD, where('INLINE_PAYLOAD'))
  if (constants.TASK_JSONL === null) r.set('/verifier/task', null, where('TASK_JSONL'))
  else if (typeof constants.TASK_JSONL === 'string' && constants.TASK_JSONL.startsWith('/opt/nemo-gym/') && typeof constants.TASK_ROW === 'number') {
    r.set('/verifier/task', {file: constants.TASK_JSONL.slice('/opt/nemo-gym/'.length), row: constants.TASK_ROW}, where('TASK_JSONL'))
  }
  for (const [name, pointer] of [['CORRECT_OUTPUT', '/verifier/correct'], ['WRONG_OUTPUT', '/verifier/wrong']] as const) {
    const turns = turnsOf(constants[name])
    if (turns) r.set(pointer, turns, where(name))
  }
}

function readDescription(r: Reading, readme: string): void {
  const lines = readme.split('\n')
  const index = lines.findIndex((l) => l.trim() && !l.startsWith('#') && !l.startsWith('```') && !l.startsWith('|') && !l.startsWith('!['))
  if (index !== -1) r.set('/description', lines[index].trim().slice(0, 300), `README.md:${index + 1}`)
  else r.missing('/description', 'README.md has no opening paragraph')
}

// ------------------------------------------------------------------ the draft the user fills

/** Values the user wrote into the draft since the last adopt. */
async function userFills(draftPath: string): Promise<Tree> {
  const text = await fsp.readFile(draftPath, 'utf8').catch(() => undefined)
  if (text === undefined) return {}
  try {
    return objectFields(parseYaml(text))
  } catch (error) {
    throw new GymError(`${draftPath} is not valid YAML: ${messageOf(error).split('\n')[0]}`, {code: 'E_CONTRACT_INVALID', exit: ExitCode.usage, hint: 'Fix the draft (or remove it to start over), then rerun adopt.', location: {file: draftPath}})
  }
}

function draftText(tree: Tree, unfilled: Array<{pointer: string; why: string}>, recipe: string): string {
  const doc = new Document(tree)
  for (const u of unfilled) {
    const keys = u.pointer.split('/').slice(1)
    const node = doc.getIn(keys, true)
    const parent = keys.length > 1 ? doc.getIn(keys.slice(0, -1), true) : doc.contents
    if (isScalar(node) || isMap(node) || isSeq(node)) node.comment = ` fill in: ${u.why}`
    else if (parent instanceof YAMLMap) parent.comment = ` fill in ${keys.at(-1)}: ${u.why}`
  }
  const header = `# Draft contract of the hand-written recipe ${recipe}, read by \`gymrecipe adopt\`.\n# Every "${TO_FILL}" could not be read from the scripts: replace it (null is an answer too), then run\n# adopt again; it writes recipe.yaml once nothing is missing (or use --fill-from <built-in>).\n# The other values are read from the scripts again each time: change the scripts, not this file.\n`
  return header + doc.toString({lineWidth: 0})
}

/** Keys in the order of the built-in contracts, so an adopted recipe.yaml reads like a generated one. */
function inShapeOrder(tree: Tree, shape: unknown): Tree {
  if (!shape || typeof shape !== 'object' || Array.isArray(shape)) return tree
  const order = Object.keys(shape as Tree)
  const keys = Object.keys(tree).sort((a, b) => (order.indexOf(a) === -1 ? 99 : order.indexOf(a)) - (order.indexOf(b) === -1 ? 99 : order.indexOf(b)))
  return Object.fromEntries(
    keys.map((k) => {
      const v = tree[k]
      return [k, v && typeof v === 'object' && !Array.isArray(v) ? inShapeOrder(v as Tree, (shape as Tree)[k]) : v]
    }),
  )
}

// ------------------------------------------------------------------ adopt

export async function adoptRecipe(o: AdoptOptions): Promise<AdoptResult> {
  if (o.gymRoot) await assertGymRoot(o.gymRoot)
  if (o.fillFrom) await loadBuiltin(o.fillFrom)
  const target = await resolveRecipe(o.relaxRoot, o.recipe, {asHandWritten: true})
  const contractPath = path.join(target.dir, CONTRACT_FILE)
  const draftPath = path.join(target.dir, DRAFT_FILE)
  if (!o.force && (await fsp.stat(contractPath).catch(() => undefined))) {
    throw new GymError(`${contractPath} already records this recipe's contract`, {code: 'E_ALREADY_RECORDED', exit: ExitCode.precondition, hint: 'Regenerate with `gymrecipe new --update`, or pass --force to read the scripts again and replace recipe.yaml.', location: {file: contractPath}})
  }
  const ctx: CheckContext = checkContext(target, {env: o.env, smoke: false})
  const files = await recipeFiles(ctx)
  const r = new Reading()
  const env = await scriptEnv(ctx).catch((error: unknown) => {
    r.notes.push(`env.sh could not be sourced (${messageOf(error)}); values it would set were read from the caller's environment only`)
    return {...(o.env as Record<string, string>)}
  })
  const readme = files.byRole.readme?.text ?? ''
  r.set('/schema_version', 1, 'the current recipe.yaml schema')
  r.set('/id', target.id, 'the folder name')
  readDescription(r, readme)
  const run = files.byRole.run
  if (run) readTraining(r, run, await generatedFlags())
  if (files.training.length > 1) r.notes.push(`the contract records one training script, ${run?.name}; ${files.training.filter((t) => t !== run).map((t) => t.name).join(', ')} stays as it is and is still checked by the static rung`)
  readData(r, ctx, files.byRole.prepare, files.byRole.env, run)
  const gymLauncher = files.launchers.find((l) => launcherRole(l).startsGym)
  const hostLauncher = files.launchers.find((l) => launcherRole(l).createsContainer)
  await readService(r, gymLauncher, hostLauncher, files.shell, o.gymRoot, env)
  readContainer(r, hostLauncher, files.shell, readme)
  await readVerifier(r, ctx, env, files.verifiers)
  for (const [name, pointer] of [['NEMO_GYM_CALLBACK_ALLOWED_NETWORKS', '/service/callback_networks'], ['NEMO_GYM_CALLBACK_ALLOWED_HOSTS', '/service/callback_hosts']] as const) {
    const value = env[name]
    const inScript = files.shell.map((f) => ({f, a: assignments(f.lines).find((a) => a.name === name)})).find((x) => x.a)
    const scriptDefault = inScript && resolveWord(inScript.a!.value, inScript.f.lines).value
    if (value !== undefined) r.set(pointer, value.split(',').map((v) => v.trim()).filter(Boolean), `${name} as env.sh sets it`)
    else if (scriptDefault !== undefined) r.set(pointer, scriptDefault.split(',').map((v) => v.trim()).filter(Boolean), `the ${name} default at ${inScript!.f.name}:${inScript!.a!.line}`)
    else r.missing(pointer, `no script, env.sh or caller's environment sets ${name}`)
  }
  const registered = gymLauncher?.name ?? 'the launcher'
  for (const [key, pointer] of [['lease_s', '/gateway/lease_s'], ['callback_protocol', '/gateway/callback_protocol']] as const) {
    const value = gymLauncher ? registration(gymLauncher.text, key) : undefined
    if (value !== undefined) r.set(pointer, key === 'lease_s' ? Number(value) : value, lineOf(gymLauncher!, new RegExp(`["']${key}["']`)))
    else r.missing(pointer, `the Gateway registration in ${registered} does not state ${key} (the Gateway's default applies)`)
  }
  r.missing('/gateway/readiness', `the Gateway registration in ${registered} lists no readiness URLs gymrecipe can map to agent/resource`)
  r.missing('/gateway/cleanup', `the Gateway registration in ${registered} names no cleanup route`)

  // The file names it has, where they differ from the generated ones.
  const readSoFar = r.tree as Partial<RecipeContract>
  if (readSoFar.training?.model?.slug && readSoFar.training.gpus) {
    const generated = recipeFileNames({id: target.id, training: readSoFar.training as RecipeContract['training']})
    const own: Partial<RecipeFileNames> = {}
    for (const role of Object.keys(generated) as Array<keyof RecipeFileNames>) {
      const actual = target.files[role]
      if (actual && actual !== generated[role]) own[role] = actual
    }
    if (Object.keys(own).length > 0) r.set('/files', own, 'the file names in the folder')
  }

  // Yours first (the draft), then --fill-from; what is left is listed.
  const shape = await loadBuiltin(o.fillFrom ?? 'calendar')
  const pointers = leafPointers(shape).filter((p) => p !== '/service/error_probe' && p !== '/verifier/failure_reward')
  const fills = await userFills(draftPath)
  for (const p of pointers) {
    const mine = valueAt(fills, p)
    if (!r.has(p) && mine !== undefined && mine !== TO_FILL) r.fill(p, mine, `you, in ${DRAFT_FILE}`)
  }
  r.missing('/archetype', `gymrecipe's archetypes (${ARCHETYPES.join(', ')}) are a choice, not something the scripts say`)
  if (o.fillFrom) {
    for (const p of pointers) if (!r.has(p) && valueAt(shape, p) !== undefined) r.fill(p, valueAt(shape, p), `the built-in ${o.fillFrom} (--fill-from)`)
  }
  for (const p of pointers) if (!r.has(p)) r.missing(p, r.why.get(p) ?? 'not read from the scripts')
  const unfilled = pointers.filter((p) => !r.has(p)).map((p) => ({pointer: p, why: r.why.get(p) ?? 'not read from the scripts'}))

  const tree = structuredClone(r.tree)
  for (const u of unfilled) {
    const keys = u.pointer.split('/').slice(1)
    let at = tree
    for (const key of keys.slice(0, -1)) at = (at[key] ??= {}) as Tree
    at[keys.at(-1)!] = TO_FILL
  }
  const result: AdoptResult = {recipe: target.id, dir: target.dir, file: draftPath, complete: false, dryRun: o.dryRun, read: r.read, filled: r.filled, unfilled, notes: r.notes, contract: inShapeOrder(tree, shape)}
  if (unfilled.length > 0) {
    if (!o.dryRun) await writeFileAtomic(draftPath, draftText(result.contract, unfilled, target.id))
    return result
  }
  const contract = inShapeOrder(r.tree, shape) as unknown as RecipeContract
  const problems = contractProblems(contract, contractPath)
  if (problems.length > 0) {
    result.unfilled = problems.map((p) => ({pointer: p.pointer ?? '/', why: p.message}))
    if (!o.dryRun) await writeFileAtomic(draftPath, draftText(r.tree, result.unfilled, target.id))
    return result
  }
  result.file = contractPath
  result.complete = true
  if (!o.dryRun) {
    await writeFileAtomic(contractPath, serializeContract(contract))
    await fsp.rm(draftPath, {force: true})
  }
  return result
}
