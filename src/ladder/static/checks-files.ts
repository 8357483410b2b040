import {environmentsOf} from '../../contract/types.js'
import {loadGymGraph} from '../../contract/gym-config.js'
import {placedAs} from '../../contract/placement.js'
import {configRootName} from '../../contract/gym-config/paths.js'
import {messageOf} from '../../errors.js'
import {scriptEnv} from '../scratch.js'
import type {Check, CheckContext, CheckOutcome} from '../types.js'
import {recipeFiles} from './recipe-files.js'
import {launcherRole, type LoadedFile, type Role, ROLE_TITLES} from '../../recipe/files.js'
import {keyValueWord, rawLineOf} from '../../recipe/shell.js'


export const filesPresent: Check = {
  id: 'static.files',
  title: 'the recipe files exist',
  async run(ctx) {
    const files = await recipeFiles(ctx)
    const contract = ctx.target.contract
    const missing: string[] = []
    if (contract) {
      // A generated recipe: every file recipe.yaml names (env.sh aside, see below).
      for (const role of Object.keys(ROLE_TITLES) as Role[]) if (role !== 'env' && !files.byRole[role]) missing.push(ctx.target.files[role] ?? ROLE_TITLES[role])
    } else {
      if (files.training.length === 0) missing.push('a training script (run-*.sh)')
      if (files.launchers.length === 0) missing.push('a start script (start_*.sh)')
      if (files.prepare.length === 0) missing.push('a prepare script (prepare_*.sh)')
      if (files.verifiers.length === 0) missing.push('a verifier (verify_*.py)')
      if (!files.byRole.readme) missing.push('README.md')
      if (!files.byRole.pitfall) missing.push('PITFAIL.md')
    }
    if (missing.length > 0) {
      return {status: 'fail', message: `missing: ${missing.join(', ')}`, hint: contract ? `Regenerate with \`gymrecipe new ${ctx.target.id}\`.` : 'Add the missing files; every recipe carries its own scripts, verifier, README and PITFAIL.', file: ctx.target.dir}
    }
    const count = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`
    const parts = [count(files.training.length, 'training script'), count(files.launchers.length, 'launcher'), count(files.prepare.length, 'prepare script'), count(files.verifiers.length, 'verifier'), 'README.md', 'PITFAIL.md']
    // Relax keeps env.sh out of git (.gitignore): its absence is a deployment not yet configured.
    const env = files.byRole.env ? 'env.sh' : 'no env.sh (not committed; the checks that read it say so)'
    return {status: 'pass', message: `${parts.join(', ')}, ${env}`}
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

/**
 * The directory of each config root (`${NAME}/…`) the configs name, as the scripts see it: the
 * caller's environment with env.sh sourced on top.
 */
async function configRootsOf(configs: string[], ctx: CheckContext): Promise<{roots: Array<{name: string; dir: string}>} | {missing: string}> {
  const names = [...new Set(configs.map(configRootName).filter((n): n is string => n !== undefined))]
  if (names.length === 0) return {roots: []}
  let env: Record<string, string>
  try {
    env = await scriptEnv(ctx)
  } catch (error) {
    return {missing: `${names[0]} (env.sh cannot be read: ${messageOf(error)})`}
  }
  const roots: Array<{name: string; dir: string}> = []
  for (const name of names) {
    if (!env[name]) return {missing: name}
    roots.push({name, dir: env[name]})
  }
  return {roots}
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
    const starters = files.launchers.filter((f) => launcherRole(f).startsGym)
    if (starters.length === 0) return {status: 'fail', message: 'no launcher runs `gym env start`, so the graph it starts cannot be read', hint: 'The in-container start script runs gym env start with the graph overrides.'}
    const problems: CheckOutcome[] = []
    const contract = ctx.target.contract
    const names: string[] = []
    let checkedAgainstGym = false
    for (const start of starters) {
      const overrides = graphOverrides(start)
      const agents = overrides.filter((o) => o.kind === 'responses_api_agents')
      if (agents.length === 0) problems.push({status: 'fail', message: 'the start script overrides no agent (++<agent>.responses_api_agents.<type>.port=...)', file: start.name})
      if (contract) {
        // [the instance the overrides name, kind, implementation, the server recorded]: an inherited
        // instance is placed through the instance it inherits from.
        const wanted: Array<[string, string, string, string]> = []
        for (const e of environmentsOf(contract)) {
          wanted.push([placedAs(e.agent), 'responses_api_agents', e.agent.type, e.agent.name])
          if (e.resources_server) wanted.push([placedAs(e.resources_server), 'resources_servers', e.resources_server.implementation, e.resources_server.name])
        }
        for (const server of contract.gym.model_servers ?? []) wanted.push([server.name, 'responses_api_models', server.type, server.name])
        for (const [id, kind, impl, name] of wanted) {
          if (!overrides.some((o) => o.id === id && o.kind === kind && o.implementation === impl)) {
            const how = id === name ? '' : ` through ${id}, the instance it inherits from (Gym takes a host and port for it only there)`
            problems.push({status: 'fail', message: `start script does not start ${kind} ${name} (${impl}) recorded in recipe.yaml${how}`, file: start.name, hint: 'Regenerate the recipe; never rename graph instances by hand.'})
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
        for (const e of environmentsOf(contract)) {
          if (!start.text.includes(JSON.stringify(e.agent.name))) problems.push({status: 'fail', message: `the Gateway registration does not name agent ${e.agent.name}`, file: start.name})
        }
      } else {
        const registered = [...start.text.matchAll(/"agent_name"\s*:\s*"([^"]+)"/g)].map((m) => m[1])
        for (const name of registered) {
          if (!agents.some((a) => a.id === name)) problems.push({status: 'fail', message: `the Gateway registers agent ${name}, but the graph overrides start ${agents.map((a) => a.id).join(', ') || 'no agent'}`, file: start.name, line: rawLineOf(start.text, new RegExp(`"agent_name"\\s*:\\s*"${name}"`)), hint: 'The registered agent must be the graph instance the overrides place on the agent port.'})
        }
      }
      if (ctx.options.gymRoot) {
        const configs = configPathsOf(start).filter((p) => !p.startsWith('responses_api_models/relax_gateway_model/'))
        // A config under a config root (`${NAME}/…`) is read from the directory env.sh (or the environment) names.
        const roots = await configRootsOf(configs, ctx)
        if ('missing' in roots) problems.push({status: 'skip', message: `not checked: ${roots.missing} (a config root the start script loads configs from) is set neither in env.sh nor in the environment`, file: start.name, hint: 'Set it in env.sh to the directory holding your own Gym configs.'})
        else if (configs.length > 0 && configs.every((p) => !p.startsWith('/') && (!p.includes('$') || configRootName(p) !== undefined))) {
          const graph = await loadGymGraph(ctx.options.gymRoot, configs, {extraRoots: roots.roots, relaxPolicy: true})
          const servers = [...graph.agents, ...graph.resourcesServers, ...graph.models]
          checkedAgainstGym = true
          const recorded = contract?.gym.behaviour
          if (recorded && !graph.includeOrder.assumed) {
            const now = {include_order: graph.includeOrder.order, waits_for_model_endpoints: graph.behaviour.waitsForModelEndpoints, guards_openai_version: graph.behaviour.guardsOpenaiVersion}
            for (const key of Object.keys(now) as Array<keyof typeof now>) {
              if (recorded[key] !== now[key]) {
                problems.push({status: 'fail', message: `recipe.yaml records gym.behaviour.${key} = ${String(recorded[key])}, but the Gym checkout at --gym-root has ${String(now[key])}: the recipe was recorded against a Gym that reads or starts it differently`, file: 'recipe.yaml', hint: `Regenerate against this checkout (gymrecipe new ${ctx.target.id} --update --gym-root <it>), or point --gym-root at the checkout the image is built from.`})
              }
            }
          }
          // Model servers recipe.yaml adds are defined by the start script's own overrides.
          const added = contract?.gym.model_servers ?? []
          for (const o of overrides) {
            if (o.id === 'policy_model' || added.some((m) => m.name === o.id && o.kind === 'responses_api_models' && m.type === o.implementation)) continue
            const placed = (s: (typeof servers)[number]) => s.id === o.id || graph.inheritedFrom[s.id] === o.id
            if (!servers.some((s) => placed(s) && s.kind === o.kind && s.implementation === o.implementation)) {
              problems.push({status: 'fail', message: `${o.id}.${o.kind}.${o.implementation} is not in the Gym config (${configs.join(', ')})`, file: start.name, line: o.line, hint: `Instances in the config: ${servers.map((s) => `${s.id} (${s.implementation})`).join(', ')}`})
            }
          }
        }
      }
      names.push(...overrides.filter((o) => o.id !== 'policy_model').map((o) => `${o.id} (${o.implementation})`))
    }
    const run = files.training
    for (const script of run) {
      const env = keyValueWord(script.lines, 'NEMO_GYM_ENVIRONMENT')
      const config = keyValueWord(script.lines, 'NEMO_GYM_CONFIG')
      const environments = contract ? [contract.gym.environment] : starters.flatMap((s) => [...s.text.matchAll(/"environment"\s*:\s*"([^"]+)"/g)].map((m) => m[1]))
      const configs = contract ? [contract.gym.gateway_config] : starters.flatMap((s) => [...s.text.matchAll(/"([a-z0-9][a-z0-9_.-]*)"\s*:\s*\{\s*\n?\s*"environment"/g)].map((m) => m[1]))
      if (env && environments.length > 0 && !environments.includes(env.value)) problems.push({status: 'fail', message: `--agent-env NEMO_GYM_ENVIRONMENT=${env.value}, but the Gateway registers ${environments.join(', ')}`, file: script.name, line: env.line})
      if (config && configs.length > 0 && !configs.includes(config.value)) problems.push({status: 'fail', message: `--agent-env NEMO_GYM_CONFIG=${config.value}, but the Gateway registers ${configs.join(', ')}`, file: script.name, line: config.line})
    }
    if (problems.length > 0) return problems.map((p) => ({id: 'static.graph-names', title: 'scripts use the pinned graph names', ...p}))
    if (!contract && !checkedAgainstGym) {
      const why = ctx.options.gymRoot ? 'its graph config is not a file of the Gym checkout (it is read from a variable or an absolute path)' : 'no recipe.yaml and no --gym-root'
      return {status: 'skip', message: `not checked against the Gym config (${why}); the scripts agree with each other: ${[...new Set(names)].join(', ')}`, hint: ctx.options.gymRoot ? 'Record the recipe with `gymrecipe new` so its graph is read from the config itself.' : 'Pass --gym-root <pinned Gym checkout>.'}
    }
    return {status: 'pass', message: `graph ${[...new Set(names)].join(', ')}${checkedAgainstGym ? ', confirmed in the Gym config' : ''}`}
  },
}
