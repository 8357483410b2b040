import type {DatasetSource, GymAgent, GymDataset, GymGraph, GymProblem, GymServer} from './types.js'

const NONE = '-'

/** The graph as indented text for people: files, resources servers, agents with datasets, models, problems. */
export function renderGraph(graph: GymGraph, gymRoot: string): string[] {
  // A config key or value may hold a line break: shown as \n, it cannot pass for a line of its own.
  return renderLines(graph, gymRoot).map((line) => line.replaceAll('\n', '\\n'))
}

function renderLines(graph: GymGraph, gymRoot: string): string[] {
  return [
    `Gym root  ${gymRoot}`,
    ...graph.files.map((file, index) => `${index === 0 ? 'Files    ' : '         '} ${file}`),
    '          (merge order: later files override earlier ones)',
    `Includes  ${graph.includeOrder.how}`,
    ...(graph.behaviour.waitsForModelEndpoints ? ['Start     `gym env start` of this checkout waits for every model endpoint to answer before it serves'] : []),
    ...(graph.behaviour.guardsOpenaiVersion ? ['Parse     this checkout refuses an openai outside its constraint unless allow_openai_version_skew=true'] : []),
    '',
    ...section('Resources servers', graph.resourcesServers, (server) => renderServer(server, graph)),
    '',
    ...section('Agents', graph.agents, (agent) => renderAgent(agent as GymAgent, graph)),
    '',
    ...section('Model servers', graph.models, (server) => renderServer(server, graph)),
    ...renderProblems(graph.problems),
  ]
}

function section<T>(title: string, items: T[], render: (item: T) => string[]): string[] {
  if (items.length === 0) return [`${title} (0)`, '  none in these configs']
  return [`${title} (${items.length})`, ...items.flatMap(render)]
}

/** An instance that inherits another takes a command-line host and port only through its source. */
function inherits(server: GymServer, graph: GymGraph): string {
  const source = graph.inheritedFrom[server.id]
  return source ? `  (inherits ${source}: its host and port are set there)` : ''
}

function renderServer(server: GymServer, graph: GymGraph): string[] {
  return [`  ${server.id}  implementation: ${server.implementation}${inherits(server, graph)}`]
}

function renderAgent(agent: GymAgent, graph: GymGraph): string[] {
  const defined = (id: string | null, servers: GymServer[]) =>
    id === null ? NONE : servers.some((server) => server.id === id) ? id : `${id} (not defined in these configs)`
  return [
    `  ${agent.id}  type: ${agent.implementation}${inherits(agent, graph)}`,
    `    resources_server  ${defined(agent.resourcesServer, graph.resourcesServers)}`,
    `    model_server      ${defined(agent.modelServer, graph.models)}`,
    `    max_steps         ${agent.maxSteps ?? NONE}`,
    `    datasets (${agent.datasets.length})`,
    ...agent.datasets.flatMap(renderDataset),
  ]
}

function renderDataset(dataset: GymDataset): string[] {
  const lines = [
    `      ${dataset.name || '(no name)'}  [${dataset.type || 'no type'}]`,
    `        jsonl_fpath     ${dataset.jsonlFpath ?? NONE}`,
    `        license         ${dataset.license ?? NONE}`,
  ]
  if (dataset.sources.length === 0) lines.push(`        source          ${NONE}`)
  dataset.sources.forEach((source, index) => lines.push(`        ${(index === 0 ? 'source' : 'fallback').padEnd(16)}${describeSource(source, dataset.type)}`))
  if (dataset.numRepeats !== null) lines.push(`        num_repeats     ${dataset.numRepeats}`)
  if (dataset.promptConfig !== null) lines.push(`        prompt_config   ${dataset.promptConfig}`)
  if (dataset.prepareScript !== null) lines.push(`        prepare_script  ${dataset.prepareScript}`)
  return lines
}

/** Without artifact_fpath, Gym downloads the HF split named after the dataset type. */
function describeSource(source: DatasetSource, type: string): string {
  const artifact = source.artifactFpath === null ? (source.type === 'huggingface' ? `split ${type}` : 'no artifact') : `artifact ${source.artifactFpath}`
  const where = source.type === 'huggingface' ? `huggingface ${source.repoId}` : `gitlab ${source.datasetName} ${source.version}`
  return `${where}, ${artifact} (written as ${source.form})`
}

function renderProblems(problems: GymProblem[]): string[] {
  if (problems.length === 0) return []
  const errors = problems.filter((problem) => problem.severity === 'error').length
  return [
    '',
    `Problems (${errors} error${errors === 1 ? '' : 's'}, ${problems.length - errors} warning${problems.length - errors === 1 ? '' : 's'})`,
    ...problems.map((problem) => {
      const where = problem.file ? `${problem.file}${problem.line === undefined ? '' : `:${problem.line}`}` : problem.pointer
      return `  ${problem.severity.padEnd(7)} ${where}  ${problem.message}`
    }),
  ]
}
