/** The launchers and the Gym graph: the service's ports, Gateway registration, graph overrides and container. */
import {sourceOf, splitOf, verifierFieldsFrom} from '../../contract/from-gym.js'
import {loadGymGraph} from '../../contract/gym-config.js'
import {messageOf} from '../../errors.js'
import {configPathsOf, graphOverrides} from '../../ladder/index.js'
import type {LoadedFile} from '../../recipe/files.js'
import {assignments, flagValues, rawLineOf, resolveWord} from '../../recipe/shell.js'
import {summarizeExamples} from '../../scaffold/new-recipe.js'
import {exampleRowsFiles} from '../../contract/gym-config/example-rows.js'
import {Reading, valueAt, intOf} from './reading.js'

/** A value from the Gateway registration the launcher writes (JSON or a Python dict literal). */
export function registration(text: string, key: string): string | undefined {
  return text.match(new RegExp(`["']${key}["']\\s*:\\s*(?:["']([^"']+)["']|(-?\\d+))`))?.slice(1).find((v) => v !== undefined)
}

/** `file:line` of the first physical line matching, or the file alone. */
export function lineOf(file: LoadedFile, pattern: RegExp): string {
  const line = rawLineOf(file.text, pattern)
  return line === undefined ? file.name : `${file.name}:${line}`
}

export async function readService(r: Reading, gym: LoadedFile | undefined, host: LoadedFile | undefined, scripts: LoadedFile[], gymRoot: string | undefined, env: Record<string, string>): Promise<void> {
  if (!gym) {
    for (const p of ['/gym/config_paths', '/gym/agent', '/gym/resources_server', '/gym/environment', '/gym/gateway_config', '/service/gateway_port', '/ray/gcs_port']) r.missing(p, 'no launcher in the folder runs `gym env start`')
    return
  }
  const configs = configPathsOf(gym).filter((c) => !c.startsWith('responses_api_models/'))
  if (configs.length > 0) r.set('/gym/config_paths', configs, lineOf(gym, /\+config_paths=/))
  else r.missing('/gym/config_paths', `${gym.name} passes no +config_paths=[…]`)

  readPortsAndRegistration(r, gym, env)
  readPrivateRay(r, gym, host)
  readGymPin(r, scripts)
  if (!gymRoot) {
    for (const p of GRAPH_VALUES) r.missing(p, 'no --gym-root: the Gym config cannot be read')
    return
  }
  await readGraph(r, gym, configs, gymRoot)
}

const GRAPH_VALUES = ['/gym/agent', '/gym/resources_server', '/gym/venv_dirs', '/data/dataset', '/data/source', '/data/verifier_fields', '/data/tools', '/data/strip_agent_ref']

/** The service's ports (from the launcher's overrides, else env.sh) and its Gateway registration. */
function readPortsAndRegistration(r: Reading, gym: LoadedFile, env: Record<string, string>): void {
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
}

/** The private Ray: the launcher's own `ray start`, or the host launcher's container command. */
function readPrivateRay(r: Reading, gym: LoadedFile, host: LoadedFile | undefined): void {
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
}

function readGymPin(r: Reading, scripts: LoadedFile[]): void {
  const pinned = scripts.map((f) => ({f, m: f.text.match(/\b[0-9a-f]{40}\b/)})).find((x) => x.m)
  if (pinned) r.set('/gym/commit', pinned.m![0], lineOf(pinned.f, /\b[0-9a-f]{40}\b/))
  else r.missing('/gym/commit', 'no script pins a 40-hex Gym commit')
}

/** The agent, resources server, dataset and verifier fields, checked against the Gym config the launcher passes. */
async function readGraph(r: Reading, gym: LoadedFile, configs: string[], gymRoot: string): Promise<void> {
  const overrides = graphOverrides(gym)
  let graph
  try {
    graph = await loadGymGraph(gymRoot, configs, {relaxPolicy: true})
  } catch (error) {
    for (const p of GRAPH_VALUES) r.missing(p, `the Gym config could not be read: ${messageOf(error).split('\n')[0]}`)
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
  const examples = await summarizeExamples(await exampleRowsFiles(gymRoot, graph, agent.id))
  if (examples) {
    r.set('/data/verifier_fields', verifierFieldsFrom(examples), `the example rows of ${agent.id}`)
    r.set('/data/tools', examples.hasTools, `the example rows of ${agent.id}`)
    r.set('/data/strip_agent_ref', examples.hasAgentRef, `the example rows of ${agent.id}`)
  } else for (const p of ['/data/verifier_fields', '/data/tools', '/data/strip_agent_ref']) r.missing(p, `no example rows of ${agent.id} in the Gym checkout`)
}

export function readContainer(r: Reading, host: LoadedFile | undefined, scripts: LoadedFile[], readme: string): void {
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
