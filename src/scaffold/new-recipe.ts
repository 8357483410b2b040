import {promises as fsp} from 'node:fs'
import path from 'node:path'

import {ARCHETYPE_BASE, listBuiltins, loadBuiltin} from '../contract/builtin.js'
import {chooseAgent, contractFromGym, type ContractDraft, type ExampleRowsSummary, type VerifierOverride} from '../contract/from-gym.js'
import {type GymAgent, loadGymGraph, type GymGraph} from '../contract/gym-config.js'
import {type ConfigRoot, type ExampleRowsFile, exampleRowsFiles, splitOfGymFile} from '../contract/gym-config/example-rows.js'
import {configRootName, configRootPath} from '../contract/gym-config/paths.js'
import {assertValidContract, contractError, type ContractProblem, contractProblems} from '../contract/load.js'
import {allocatePorts, collisions, freeGcsPort, type OccupiedRecipe} from '../contract/ports.js'
import {assertRecipeId} from '../contract/recipe-id.js'
import type {ScheduleMode} from '../contract/schedule.js'
import {ARCHETYPES, type Archetype, environmentsOf, type RecipeContract} from '../contract/types.js'
import {ExitCode, GymError, usageError} from '../errors.js'
import {isInside} from '../runtime/fs.js'
import {occupiedRecipes, recipeDir} from '../contract/checkout.js'
import {applyPlan, planRecipe, type RecipePlan} from './plan.js'
import {renderRecipe} from './render.js'
import {verifierFromRollouts} from './verifier-from-rollouts.js'
import {type SecondModelRequest, secondModelEndpoints, secondModelServers} from './second-model-servers.js'
import {type AddedEndpoint, type AddedModelServer, DEFAULT_MODEL_SERVER_TYPE} from '../contract/gym-config/model-servers.js'
import {additionalEnvironment} from '../contract/additional-environments.js'
import {planUpdate, recordedContract} from './update.js'
import {parseYamlDocument, yamlValue} from '../yaml-value.js'
import {INPUT_LIMITS, readInputText} from '../runtime/read-input.js'
import {resourcesServerOf} from '../contract/gym-config/graph.js'

export interface NewRecipeOptions {
  id: string
  gymRoot: string
  gymConfigs: string[]
  relaxRoot: string
  from?: string
  archetype?: Archetype
  agent?: string
  dataset?: string
  /** The user's own Gym task JSONL to train on (kept from recipe.yaml on --update when not given). */
  dataFile?: string
  /** The --data file is training data even when it is one of the Gym checkout's example or benchmark files. */
  trainingData?: boolean
  /** Roles in which the policy model (the model being trained) is accepted as a second model. */
  policyServes?: string[]
  /** Agents of further environments trained in the same run (kept from recipe.yaml on --update). */
  moreAgents?: string[]
  /** How actor and rollout share the GPUs (kept from recipe.yaml on --update when not given). */
  schedule?: ScheduleMode
  /** Rows kept per environment of a mix, by environment (kept from recipe.yaml on --update when not given). */
  mixCaps?: Record<string, number>
  /** The mix's shuffle seed (kept from recipe.yaml on --update when not given). */
  mixSeed?: number
  /** Judges and simulators to serve from a model server gymrecipe adds (instead of the policy). */
  secondModels?: SecondModelRequest[]
  /** Trees outside the Gym checkout holding the user's own configs: NAME → directory. */
  configRoots?: Array<{name: string; dir: string}>
  smoke: boolean
  portBase?: number
  /** The private Ray's GCS port (default: kept on --update, else the next free one from 6381). */
  gcsPort?: number
  verifierFile?: string
  model?: {name: string; slug: string; configScript: string}
  gpus?: number
  force: boolean
  /** Three-way merge with the files as last generated; unset options come from recipe.yaml. */
  update?: boolean
  dryRun: boolean
  version: string
  env?: NodeJS.ProcessEnv
}

export interface NewRecipeResult {
  recipe: string
  dir: string
  dryRun: boolean
  contract: RecipeContract
  files: Array<{name: string; action: string; reason: string; diff?: string}>
  written: string[]
  notes: string[]
  /** What the verifier still needs (no example known yet), or null. */
  verifierPending: string | null
}


/**
 * The user's own task file: it must be there and hold Gym task rows (JSON objects with
 * responses_create_params.input) — checked on the first rows now, on every row by prepare.
 */
async function summarizeDataFile(file: string): Promise<ExampleRowsSummary & {sample: unknown[]}> {
  const text = await readInputText(file, {what: 'the --data file', maxBytes: INPUT_LIMITS.dataSample, strictText: false, head: true, hint: 'Pass a Gym task JSONL, e.g. the output of `gymrecipe tasks export`.'})
  if (text === undefined) throw usageError(`--data ${file} does not exist`, 'Pass a Gym task JSONL, e.g. the output of `gymrecipe tasks export`.', {field: '--data'})
  const summary = summarizeRows(text)
  if (summary.tasks === 0) {
    throw usageError(`--data ${file} holds no Gym task rows (a JSON object with responses_create_params.input) in its first ${summary.read} line(s)`, 'Each line must be a Gym task, as `gymrecipe tasks export` writes them.', {field: '--data'})
  }
  return {...summary.rows, sample: summary.sample}
}

/** The first sampled row of --data that lacks a field the verifier reads, or undefined. */
function rowMissingField(sample: unknown[], fields: string[]): {line: number; field: string} | undefined {
  for (const [index, row] of sample.entries()) {
    for (const field of fields) {
      let node: unknown = row
      for (const part of field.split('.')) node = node && typeof node === 'object' ? (node as Record<string, unknown>)[part] : undefined
      if (node === undefined || node === null) return {line: index + 1, field}
    }
  }
  return undefined
}

/**
 * Fields, tool use and task rows among the first 200 non-empty lines of a JSONL text. A field
 * counts only when every row carries it (not null): one an example row may lack is no field the
 * verifier can demand of every training row.
 */
function summarizeRows(text: string): {rows: ExampleRowsSummary; tasks: number; read: number; sample: unknown[]} {
  const seen = new Map<string, number>()
  let hasTools = false
  let hasAgentRef = false
  let tasks = 0
  let read = 0
  const sample: unknown[] = []
  for (const line of text.split('\n')) {
    if (!line.trim()) continue
    if (++read > 200) break
    let row: {responses_create_params?: {tools?: unknown; input?: unknown}} & Record<string, unknown>
    try {
      row = JSON.parse(line.replace(/^\uFEFF/, ''))
    } catch {
      continue
    }
    if (!row || typeof row !== 'object' || Array.isArray(row)) continue
    sample.push(row)
    for (const [key, value] of Object.entries(row)) if (value !== null) seen.set(key, (seen.get(key) ?? 0) + 1)
    const params = row.responses_create_params
    if (params && typeof params === 'object' && params.input !== undefined) tasks++
    if (Array.isArray(params?.tools) && params.tools.length > 0) hasTools = true
    if ('agent_ref' in row) hasAgentRef = true
  }
  const fields = [...seen].filter(([, count]) => count === sample.length).map(([key]) => key)
  return {rows: {fields, hasTools, hasAgentRef}, tasks, read: Math.min(read, 200), sample}
}

/** Top-level fields and tool use of the environment's example rows (the first file that has rows), read from the Gym checkout. */
export async function summarizeExamples(files: ExampleRowsFile[]): Promise<ExampleRowsSummary | undefined> {
  for (const example of files) {
    const text = await fsp.readFile(example.file, 'utf8').catch(() => undefined)
    if (text === undefined) continue
    const {rows} = summarizeRows(text)
    if (rows.fields.length > 0) return rows
  }
  return undefined
}

/**
 * The config roots of this recipe: given now, else those recipe.yaml names, their paths from the
 * environment (env.sh exports them). A path is never recorded in recipe.yaml.
 */
function chooseConfigRoots(given: Array<{name: string; dir: string}>, recorded: string[], env: NodeJS.ProcessEnv): Array<{name: string; dir: string}> {
  const roots = [...given]
  for (const name of recorded) {
    if (roots.some((r) => r.name === name)) continue
    const dir = env[name]
    if (!dir) throw usageError(`recipe.yaml loads configs from ${name}, whose path is not known here`, `Pass --config-root ${name}=<directory> (or export ${name}, e.g. by sourcing the recipe's env.sh).`, {field: '--config-root'})
    roots.push({name, dir: path.resolve(dir)})
  }
  // The path becomes an env.sh default inside double quotes: plain path characters only.
  for (const r of roots) {
    if (!/^\/(?!.*(?:^|\/)\.\.(?:\/|$))[A-Za-z0-9_./-]+$/.test(r.dir)) throw usageError(`--config-root ${r.name}=${JSON.stringify(r.dir)}: the path may hold only letters, digits and _ . / -`, 'Use (or link) a directory whose absolute path has no spaces, quotes or shell characters.', {field: '--config-root'})
  }
  return roots
}

/**
 * A relative --gym-config that the Gym checkout does not hold but the working directory does,
 * inside a config root the user named (`--config-root MY_ENV_ROOT=my-env --gym-config
 * my-env/configs/x.yaml`), is that file; any other path stays relative to --gym-root.
 */
async function inConfigRoot(gymRoot: string, roots: Array<{name: string; dir: string}>, config: string): Promise<string> {
  if (path.isAbsolute(config) || configRootName(config) !== undefined) return config
  const here = path.resolve(config)
  if (!roots.some((r) => isInside(path.resolve(r.dir), here))) return config
  const inGym = await fsp.stat(path.resolve(gymRoot, config)).then(() => true, () => false)
  const local = await fsp.stat(here).then((s) => s.isFile(), () => false)
  return !inGym && local ? here : config
}

/** A --gym-config as recipe.yaml records it: relative to the Gym root, or `${NAME}/…` in a config root. */
function recordedConfigPath(gymRoot: string, roots: Array<{name: string; dir: string}>, config: string): string {
  if (configRootName(config) !== undefined) return config
  const abs = path.resolve(gymRoot, config)
  const root = roots.find((r) => isInside(path.resolve(r.dir), abs))
  if (root) return configRootPath(root.name, path.relative(path.resolve(root.dir), abs))
  return path.relative(path.resolve(gymRoot), abs)
}

/**
 * `???` values left in the servers the recipe starts, and keys references name that no config
 * sets: Gym refuses to start until each is set.
 * Said now, with where each is written and the env.sh variable that sets it, rather than at
 * `gym env start`.
 */
function unsetValueNotes(graph: GymGraph, contract: RecipeContract): string[] {
  const started = environmentsOf(contract).flatMap((e) => [e.agent.name, ...(e.resources_server ? [e.resources_server.name] : [])])
  // A judge's server name that a model server gymrecipe adds is bound to needs nothing more.
  const bound = new Set((contract.gym.model_servers ?? []).flatMap((server) => server.binds))
  const references = graph.problems.filter((p) => p.kind === 'unset-reference' && p.key)
  const referenceNotes = [...new Set(references.map((p) => p.key!))].flatMap((key) => {
    const set = contract.gym.unset_values?.find((u) => u.path === key)
    if (!set || !('env' in set)) return []
    const at = references.filter((p) => p.key === key).map((p) => `${p.file ?? 'the config'}${p.line ? `:${p.line}` : ''}`)
    return [`value to give before start: \${${key}} is read at ${at.join(', ')} and no loaded config sets it (Gym expects it in env.yaml); set ${set.env} in env.sh (the start script passes it as ++${key})`]
  })
  return [...referenceNotes, ...graph.problems
    .flatMap((p) => (p.kind === 'unset-value' && p.key && started.some((id) => p.pointer.startsWith(`/${id}/`)) ? [{p, key: p.key}] : []))
    .filter(({key}) => !bound.has(key))
    .map(({p, key}) => {
      const where = `${p.file ?? 'the config'}${p.line ? `:${p.line}` : ''}`
      const set = contract.gym.unset_values?.find((u) => u.path === key)
      if (set && 'value' in set) return `${key} is ??? in ${where}: its ${key.split('.').at(-2)} is switched off and never called, so the start script names ${set.value} there (Gym refuses to start with any ??? left)`
      if (set) return `value to give before start: ${key} is ??? in ${where}; set ${set.env} in env.sh (the start script passes it as ++${key}, and mounts a host path given there read-only at the same path)`
      return `value to give before start: ${key} is ??? in ${where}; the generated start script cannot set it (add ++${key}=<value> to its gym env start line, or set it in a config merged after this one)`
    })]
}

/** Contract problems that come from the --verifier file, reported against that file. */
function verifierFileError(file: string, problems: ContractProblem[]): GymError {
  return new GymError(`the --verifier file does not describe a valid verifier:\n  ${problems.map((p) => p.message).join('\n  ')}`, {
    code: 'E_VERIFIER_INVALID',
    exit: ExitCode.usage,
    hint: problems[0].hint ?? 'Copy the verifier block of recipes/calendar.yaml and replace its task and outputs.',
    location: {file},
    details: {problems: problems.map((p) => ({...p, file}))},
  })
}

async function readVerifierOverride(file: string): Promise<VerifierOverride> {
  const text = await readInputText(file, {what: 'the --verifier file', maxBytes: INPUT_LIMITS.callConfig, strictText: true, hint: 'Pass a YAML file with verifier: (and trial:) blocks.'})
  if (text === undefined) throw usageError(`cannot read --verifier file ${file}: ENOENT`)
  const doc = parseYamlDocument(text)
  if (doc.errors.length > 0) throw usageError(`${file}: invalid YAML: ${doc.errors[0].message.split('\n')[0]}`)
  const parsed = yamlValue(doc, file)
  // The blocks are checked in full with the whole contract; here only that they are there.
  const value = (parsed && typeof parsed === 'object' ? parsed : {}) as Partial<VerifierOverride> & {verifier_fields?: unknown}
  if (!value.verifier || typeof value.verifier !== 'object' || Array.isArray(value.verifier)) {
    throw usageError(`${file} must hold a "verifier:" block (and optionally "trial:")`, 'Copy the verifier block of recipes/calendar.yaml and replace its task and outputs.')
  }
  const fields = value.verifier_fields
  if (fields !== undefined && (!Array.isArray(fields) || !fields.every((f): f is string => typeof f === 'string'))) {
    throw usageError(`${file}: verifier_fields must be a list of row keys`, 'e.g. verifier_fields: [responses_create_params.input, question, expected_answer]')
  }
  return {verifier: value.verifier, ...(value.trial === undefined ? {} : {trial: value.trial}), ...(fields === undefined ? {} : {verifier_fields: fields})}
}

function portsFromBase(base: number): ReturnType<typeof allocatePorts> {
  return {gateway_port: base, gcs_port: 0, component_port_base: base + 10, dashboard_port: base + 17, min_worker_port: base + 20, max_worker_port: base + 99}
}

/**
 * An explicit --port-base wins (collisions are reported later); otherwise keep the base recipe's
 * proven layout when nothing in the checkout uses it, else pick a free block.
 */
function choosePorts(base: RecipeContract, others: OccupiedRecipe[], portBase: number | undefined): ReturnType<typeof allocatePorts> {
  if (portBase !== undefined) return {...portsFromBase(portBase), gcs_port: freeGcsPort(others)}
  const proven = {gateway_port: base.service.gateway_port, gcs_port: base.ray.gcs_port, dashboard_port: base.ray.dashboard_port, component_port_base: base.ray.component_port_base, min_worker_port: base.ray.min_worker_port, max_worker_port: base.ray.max_worker_port}
  return collisions({service: base.service, ray: base.ray}, others).length === 0 ? proven : allocatePorts(others)
}

/**
 * The model servers and endpoint fields gymrecipe adds for every environment's judges and
 * simulators, the further ones' too: as --second-model asks, else as recipe.yaml recorded them.
 */
async function servedSecondModels(o: NewRecipeOptions, graph: GymGraph, agents: GymAgent[], recorded: Partial<RecipeContract> | undefined): Promise<{modelServers: AddedModelServer[]; endpoints: AddedEndpoint[]}> {
  const requests = o.secondModels ?? [
    ...(recorded?.gym?.model_servers ?? []).map((server) => ({role: server.role, type: server.type})),
    ...(recorded?.gym?.endpoints ?? []).map((endpoint) => ({role: endpoint.role, type: DEFAULT_MODEL_SERVER_TYPE})),
  ]
  // Each call extends the servers added so far: a judge of the same role shares its server.
  let modelServers: AddedModelServer[] = []
  for (const agent of agents) modelServers = await secondModelServers(o.gymRoot, graph, agent, requests, modelServers)
  let endpoints: AddedEndpoint[] = []
  for (const agent of agents) endpoints = secondModelEndpoints(graph, agent, requests, modelServers, endpoints)
  return {modelServers, endpoints}
}

/** Plan (and unless dry-run, write) a recipe folder from a Gym config and a base contract. */
export async function newRecipe(o: NewRecipeOptions): Promise<NewRecipeResult> {
  assertRecipeId(o.id)
  if (o.archetype && !ARCHETYPES.includes(o.archetype)) throw usageError(`unknown archetype ${o.archetype}`, `Choose one of: ${ARCHETYPES.join(', ')}`)
  const {relaxRoot, models} = await relaxCheckout(o.relaxRoot, o.model)
  const dir = recipeDir(relaxRoot, o.id)
  if (!isInside(relaxRoot, dir)) throw usageError(`recipe folder ${dir} escapes ${relaxRoot}`)

  // An update starts from what recipe.yaml records for every option not given again.
  const onDisk = o.update === true ? await recordedContract(dir) : undefined
  const recorded = onDisk?.contract
  const givenConfigs = o.gymConfigs.length > 0 ? o.gymConfigs : (recorded?.gym?.config_paths ?? [])
  if (givenConfigs.length === 0) throw usageError('--gym-config is required', 'Pass the Gym config path relative to --gym-root, e.g. --gym-config environments/calendar/config.yaml.', {field: '--gym-config'})
  const recordedModel = recorded?.training?.model
  const model = o.model ?? (recordedModel ? {name: recordedModel.name, slug: recordedModel.slug, configScript: recordedModel.config_script} : undefined)

  const configRoots = chooseConfigRoots(o.configRoots ?? [], recorded?.gym?.config_roots ?? [], o.env ?? {})
  const gymConfigs = await Promise.all(givenConfigs.map((c) => inConfigRoot(o.gymRoot, configRoots, c)))
  const graph = await loadGymGraph(o.gymRoot, gymConfigs, {extraRoots: configRoots, relaxPolicy: true})
  const agent = chooseAgent(graph, o.agent ?? recorded?.gym?.agent?.name)
  const archetypeWanted = o.archetype ?? recorded?.archetype
  // Nothing asked for: the built-in of this environment's implementation knows it best (its verifier, trial and values).
  const sameImplementation = o.from ?? recorded?.generated?.from ?? archetypeWanted ? undefined : (await builtinFor(graph, agent))?.name
  const baseName = o.from ?? recorded?.generated?.from ?? sameImplementation ?? ARCHETYPE_BASE[archetypeWanted ?? 'simple-agent']
  const base = await loadBuiltin(baseName)
  const archetype = archetypeWanted ?? base.archetype
  const recordedFile = recorded?.data?.source?.type === 'file' ? recorded.data.source.path : undefined
  const recordedMix = recorded?.data?.source?.type === 'mix' ? recorded.data.source : undefined
  const baseMix = base.data.source.type === 'mix' ? base.data.source : undefined
  const knownMix = recordedMix ?? baseMix
  const dataFile = o.dataFile !== undefined ? path.resolve(o.dataFile) : o.dataset === undefined ? recordedFile : undefined
  // The rows the recipe trains on tell the verifier fields best: the user's own file first.
  const userRows = dataFile ? await summarizeDataFile(dataFile) : undefined
  const exampleFiles = await exampleRowsFiles(o.gymRoot, graph, agent.id, configRoots)
  // Rows of several environments tell no one environment's fields: each takes its own example rows.
  const several = (o.moreAgents ?? recorded?.gym?.additional_environments ?? []).length > 0
  const examples = (several ? undefined : userRows) ?? (await summarizeExamples(exampleFiles))
  const verifierOverride = o.verifierFile ? await readVerifierOverride(o.verifierFile) : undefined
  const moreAgents = (o.moreAgents ?? (recorded?.gym?.additional_environments ?? []).map((e) => e.agent.name)).map((name) => chooseAgent(graph, name))
  const additionalEnvironments = await Promise.all(
    moreAgents.map(async (other) => {
      const known = (await builtinFor(graph, other))?.contract
      // No built-in knows it: its own example rollouts, graded by its real grader, give its verifier and trial.
      const fromRollouts = known ? undefined : await verifierFromRollouts(o.gymRoot, graph, other.id, base, configRoots)
      const own = fromRollouts && !('none' in fromRollouts) ? fromRollouts.override : undefined
      return additionalEnvironment(graph, {agent: other.id, examples: await summarizeExamples(await exampleRowsFiles(o.gymRoot, graph, other.id, configRoots)), known, own}, base)
    }),
  )
  // Caps carried over from a built-in or recipe.yaml only for environments this recipe trains.
  const graphEnvironments = new Set([resourcesServerOf(graph, agent)?.id ?? agent.id, ...additionalEnvironments.map((e) => e.environment)])
  const {modelServers, endpoints} = await servedSecondModels(o, graph, [agent, ...moreAgents], recorded)

  const others = await occupiedRecipes(relaxRoot, o.id)
  const recordedPorts = o.portBase === undefined && recorded?.service && recorded.ray ? {gateway_port: recorded.service.gateway_port, gcs_port: recorded.ray.gcs_port, dashboard_port: recorded.ray.dashboard_port, component_port_base: recorded.ray.component_port_base, min_worker_port: recorded.ray.min_worker_port, max_worker_port: recorded.ray.max_worker_port} : undefined
  // A new --port-base moves the recipe's block; its private Ray GCS port stays where it was.
  const chosen = recordedPorts ?? choosePorts(base, others, o.portBase)
  const kept = o.update === true && recorded?.ray?.gcs_port !== undefined ? {...chosen, gcs_port: recorded.ray.gcs_port} : chosen
  const ports = o.gcsPort === undefined ? kept : {...kept, gcs_port: o.gcsPort}

  const draftOptions: Parameters<typeof contractFromGym>[0] = {
    id: o.id,
    archetype,
    base,
    baseName,
    graph,
    configPaths: gymConfigs.map((c) => recordedConfigPath(o.gymRoot, configRoots, c)),
    configRoots,
    agent: agent.id,
    dataset: dataFile ? undefined : (o.dataset ?? (recordedMix ? recordedMix.parts[0]?.dataset : recorded?.data?.dataset)),
    dataFile,
    dataFileSplit: dataFile ? splitOfGymFile(o.gymRoot, graph, agent.id, dataFile) : undefined,
    trainingData: o.trainingData ?? (recorded?.data?.source?.type === 'file' && recorded.data.split === 'train' && !recorded.data.smoke),
    exampleRows: dataFile || exampleFiles.length === 0 ? undefined : exampleFiles[0].file,
    smoke: o.smoke || (recorded?.data?.smoke ?? false),
    modelServers,
    endpoints,
    additionalEnvironments,
    schedule: o.schedule ?? recorded?.training?.schedule?.mode,
    // Caps: the base's (a built-in of several environments), then the recorded ones, then those given again, environment by environment.
    mixCaps: (several && knownMix && o.dataFile === undefined) || o.mixCaps ? {...capsOf(baseMix, graphEnvironments), ...capsOf(recordedMix, graphEnvironments), ...o.mixCaps} : undefined,
    mixSeed: o.mixSeed ?? recordedMix?.seed ?? baseMix?.seed,
    policyServes: o.policyServes ?? [...new Set((recorded?.gym?.models ?? []).filter((m) => m.policy && m.enabled).map((m) => m.role))],
    examples,
    verifierOverride,
    ports,
    model,
    gpus: o.gpus ?? recorded?.training?.gpus,
  }
  const draft = await draftContract(draftOptions, o.gymRoot, graph, agent.id, base, configRoots)
  draft.notes.push(...unsetValueNotes(graph, draft.contract))
  const fresh: RecipeContract = {...draft.contract, ...(recorded?.files ? {files: recorded.files} : {}), generated: {gymrecipe_version: o.version, from: baseName, files: {}}}
  let contract = fresh
  const problems = contractProblems(contract, `${dir}/recipe.yaml`)
  const clash = collisions(contract, others).map((c) => ({file: `${dir}/recipe.yaml`, line: null, pointer: c.pointer, message: `${c.pointer}: ${c.message}`, expected: 'ports no other recipe in the checkout uses', hint: 'Omit --port-base to let gymrecipe pick a free block.'}))
  if (o.verifierFile) {
    const fromOverride = problems.filter((p) => p.pointer === '/verifier' || p.pointer?.startsWith('/verifier/') || p.pointer === '/trial' || p.pointer?.startsWith('/trial/'))
    if (fromOverride.length > 0) throw verifierFileError(o.verifierFile, fromOverride)
  }
  // Caught now rather than by prepare on the cluster: rows the verifier cannot grade.
  const missing = userRows && dataFile && !several ? rowMissingField(userRows.sample, contract.data.verifier_fields) : undefined
  if (missing && dataFile) {
    throw usageError(`--data ${dataFile}: row ${missing.line} has no ${missing.field}, which the ${contract.gym.environment} verifier reads from every row`, `Give rows carrying ${contract.data.verifier_fields.join(', ')} (the fields this environment's resources server grades with), or pick the recipe that matches your data's environment.`, {field: '--data'})
  }
  if (problems.length > 0 && onDisk === undefined) throw valuesNotAllowed(o.id, contract, problems, gymConfigs, o.model !== undefined)
  if (problems.length + clash.length > 0) throw contractError(`${dir}/recipe.yaml`, [...problems, ...clash])
  assertValidContract(contract)

  draft.notes.push(...gymCheckoutNotes(graph))
  if (!models) {
    draft.notes.push(`${relaxRoot} has no scripts/models: it does not look like a Relax checkout, so prepare, start and train will not find the scripts the recipe sources; point --relax-root at your Relax checkout`)
  }
  const source = contract.data.source
  for (const one of source.type === 'mix' ? source.parts.map((p) => p.source) : [source]) {
    if ((one.type === 'bundled' || one.type === 'benchmark') && !(await fsp.stat(path.resolve(o.gymRoot, one.path)).catch(() => undefined))) {
      draft.notes.push(`${one.path} is not in the Gym checkout yet; it is produced by the environment's prepare step (e.g. its prepare.py) and must exist in the image before ${'`'}prepare${'`'} runs`)
    }
  }
  const deployment = {configRootDirs: Object.fromEntries(configRoots.map((r) => [r.name, r.dir]))}
  let plan: RecipePlan
  // onDisk is there exactly when --update was asked for (recordedContract refuses a folder without one).
  if (onDisk) {
    const update = await planUpdate(dir, onDisk, fresh, o.env ?? process.env, deployment)
    plan = update.plan
    contract = update.contract
    draft.notes.push(...update.notes)
  } else {
    plan = await planRecipe(dir, await renderRecipe(contract, deployment), contract, o.force)
  }
  const written = o.dryRun ? [] : await applyPlan(plan)
  return {
    recipe: o.id,
    dir,
    dryRun: o.dryRun,
    contract,
    files: plan.files.map((f) => ({name: f.name, action: f.action, reason: f.reason, ...(f.diff ? {diff: f.diff} : {})})),
    written,
    notes: draft.notes,
    verifierPending: contract.verifier.kind === 'pending' ? (contract.verifier.pending ?? null) : null,
  }
}

/** The Relax checkout the recipe goes into, and the model config scripts it has (undefined: none, e.g. not a Relax checkout). */
async function relaxCheckout(given: string, model: NewRecipeOptions['model']): Promise<{relaxRoot: string; models: string[] | undefined}> {
  const relaxRoot = path.resolve(given)
  const relaxStat = await fsp.stat(relaxRoot).catch(() => undefined)
  if (!relaxStat?.isDirectory()) {
    throw new GymError(`Relax checkout ${relaxRoot} ${relaxStat ? 'is not a directory' : 'does not exist'}`, {code: 'E_RELAX_ROOT', exit: ExitCode.usage, hint: 'Pass --relax-root pointing at your Relax checkout.'})
  }
  const modelsDir = path.join(relaxRoot, 'scripts', 'models')
  const models = await fsp.readdir(modelsDir).catch(() => undefined)
  if (model && models && !models.includes(model.configScript)) {
    const known = models.filter((m) => m.endsWith('.sh')).sort()
    throw new GymError(`model config ${model.configScript} is not in ${modelsDir}`, {
      code: 'E_MODEL_CONFIG',
      exit: ExitCode.usage,
      hint: known.length > 0 ? `Pass --model-config with one of: ${known.join(', ')}` : `Add the model's config script to ${modelsDir}, or pass --model-config.`,
      location: {field: '--model-config'},
    })
  }
  return {relaxRoot, models}
}

/**
 * The contract drafted from the Gym config. No built-in knows this environment and no --verifier
 * file was given: its own example rollouts, graded by its real grader, give the known-correct and
 * known-wrong outputs; with none, the recipe is made all the same with the verifier pending.
 */
async function draftContract(draftOptions: Parameters<typeof contractFromGym>[0], gymRoot: string, graph: GymGraph, agentId: string, base: RecipeContract, roots: ConfigRoot[]): Promise<ContractDraft> {
  let draft: ContractDraft
  try {
    draft = contractFromGym(draftOptions)
  } catch (error) {
    // No built-in knows this environment and no --verifier file was given: its own example
    // rollouts, graded by its real grader, give the known-correct and known-wrong outputs.
    if (!(error instanceof GymError) || error.code !== 'E_VERIFIER_REQUIRED') throw error
    const fromRollouts = await verifierFromRollouts(gymRoot, graph, agentId, base, roots)
    if ('none' in fromRollouts) {
      // The recipe is made all the same (its files and data do not depend on the examples); the
      // verifier stays pending, and the service rung and train's pre-flight refuse until it is given.
      const agent = chooseAgent(graph, agentId)
      const environment = resourcesServerOf(graph, agent)?.implementation ?? agent.implementation
      const pending = `no known-correct and known-wrong outputs for ${environment}: no built-in knows this environment, and ${fromRollouts.none}. Write a \`verifier:\` block (and a \`trial:\` block for tool or sandbox environments) in the form of recipes/*.yaml; examples/verifiers/math_with_judge.yaml in the gymrecipe repository is a commented one.`
      draft = contractFromGym({...draftOptions, verifierOverride: {verifier: pendingVerifier(base, pending), trial: null}})
    } else {
      draft = contractFromGym({...draftOptions, verifierOverride: fromRollouts.override})
      draft.notes.push(`verifier examples from ${fromRollouts.from}; the service rung proves them against the running grader`)
      if (fromRollouts.override.trial === null) draft.notes.push('no trial block: the correct rollout is not a text answer to a row of the example data, so there is nothing to script through the Gateway; add a trial: block with --verifier to climb the trial rung')
    }
  }
  return draft
}

/** A verifier with no example yet: the recipe is still made, and what to write is recorded. */
function pendingVerifier(base: RecipeContract, pending: string): RecipeContract['verifier'] {
  return {kind: 'pending', pending, python: base.verifier.python, task: null, payload: null, correct: [], wrong: [], success_reward: 1}
}

/** What the Gym checkout does that the recipe depends on: its include order, and behaviour newer than Relax's pin. */
function gymCheckoutNotes(graph: GymGraph): string[] {
  const notes: string[] = []
  const decided = graph.problems.find((p) => p.message.startsWith('the include order decides'))
  if (graph.includeOrder.assumed || decided) notes.push(`Gym config include order: ${graph.includeOrder.how}`)
  if (decided) notes.push(`${decided.file ? `${decided.file}${decided.line ? `:${decided.line}` : ''}: ` : ''}${decided.message}`)
  if (graph.behaviour.waitsForModelEndpoints) {
    const urls = graph.models.map((m) => `${m.id} (${String(m.fields.base_url ?? m.fields.openai_base_url ?? 'no base_url')})`)
    notes.push(`this Gym checkout's \`gym env start\` waits for every model endpoint of the config to answer and stops if one never does: ${urls.length > 0 ? urls.join(', ') : 'none in this config'} must be up before \`start\``)
  }
  if (graph.behaviour.guardsOpenaiVersion) notes.push("this Gym checkout refuses an openai package outside its constraint at parse time unless allow_openai_version_skew=true: the image must install Gym's pinned openai")
  return notes
}

/** Where a value of a contract being made (no recipe.yaml yet) came from, by its pointer. */
function originOf(pointer: string, gymConfigs: string[], modelFromFlags: boolean, dataFromFlag = false): string {
  if (dataFromFlag && pointer.startsWith('/data/source')) return '--data'
  if (/^\/(?:service\/gateway_port|ray\/\w*port)/.test(pointer)) return 'the port block (--port-base, --gcs-port)'
  if (modelFromFlags && pointer === '/training/model/name') return '--model'
  if (modelFromFlags && pointer === '/training/model/slug') return '--model-slug (or --model, lower-cased)'
  if (modelFromFlags && pointer === '/training/model/config_script') return '--model-config (or --model, lower-cased)'
  if (modelFromFlags && pointer === '/training/exp_name') return 'the model slug'
  if (pointer.startsWith('/gym') || pointer.startsWith('/data') || pointer.startsWith('/verifier')) return `the Gym config ${gymConfigs.join(', ')}`
  return 'the options and the Gym config'
}

function valueAt(contract: unknown, pointer: string): unknown {
  let at: unknown = contract
  for (const key of pointer.split('/').slice(1)) at = at && typeof at === 'object' ? (at as Record<string, unknown>)[key.replaceAll('~1', '/').replaceAll('~0', '~')] : undefined
  return at
}

/**
 * A recipe that cannot be made from these options and this Gym config: each value that is not
 * allowed, with where it came from (a flag, a config key), not a recipe.yaml that does not exist.
 */
function valuesNotAllowed(id: string, contract: RecipeContract, problems: ContractProblem[], gymConfigs: string[], modelFromFlags: boolean): GymError {
  const lines = problems.map((p) => {
    const value = valueAt(contract, p.pointer)
    const shown = value === undefined || typeof value === 'object' ? '' : ` ${JSON.stringify(value)}`
    // An invariant says more than the schema's expectation (what it overlaps, which range).
    const why = p.message.startsWith(`${p.pointer} `) ? p.message.slice(p.pointer.length + 1) : p.message.startsWith(`${p.pointer}: `) ? p.message.slice(p.pointer.length + 2) : p.message
    return `${p.pointer}${shown} (from ${originOf(p.pointer, gymConfigs, modelFromFlags, contract.data?.source?.type === 'file')}): ${why}`
  })
  return new GymError(`cannot make recipe ${id}: ${problems.length} value(s) are not allowed:\n  ${lines.join('\n  ')}`, {
    code: 'E_CONTRACT_INVALID',
    exit: ExitCode.usage,
    hint: problems[0]?.hint,
    location: {pointer: problems[0]?.pointer},
    details: {problems: problems.map((p) => ({pointer: p.pointer, expected: p.expected, from: originOf(p.pointer, gymConfigs, modelFromFlags, contract.data?.source?.type === 'file')}))},
  })
}

/** The caps a mix records, for the environments named. */
function capsOf(mix: {parts: Array<{environment: string; cap: number}>} | undefined, environments: Set<string>): Record<string, number> {
  return Object.fromEntries((mix?.parts ?? []).filter((p) => p.cap > 0 && environments.has(p.environment)).map((p) => [p.environment, p.cap]))
}

/** The built-in recipe for the same environment implementation as this agent, if one exists. */
async function builtinFor(graph: GymGraph, agent: GymAgent): Promise<{name: string; contract: RecipeContract} | undefined> {
  const implementation = resourcesServerOf(graph, agent)?.implementation ?? null
  for (const name of await listBuiltins()) {
    const contract = await loadBuiltin(name)
    // A built-in of several environments knows the mix, not one environment better than its own built-in.
    if ((contract.gym.additional_environments?.length ?? 0) > 0) continue
    if (contract.gym.agent.type === agent.implementation && (contract.gym.resources_server?.implementation ?? null) === implementation) return {name, contract}
  }
  return undefined
}
