import path from 'node:path'

import type {GymAgent, GymDataset, GymGraph, GymServer} from './gym-config.js'
import {resourcesServerOf} from './gym-config/graph.js'
import {envReferences, unsetValues} from './gym-config/env-references.js'
import {configRootName} from './gym-config/paths.js'
import type {AddedEndpoint, AddedModelServer} from './gym-config/model-servers.js'
import {type ScheduleMode, withSchedule} from './schedule.js'
import {assertDistinct} from './additional-environments.js'
import {POLICY_MODEL, type SecondModel} from './gym-config/second-models.js'
import {RELAX_POLICY_MODEL_CONFIG} from './gym-config/relax-policy.js'
import {checkSecondModels, type DeploymentVariable, endpointReferences, flatEndpointReferences} from './second-model-rules.js'
import {draftNotes} from './draft-notes.js'
import {ExitCode, GymError, usageError} from '../errors.js'
import {assertPlaceable, serverRefs} from './placement.js'
import type {AdditionalEnvironment, Archetype, DataSource, GymDataSource, MixPart, RecipeContract, Split} from './types.js'
import {defaultErrorProbe, SPLITS} from './types.js'

export interface ExampleRowsSummary {
  /** Top-level keys seen in the example rows (task/verifier fields). */
  fields: string[]
  /** Some row carries a non-empty responses_create_params.tools. */
  hasTools: boolean
  /** Some row carries agent_ref (collated data). */
  hasAgentRef: boolean
}

export interface ContractFromGymOptions {
  id: string
  archetype: Archetype
  base: RecipeContract
  /** Name of the built-in the base came from. */
  baseName: string
  graph: GymGraph
  configPaths: string[]
  agent?: string
  dataset?: string
  smoke: boolean
  /** The user's own task JSONL (absolute path): the recipe trains on it instead of a Gym dataset. */
  dataFile?: string
  /** The split of the --data file when it is one of the Gym checkout's own files (example, benchmark, ...). */
  dataFileSplit?: string
  /** The user states the --data file is training data even though it is one of Gym's own non-train files. */
  trainingData?: boolean
  /** A file of example rows in the checkout (absolute), named when the config declares no training data. */
  exampleRows?: string
  /** Roles (judge, simulator, model) the user accepts the policy model, i.e. the model being trained, in. */
  policyServes?: string[]
  /** Environments trained in the same run besides the first (one per further --agent). */
  additionalEnvironments?: AdditionalEnvironment[]
  /** Rows kept per environment of a mix (by environment name; absent or 0: all). */
  mixCaps?: Record<string, number>
  /** The seed the mixed rows are shuffled with. */
  mixSeed?: number
  /** How actor and rollout share the GPUs (default: the base's, colocated). */
  schedule?: ScheduleMode
  /** Model servers gymrecipe adds for judges and simulators that have none of their own. */
  modelServers?: AddedModelServer[]
  /** Endpoint fields gymrecipe sets for judges and simulators named by plain fields, moved off the policy. */
  endpoints?: AddedEndpoint[]
  /** Config roots outside the Gym checkout that config paths name. */
  configRoots?: Array<{name: string; dir: string}>
  examples?: ExampleRowsSummary
  /** Verifier and trial supplied by the user for an environment no built-in knows. */
  verifierOverride?: VerifierOverride
  ports: Pick<RecipeContract['service'], 'gateway_port'> & Omit<RecipeContract['ray'], 'num_cpus'>
  model?: {name: string; slug: string; configScript: string}
  gpus?: number
}

export type VerifierOverride = Pick<RecipeContract, 'verifier'> & Partial<Pick<RecipeContract, 'trial'>> & {verifier_fields?: string[]}

export interface ContractDraft {
  contract: RecipeContract
  /** Things the user should know about choices made for them. */
  notes: string[]
}

/** The resources server an agent names; one the loaded configs do not define is a usage error. */
export function definedResourcesServer(graph: GymGraph, agent: GymAgent): GymServer | null {
  const resource = resourcesServerOf(graph, agent)
  if (agent.resourcesServer && !resource) {
    throw usageError(`agent ${agent.id} references resources server "${agent.resourcesServer}", which the config does not define`, 'Pass every config the graph needs with repeated --gym-config.')
  }
  return resource
}

export function chooseAgent(graph: GymGraph, wanted: string | undefined): GymAgent {
  const names = graph.agents.map((a) => a.id)
  if (graph.agents.length === 0) {
    throw new GymError(`the Gym config defines no agent (responses_api_agents); files: ${graph.files.filter((f) => f !== RELAX_POLICY_MODEL_CONFIG).join(', ')}`, {
      code: 'E_NO_AGENT',
      exit: ExitCode.usage,
      hint: 'Pass the config that defines the agent, e.g. environments/<env>/config.yaml.',
    })
  }
  if (wanted !== undefined) {
    const agent = graph.agents.find((a) => a.id === wanted)
    if (!agent) throw usageError(`agent "${wanted}" is not in the Gym config`, `Choose one of: ${names.join(', ')}`)
    return agent
  }
  if (graph.agents.length > 1) {
    throw usageError(`the Gym config defines ${graph.agents.length} agents; choose one with --agent`, `Choose one of: ${names.join(', ')}`)
  }
  return graph.agents[0]
}

function chooseDataset(agent: GymAgent, wanted: string | undefined, smoke: boolean, exampleRows: string | undefined): GymDataset {
  const names = agent.datasets.map((d) => `${d.name} (${d.type})`)
  if (wanted !== undefined) {
    const ds = agent.datasets.find((d) => d.name === wanted)
    if (!ds) throw usageError(`dataset "${wanted}" is not declared by agent ${agent.id}`, `Choose one of: ${names.join(', ') || '(none declared)'}`)
    return ds
  }
  const train = agent.datasets.find((d) => d.type === 'train')
  if (train) return train
  if (smoke && agent.datasets.length > 0) return agent.datasets[0]
  const bring = 'Train on your own rows with --data <tasks.jsonl> (Gym task JSONL, e.g. from `gymrecipe tasks export`)'
  const smokeWith = [
    ...(agent.datasets.length > 0 ? [`--dataset with --smoke to use ${names.join(', ')}`] : []),
    ...(exampleRows ? [`--data ${exampleRows} (the checkout's example rows; a smoke run)`] : []),
  ]
  throw new GymError(`agent ${agent.id} declares no train dataset`, {
    code: 'E_USAGE',
    exit: ExitCode.usage,
    hint: `${bring}${smokeWith.length > 0 ? `; for a smoke run only, pass ${smokeWith.join(', or ')}` : ', or add a train dataset to the Gym config'}.`,
    location: {field: '--data'},
    details: {example_rows: exampleRows ?? null},
  })
}

/** The dataset entry of data the user brings with --data (it is in no Gym config). */
const USER_DATA: GymDataset = {name: 'user-data', type: 'train', jsonlFpath: null, license: null, sources: [], numRepeats: null, promptConfig: null, prepareScript: null}

export function splitOf(ds: GymDataset): Split {
  return (SPLITS as readonly string[]).includes(ds.type) ? (ds.type as Split) : 'test'
}

export function sourceOf(ds: GymDataset): GymDataSource {
  const primary = ds.sources[0]
  if (primary?.type === 'huggingface') return {type: 'huggingface', repo_id: primary.repoId, artifact: primary.artifactFpath ?? `${ds.type}.jsonl`}
  if (primary?.type === 'gitlab') return {type: 'gitlab', dataset_name: primary.datasetName, version: primary.version, artifact: primary.artifactFpath ?? `${ds.name}.jsonl`}
  if (!ds.jsonlFpath) throw usageError(`dataset ${ds.name} has neither a download source nor a jsonl_fpath`, 'Add huggingface_identifier, gitlab_identifier or source: to the dataset entry.')
  // Bundled data lives in the Gym checkout: a path that leaves it (or is absolute) is not Gym's data.
  if (path.isAbsolute(ds.jsonlFpath) || path.normalize(ds.jsonlFpath).split(path.sep)[0] === '..') {
    throw usageError(`dataset ${ds.name} has jsonl_fpath ${JSON.stringify(ds.jsonlFpath)}, which points outside the Gym root`, 'Bundled data is read from the Gym checkout: give jsonl_fpath relative to the Gym root, inside it (e.g. resources_servers/<env>/data/train.jsonl).')
  }
  if (ds.type === 'benchmark') return {type: 'benchmark', benchmark: ds.name, path: ds.jsonlFpath}
  return {type: 'bundled', path: ds.jsonlFpath}
}

/** Fields every row must keep: the prompt, tools when present, and the environment's own top-level fields. */
export function verifierFieldsFrom(examples: ExampleRowsSummary): string[] {
  const own = examples.fields.filter((f) => f !== 'responses_create_params' && f !== 'agent_ref' && !f.startsWith('_ng_') && /^[A-Za-z_][A-Za-z0-9_]*$/.test(f))
  return ['responses_create_params.input', ...(examples.hasTools ? ['responses_create_params.tools'] : []), ...own]
}

/**
 * Verifier fields come from this environment only: stated in the --verifier file, read from its
 * example rows, or the keys of its inline /verify payload. A built-in's fields are used only
 * when the built-in grades the same environment; anything else must be told.
 */
function chooseVerifierFields(o: ContractFromGymOptions, sameEnvironment: boolean, environment: string): {fields: string[]; from: string} {
  if (o.verifierOverride?.verifier_fields) return {fields: o.verifierOverride.verifier_fields, from: 'the --verifier file'}
  // The grader's needs do not change with the data: rows the user brings must carry them.
  if (o.dataFile && sameEnvironment) return {fields: o.base.data.verifier_fields, from: `the built-in ${o.baseName} (same environment); every --data row must carry them`}
  if (o.examples && o.examples.fields.length > 0) return {fields: verifierFieldsFrom(o.examples), from: 'the example rows in the Gym checkout'}
  if (sameEnvironment) return {fields: o.base.data.verifier_fields, from: `the built-in ${o.baseName} (same environment)`}
  const payload = o.verifierOverride?.verifier.payload
  if (payload && typeof payload === 'object') {
    const keys = Object.keys(payload).filter((k) => k !== 'responses_create_params' && k !== 'response')
    return {fields: ['responses_create_params.input', ...keys], from: 'the keys of the --verifier payload'}
  }
  throw new GymError(`the fields ${environment}'s verifier reads from each row are unknown: the Gym checkout has no example rows for it`, {
    code: 'E_VERIFIER_FIELDS_REQUIRED',
    exit: ExitCode.usage,
    hint: 'Add `verifier_fields: [responses_create_params.input, <field>, ...]` to the --verifier file (the top-level row keys the resources server reads in /verify).',
  })
}

/** The seed of Relax's own multienv-math-workplace mix: a mix made with no --mix-seed shuffles as it does. */
export const DEFAULT_MIX_SEED = 20260829

/** A further environment's dataset for a mix: its own agent's train split (any split with --smoke). */
function chooseMixDataset(o: ContractFromGymOptions, e: AdditionalEnvironment): GymDataset {
  const agent = chooseAgent(o.graph, e.agent.name)
  const train = agent.datasets.find((d) => d.type === 'train') ?? (o.smoke ? agent.datasets[0] : undefined)
  if (train) return train
  throw new GymError(`agent ${agent.id} declares no train dataset, so ${e.environment} has no rows of its own for the mix`, {
    code: 'E_USAGE',
    exit: ExitCode.usage,
    hint: `Give every environment's rows at once with --data <tasks.jsonl> (rows carrying top-level environment and config, e.g. several \`tasks export\` outputs stamped and concatenated)${agent.datasets.length > 0 ? `, or pass --smoke to mix its ${agent.datasets.map((d) => d.type).join('/')} split for a smoke run` : ''}.`,
    location: {field: '--data'},
  })
}

/** Each environment's own dataset, in the order of the recipe's environments, with the caps and seed asked for. */
function mixOf(o: ContractFromGymOptions, members: Array<{environment: string; gateway_config: string; dataset: GymDataset}>): {source: Extract<DataSource, {type: 'mix'}>; split: Split} {
  const names = members.map((m) => m.environment)
  for (const name of Object.keys(o.mixCaps ?? {})) {
    if (!names.includes(name)) throw usageError(`--mix-cap names ${name}, which is not an environment of this recipe`, `Cap one of: ${names.join(', ')}.`, {field: '--mix-cap'})
  }
  const parts: MixPart[] = members.map((m) => {
    const source = sourceOf(m.dataset)
    return {environment: m.environment, gateway_config: m.gateway_config, dataset: m.dataset.name, split: splitOf(m.dataset), source, cap: o.mixCaps?.[m.environment] ?? 0}
  })
  const notTrain = parts.filter((p) => p.split !== 'train')
  if (notTrain.length > 0 && !o.smoke) {
    throw usageError(`the ${notTrain.map((p) => `${p.environment} dataset ${p.dataset} is a ${p.split} split`).join(', and the ')}, not training data`, 'Use train datasets, or pass --smoke to accept them for a smoke run that every report will flag.')
  }
  return {source: {type: 'mix', seed: o.mixSeed ?? DEFAULT_MIX_SEED, parts}, split: notTrain.length > 0 ? notTrain[0].split : 'train'}
}

/** Relax spells Gateway config names with hyphens: workplace-assistant-v1, r2e-gym-v1. */
export function gatewayConfigName(environment: string): string {
  return `${environment.replaceAll('_', '-')}-v1`
}

function snake(id: string): string {
  return id.replaceAll('-', '_')
}

/**
 * Record an environment's contract: graph names from the Gym config, everything the
 * config does not say from the base recipe of the archetype. Names are only ever taken
 * from YAML keys, never derived from directory names.
 */
export function contractFromGym(o: ContractFromGymOptions): ContractDraft {
  const agent = chooseAgent(o.graph, o.agent)
  const resource = definedResourcesServer(o.graph, agent)
  assertPlaceable([agent, resource])
  // Data the user brings is training data because they say so; --smoke still marks it a smoke run.
  // One of Gym's own example or benchmark files stays what it is unless they say it is training data.
  const dataset: GymDataset = o.dataFile ? {...USER_DATA, jsonlFpath: o.dataFile} : chooseDataset(agent, o.dataset, o.smoke, o.exampleRows)
  const gymSplit = o.dataFile && o.dataFileSplit && o.dataFileSplit !== 'train' && !o.trainingData ? splitOf({...dataset, type: o.dataFileSplit}) : undefined
  const split = o.dataFile ? gymSplit ?? 'train' : splitOf(dataset)
  if (split !== 'train' && !o.smoke && !gymSplit) {
    throw usageError(`dataset ${dataset.name} is a ${dataset.type} split, not training data`, 'Use a train dataset, or pass --smoke to accept it for a smoke run that every report will flag.')
  }
  const added = o.modelServers ?? []
  const endpoints = o.endpoints ?? []
  // The judges and simulators of every environment, the further ones' too.
  const models = [agent, ...(o.additionalEnvironments ?? []).map((e) => chooseAgent(o.graph, e.agent.name))].flatMap((a) => checkSecondModels(o.graph, a, o.policyServes ?? [], added, endpoints))
  const {graphEnvVars, envVars, unset} = deploymentVariables(o, [agent.id, ...(resource ? [resource.id] : [])], added, endpoints, models)
  const configRoots = usedRoots(o)
  const base = structuredClone(o.base)
  const environment = resource?.id ?? agent.id
  const sameEnvironment = (resource?.implementation ?? null) === (base.gym.resources_server?.implementation ?? null) && agent.implementation === base.gym.agent.type

  let verifier = base.verifier
  let trial = base.trial
  if (o.verifierOverride) {
    verifier = o.verifierOverride.verifier
    if (o.verifierOverride.trial !== undefined) trial = o.verifierOverride.trial
  } else if (!sameEnvironment) {
    throw new GymError(`no known-correct and known-wrong outputs for ${resource?.implementation ?? agent.implementation}: the built-in ${o.baseName} verifies a different environment`, {
      code: 'E_VERIFIER_REQUIRED',
      exit: ExitCode.usage,
      hint: 'Pass --verifier <file.yaml> with a `verifier:` block (and a `trial:` block for tool or sandbox environments), in the form of recipes/*.yaml; examples/verifiers/math_with_judge.yaml in the gymrecipe repository is a commented one.',
    })
  }

  const verifierFields = chooseVerifierFields(o, sameEnvironment, environment)
  const model = o.model ?? {name: base.training.model.name, slug: base.training.model.slug, configScript: base.training.model.config_script}
  const gpus = o.gpus ?? base.training.gpus
  const more = o.additionalEnvironments ?? []
  if (more.length > 0) {
    assertDistinct([{environment, gateway_config: sameEnvironment ? base.gym.gateway_config : gatewayConfigName(environment), ...serverRefs(o.graph, agent, resource)}, ...more])
  }
  const gatewayConfig = sameEnvironment ? base.gym.gateway_config : gatewayConfigName(environment)
  const mix = more.length > 0 && !o.dataFile ? mixOf(o, [{environment, gateway_config: gatewayConfig, dataset}, ...more.map((e) => ({environment: e.environment, gateway_config: e.gateway_config, dataset: chooseMixDataset(o, e)}))]) : undefined
  if (o.mixCaps && Object.keys(o.mixCaps).length > 0 && !mix) {
    throw usageError('--mix-cap applies to a recipe of several environments that mixes their own datasets', o.dataFile ? 'Rows given with --data are trained on as they are: cap them before.' : 'Name a further environment with --agent.', {field: '--mix-cap'})
  }
  const venvDirs = [
    ...new Set([
      `responses_api_agents/${agent.implementation}`,
      ...(resource ? [`resources_servers/${resource.implementation}`] : []),
      ...more.flatMap((e) => [`responses_api_agents/${e.agent.type}`, ...(e.resources_server ? [`resources_servers/${e.resources_server.implementation}`] : [])]),
      ...added.map((server) => `responses_api_models/${server.type}`),
    ]),
  ]

  const contract: RecipeContract = {
    ...base,
    id: o.id,
    archetype: o.archetype,
    description: sameEnvironment ? base.description : `NeMo Gym environment ${environment} (agent ${agent.id}, ${agent.implementation}).`,
    gym: {
      commit: base.gym.commit,
      config_paths: o.configPaths,
      ...(configRoots.length > 0 ? {config_roots: configRoots} : {}),
      ...(envVars.length > 0 ? {env_vars: envVars.map((v) => ({name: v.name, required: v.fallback === null}))} : {}),
      environment,
      gateway_config: gatewayConfig,
      ...serverRefs(o.graph, agent, resource),
      venv_dirs: venvDirs,
      // A server left ??? (only possible when switched off) is recorded as unnamed.
      ...(more.length > 0 ? {additional_environments: more} : {}),
      ...(added.length > 0 ? {model_servers: added} : {}),
      ...(endpoints.length > 0 ? {endpoints} : {}),
      ...(unset.length > 0 ? {unset_values: unset} : {}),
      ...(models.length > 0 ? {models: models.map(({role, owner, key, server, policy, enabled}) => ({role, owner, key, server: server !== null && /^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(server) ? server : null, policy, enabled}))} : {}),
      // Only what was read from the checkout's code: an assumed include order is not recorded.
      ...(o.graph.includeOrder.assumed
        ? {}
        : {behaviour: {include_order: o.graph.includeOrder.order, waits_for_model_endpoints: o.graph.behaviour.waitsForModelEndpoints, guards_openai_version: o.graph.behaviour.guardsOpenaiVersion}}),
    },
    data: {
      ...base.data,
      dataset: mix ? 'mix' : dataset.name,
      split: mix?.split ?? split,
      source: mix ? mix.source : o.dataFile ? {type: 'file', path: o.dataFile} : sourceOf(dataset),
      raw_filename: `${snake(o.id)}_${mix?.split ?? split}.jsonl`,
      verifier_fields: verifierFields.fields,
      tools: o.examples?.hasTools ?? base.data.tools,
      strip_agent_ref: o.examples?.hasAgentRef ?? base.data.strip_agent_ref,
      smoke: (mix?.split ?? split) !== 'train' || (o.dataFile !== undefined && o.smoke),
    },
    service: {
      ...base.service,
      // Regenerating a built-in keeps its proven names; any other recipe gets its own.
      image: o.id === o.baseName ? base.service.image : `relax-nemo-gym:${o.id}`,
      container: o.id === o.baseName ? base.service.container : `nemo-gym-${o.id}`,
      gateway_port: o.ports.gateway_port,
      error_probe: sameEnvironment && base.service.error_probe ? base.service.error_probe : defaultErrorProbe(resource !== null),
    },
    ray: {
      ...base.ray,
      gcs_port: o.ports.gcs_port,
      dashboard_port: o.ports.dashboard_port,
      component_port_base: o.ports.component_port_base,
      min_worker_port: o.ports.min_worker_port,
      max_worker_port: o.ports.max_worker_port,
    },
    gateway: {
      ...base.gateway,
      readiness: resource ? base.gateway.readiness : ['agent'],
    },
    verifier: {...verifier, python: resource ? `/opt/nemo-gym/resources_servers/${resource.implementation}/.venv/bin/python` : verifier.python},
    trial,
    training: {
      ...base.training,
      model: {name: model.name, slug: model.slug, config_script: model.configScript},
      gpus,
      exp_name: `${o.id}-${model.slug.toLowerCase()}-${gpus}xgpu`,
    },
  }
  delete contract.generated
  if (o.schedule !== undefined) contract.training = withSchedule(contract.training, o.schedule)

  const notes = draftNotes(o, contract, {dataset, gymSplit, mix, verifierFields, graphEnvVars, more, added, endpoints, models})
  return {contract, notes}
}

/** The config roots the recipe's configs (or the files they include) come from. */
function usedRoots(o: ContractFromGymOptions): string[] {
  const named = new Set([...o.configPaths, ...o.graph.files].map(configRootName))
  return (o.configRoots ?? []).map((r) => r.name).filter((name) => named.has(name))
}

/**
 * What the start line reads from the environment: the config's own ${oc.env:…} values, the
 * endpoints of added model servers and moved judges, the ??? values of the servers it starts and
 * the keys references name that no config sets.
 */
function deploymentVariables(o: ContractFromGymOptions, primary: string[], added: AddedModelServer[], endpoints: AddedEndpoint[], models: SecondModel[]): {graphEnvVars: DeploymentVariable[]; envVars: DeploymentVariable[]; unset: ReturnType<typeof unsetValues>} {
  const graphEnvVars = envReferences(o.graph)
  const endpointVars = [...added.flatMap(endpointReferences), ...endpoints.flatMap(flatEndpointReferences)]
  const started = [...primary, ...(o.additionalEnvironments ?? []).flatMap((e) => [e.agent.name, ...(e.resources_server ? [e.resources_server.name] : [])])]
  // A server name an added model server binds is set by its override; a switched-off judge's
  // server left ??? is never called, so it names the policy (as Gym's own docs start it).
  const known = new Map<string, string | null>([
    ...added.flatMap((server) => server.binds.map((bind) => [bind, null] as const)),
    ...endpoints.flatMap((e) => Object.keys(e.overrides).map((field) => [field, null] as const)),
  ])
  for (const m of models.filter((x) => !x.enabled && x.server === '???')) {
    const owner = [...o.graph.agents, ...o.graph.resourcesServers].find((s) => s.id === m.owner)
    if (owner) known.set(`${owner.id}.${owner.kind}.${owner.implementation}.${m.key}.name`, POLICY_MODEL)
  }
  const unset = unsetValues(o.graph, started, new Set([...graphEnvVars, ...endpointVars].map((v) => v.name)), known)
  const fromEnv = unset.flatMap((u) => ('env' in u ? [{name: u.env, fallback: null, at: u.path}] : []))
  return {graphEnvVars, envVars: [...graphEnvVars, ...endpointVars, ...fromEnv], unset}
}
