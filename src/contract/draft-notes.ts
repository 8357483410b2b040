/** The notes `new` prints about a drafted contract: what was chosen for the user, and why. */
import type {GymDataset} from './gym-config.js'
import {endpointVariables, type AddedEndpoint} from './gym-config/model-servers.js'
import type {SecondModel} from './gym-config/second-models.js'
import type {ContractFromGymOptions} from './from-gym.js'
import {type DeploymentVariable, servedByAdded, servedByEndpoint} from './second-model-rules.js'
import type {DataSource, RecipeContract} from './types.js'
import {describeMix, environmentPorts, modelServerPorts} from './types.js'

/** What the user should know about the choices made for them, one note each. */
export function draftNotes(
  o: ContractFromGymOptions,
  contract: RecipeContract,
  d: {
    dataset: GymDataset
    gymSplit: string | undefined
    mix: {source: Extract<DataSource, {type: 'mix'}>} | undefined
    verifierFields: {fields: string[]; from: string}
    graphEnvVars: DeploymentVariable[]
    more: NonNullable<ContractFromGymOptions['additionalEnvironments']>
    added: NonNullable<ContractFromGymOptions['modelServers']>
    endpoints: AddedEndpoint[]
    models: SecondModel[]
  },
): string[] {
  const notes: string[] = []
  const {dataset, gymSplit, mix, verifierFields, graphEnvVars, more, added, endpoints, models} = d
  if (o.verifierOverride === undefined) notes.push(`verifier and trial copied from the built-in ${o.baseName} (same environment implementation)`)
  if (o.dataFile) {
    const smokeWhy = gymSplit ? `; SMOKE: it is the Gym checkout's own ${o.dataFileSplit} data (pass --training-data if it really is what you train on)` : o.smoke ? '; SMOKE: marked a smoke run by --smoke' : ''
    notes.push(`trains on ${o.dataFile} (NEMO_GYM_TASK_DATA in env.sh): prepare validates every row and publishes it as the raw file${smokeWhy}`)
  }
  else if (mix) notes.push(`trains on a mix of ${describeMix(mix.source)}; prepare stamps each row with its environment, drops rows missing a field their grader reads and shuffles with seed ${mix.source.seed}${contract.data.smoke ? '; SMOKE: a part is not a train split, so this recipe must not be used for real training' : ''}`)
  else if (contract.data.smoke) notes.push(`SMOKE: dataset ${dataset.name} is a ${dataset.type} split; this recipe must not be used for real training`)
  notes.push(`verifier fields ${verifierFields.fields.join(', ')} from ${verifierFields.from}`)
  for (const v of graphEnvVars) notes.push(`deployment variable ${v.name}: the Gym config reads it (\${oc.env:${v.name}} at ${v.at})${v.fallback === null ? ', with no fallback' : `, else ${v.fallback}`}; env.sh names it and the start script passes it into the container`)
  const gatewayPort = contract.service.gateway_port
  const placed = environmentPorts(contract)
  more.forEach((e, i) => {
    const proof = [e.verifier ? 'its verifier' : 'no verifier', e.trial ? 'its trial' : 'no trial'].join(' and ')
    notes.push(`further environment ${e.environment} (Gateway config ${e.gateway_config}): agent ${e.agent.name} on the Gateway port + ${placed[i + 1].agent - gatewayPort}${e.resources_server ? `, resources server ${e.resources_server.name} on + ${placed[i + 1].resource - gatewayPort}` : ''}; ${proof} in recipe.yaml${e.verifier && e.trial ? '' : ' (the service and trial rungs fail until both are there)'}`)
  })
  const modelPorts = modelServerPorts(contract)
  added.forEach((server, i) => {
    const vars = endpointVariables(server.env_prefix)
    notes.push(`${server.role} model server ${server.name} (${server.type}) is added by gymrecipe on the Gateway port + ${modelPorts[i].port - gatewayPort}: set ${vars.baseUrl} and ${vars.model} in env.sh (${vars.apiKey} if it needs a key); start checks that it serves that model before the container starts`)
  })
  for (const endpoint of endpoints) {
    const vars = endpointVariables(endpoint.env_prefix)
    notes.push(`${endpoint.role} of ${endpoint.owner} is moved off the policy: its endpoint fields (${Object.keys(endpoint.overrides).map((p) => p.split('.').at(-1)).join(', ')}) read ${vars.baseUrl} and ${vars.model} from env.sh (${vars.apiKey} if it needs a key); start checks that it serves that model before the container starts`)
  }
  for (const m of models.filter((x) => x.enabled && !servedByAdded(x, added) && !servedByEndpoint(x, endpoints))) {
    notes.push(m.policy
      ? `${m.role} ${m.owner}.${m.key} is the policy model, i.e. the model being trained (accepted with --policy-serves ${m.role})`
      : `${m.role} ${m.owner}.${m.key} calls model server ${m.server}: its endpoint is whatever that server's config says (gymrecipe does not yet check that it answers)`)
  }
  return notes
}
