import {loadGymGraph} from '../../contract/gym-config.js'
import type {Check, CheckResult} from '../types.js'
import {type LoadedFile, recipeFiles, type Role, ROLE_TITLES} from './recipe-files.js'
import {keyValueWord} from './shell.js'

type Outcome = Omit<CheckResult, 'id' | 'rung' | 'title'>

export const filesPresent: Check = {
  id: 'static.files',
  title: 'the seven recipe files exist',
  async run(ctx) {
    const files = await recipeFiles(ctx)
    const missing = (Object.keys(ROLE_TITLES) as Role[]).filter((role) => !files[role])
    if (missing.length > 0) {
      const names = missing.map((role) => ctx.target.files[role] ?? ROLE_TITLES[role])
      return {status: 'fail', message: `missing: ${names.join(', ')}`, hint: 'Regenerate with `gymrecipe new`, or add the files by hand.', file: ctx.target.dir}
    }
    return {status: 'pass', message: `${Object.keys(files).length} files in ${ctx.target.dir}`}
  },
}

interface GraphOverride {
  id: string
  kind: string
  implementation: string
  line: number
}

/** `++<id>.<kind>.<impl>.host|port=` overrides in the start script: the graph names it relies on. */
export function graphOverrides(start: LoadedFile): GraphOverride[] {
  const out: GraphOverride[] = []
  for (const l of start.lines) {
    for (const m of l.text.matchAll(/\+\+([A-Za-z0-9_.-]+?)\.(responses_api_agents|resources_servers|responses_api_models)\.([A-Za-z0-9_-]+)\.(?:host|port)=/g)) {
      if (!out.some((o) => o.id === m[1] && o.kind === m[2] && o.implementation === m[3])) out.push({id: m[1], kind: m[2], implementation: m[3], line: l.line})
    }
  }
  return out
}

export function configPathsOf(start: LoadedFile): string[] {
  const m = start.text.match(/\+config_paths=\[([^\]]*)\]/)
  return m ? m[1].split(',').map((s) => s.trim()).filter(Boolean) : []
}

export const graphNames: Check = {
  id: 'static.graph-names',
  title: 'scripts use the pinned graph names',
  async run(ctx) {
    const files = await recipeFiles(ctx)
    const {start, run} = files
    if (!start || !run) return {status: 'fail', message: 'start or training script missing'}
    const problems: Outcome[] = []
    const overrides = graphOverrides(start)
    const agents = overrides.filter((o) => o.kind === 'responses_api_agents')
    if (agents.length === 0) problems.push({status: 'fail', message: 'the start script overrides no agent (++<agent>.responses_api_agents.<type>.port=...)', file: start.name})

    const contract = ctx.target.contract
    if (contract) {
      const wanted: Array<[string, string, string]> = [[contract.gym.agent.name, 'responses_api_agents', contract.gym.agent.type]]
      if (contract.gym.resources_server) wanted.push([contract.gym.resources_server.name, 'resources_servers', contract.gym.resources_server.implementation])
      for (const [id, kind, impl] of wanted) {
        if (!overrides.some((o) => o.id === id && o.kind === kind && o.implementation === impl)) {
          problems.push({status: 'fail', message: `start script does not start ${kind} ${id} (${impl}) recorded in recipe.yaml`, file: start.name, hint: 'Regenerate the recipe; never rename graph instances by hand.'})
        }
      }
      for (const o of overrides) {
        if (o.id === 'policy_model') continue
        if (!wanted.some(([id, kind, impl]) => id === o.id && kind === o.kind && impl === o.implementation)) {
          problems.push({status: 'fail', message: `start script overrides ${o.id}.${o.kind}.${o.implementation}, which recipe.yaml does not record`, file: start.name, line: o.line})
        }
      }
      for (const p of contract.gym.config_paths) {
        if (!configPathsOf(start).includes(p)) problems.push({status: 'fail', message: `+config_paths does not load ${p}`, file: start.name})
      }
      const env = keyValueWord(run.lines, 'NEMO_GYM_ENVIRONMENT')
      const config = keyValueWord(run.lines, 'NEMO_GYM_CONFIG')
      if (env && env.value !== contract.gym.environment) problems.push({status: 'fail', message: `--agent-env NEMO_GYM_ENVIRONMENT=${env.value}, but the Gateway registers ${contract.gym.environment}`, file: run.name, line: env.line})
      if (config && config.value !== contract.gym.gateway_config) problems.push({status: 'fail', message: `--agent-env NEMO_GYM_CONFIG=${config.value}, but the Gateway registers ${contract.gym.gateway_config}`, file: run.name, line: config.line})
      if (!start.text.includes(JSON.stringify(contract.gym.agent.name))) problems.push({status: 'fail', message: `the Gateway registration does not name agent ${contract.gym.agent.name}`, file: start.name})
    } else {
      const env = keyValueWord(run.lines, 'NEMO_GYM_ENVIRONMENT')
      const registered = start.text.match(/"environment"\s*:\s*"([^"]+)"/)
      if (env && registered && env.value !== registered[1]) problems.push({status: 'fail', message: `--agent-env NEMO_GYM_ENVIRONMENT=${env.value}, but the start script registers ${registered[1]}`, file: run.name, line: env.line})
      const agentName = start.text.match(/"agent_name"\s*:\s*"([^"]+)"/)
      if (agentName && !agents.some((a) => a.id === agentName[1])) problems.push({status: 'fail', message: `the Gateway registers agent ${agentName[1]}, but the graph starts ${agents.map((a) => a.id).join(', ')}`, file: start.name})
    }

    if (ctx.options.gymRoot) {
      const configs = configPathsOf(start).filter((p) => !p.startsWith('responses_api_models/relax_gateway_model/'))
      const graph = await loadGymGraph(ctx.options.gymRoot, configs)
      const servers = [...graph.agents, ...graph.resourcesServers, ...graph.models]
      for (const o of overrides) {
        if (o.id === 'policy_model') continue
        if (!servers.some((s) => s.id === o.id && s.kind === o.kind && s.implementation === o.implementation)) {
          problems.push({status: 'fail', message: `${o.id}.${o.kind}.${o.implementation} is not in the Gym config (${configs.join(', ')})`, file: start.name, line: o.line, hint: `Instances in the config: ${servers.map((s) => `${s.id} (${s.implementation})`).join(', ')}`})
        }
      }
    } else if (!contract) {
      return problems.length > 0
        ? problems.map((p) => ({id: 'static.graph-names', title: 'scripts use the pinned graph names', ...p}))
        : {status: 'skip', message: 'no recipe.yaml and no --gym-root: graph names cannot be checked against the Gym config', hint: 'Pass --gym-root <pinned Gym checkout>.'}
    }

    if (problems.length > 0) return problems.map((p) => ({id: 'static.graph-names', title: 'scripts use the pinned graph names', ...p}))
    const names = overrides.filter((o) => o.id !== 'policy_model').map((o) => `${o.id} (${o.implementation})`)
    return {status: 'pass', message: `graph ${names.join(', ')}${ctx.options.gymRoot ? ', confirmed in the Gym config' : ''}`}
  },
}

