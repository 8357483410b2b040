/**
 * What a recipe's Gym service is supposed to look like: container name, image tag, Gateway and
 * resources URLs, pinned commit, verifier command. Read from recipe.yaml when it exists; for a
 * hand-written recipe, from its start script, env.sh and verifier (anything that cannot be
 * read is left undefined and the checks that need it say "not checked").
 */
import {promises as fsp} from 'node:fs'
import path from 'node:path'

import {RAY_COMPONENT_PORTS} from '../../contract/ports.js'
import {defaultErrorProbe, type ErrorProbe, errorProbeOf, RECIPES_DIR, serviceBlockPorts, servicePorts} from '../../contract/types.js'
import type {RecipeTarget} from '../../recipe/types.js'

export interface ServicePort {
  label: string
  port: number
}

export interface VerifierCommand {
  kind: 'direct' | 'golden' | 'pending'
  /** A pending verifier: what is missing (no example known yet) and how to give it. */
  pending?: string
  /** Python inside the image. */
  python: string
  /** The verifier's path inside the image. */
  script: string
  /** Arguments after the script; builds URLs from the running container's host and ports. */
  args(urls: ServiceUrls): string[]
  successReward: number
  /** The grader's exact reward for a wrong answer, when the recipe records one. */
  failureReward?: number
  /** Where the python came from (contract or the file that names it). */
  source: string
}

export interface ServiceUrls {
  gymHost: string
  gateway: string
  resource?: string
  agent?: string
}

export interface ServiceDescription {
  recipe: string
  /** Container name, and where it was read from. */
  container?: string
  containerSource: string
  /** The image tag the start script builds (NEMO_GYM_IMAGE as env.sh resolves it). */
  imageTag?: string
  gymHost?: string
  gatewayPort?: number
  /** Resources server port, when the recipe has one and it is known. */
  resourcePort?: number
  agentPort?: number
  /** Hand-written recipes: the verifier's own default --resource-url. */
  resourceUrlDefault?: string
  /** The pinned Gym commit /readyz must report. */
  commit?: string
  commitSource: string
  /** Bounded readiness wait, seconds. */
  startTimeoutS: number
  /** Every port the service binds on the host (contract only; empty when unknown). */
  ports: ServicePort[]
  verifier?: VerifierCommand
  /** The recipe folder as baked into the image. */
  recipeDirInImage: string
  /** A request the pinned Gym answers 500, to see where tracebacks go. */
  errorProbe: ErrorProbe
}

function intOrUndefined(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d+$/.test(value.trim())) return undefined
  return Number(value.trim())
}

/** `NAME=value` / `NAME="${VAR:-default}"` assignments of a shell script, resolved against env. */
function shellAssignment(script: string, pattern: RegExp, env: Record<string, string>): string | undefined {
  for (const line of script.split('\n')) {
    const m = line.match(/^\s*(?:export\s+|local\s+|readonly\s+|declare\s+(?:-\w+\s+)?)?([A-Za-z_]\w*)=(.*)$/)
    if (!m || !pattern.test(m[1])) continue
    let value = m[2].trim().replace(/\s+#.*$/, '')
    value = value.replace(/^"(.*)"$/, '$1').replace(/^'(.*)'$/, '$1')
    const fallback = value.match(/^\$\{([A-Za-z_]\w*):?-([^}]*)\}$/)
    if (fallback) return env[fallback[1]] || fallback[2].replace(/^["']|["']$/g, '') || undefined
    const reference = value.match(/^\$\{?([A-Za-z_]\w*)\}?$/)
    if (reference) {
      if (env[reference[1]]) return env[reference[1]]
      continue
    }
    if (/^[\w.:/@+-]+$/.test(value)) return value
  }
  return undefined
}

function scrapeContainerName(script: string, env: Record<string, string>): string | undefined {
  const assigned = shellAssignment(script, /^(?:\w+_)?CONTAINER(?:_NAME)?$/, env)
  if (assigned && /^[A-Za-z0-9][\w.-]*$/.test(assigned)) return assigned
  const literal = script.match(/--name[\s=]+["']?([A-Za-z0-9][\w.-]*)["']?(?:\s|$)/)
  return literal?.[1]
}

function scrapeCommit(script: string): string | undefined {
  return script.match(/\b([0-9a-f]{40})\b/)?.[1]
}

function scrapeGatewayPort(script: string, env: Record<string, string>): number | undefined {
  return intOrUndefined(env.NEMO_GYM_GATEWAY_PORT) ?? intOrUndefined(shellAssignment(script, /^(?:NEMO_GYM_GATEWAY_PORT|GATEWAY_PORT|\w+_GATEWAY_PORT)$/, env))
}

function scrapePython(text: string): string | undefined {
  return text.match(/(\/opt\/nemo-gym\/[\w./-]+\/\.venv\/bin\/python3?)\b/)?.[1]
}

export async function describeService(target: RecipeTarget, env: Record<string, string>): Promise<ServiceDescription> {
  const read = async (name: string | undefined) => (name ? await fsp.readFile(path.join(target.dir, name), 'utf8').catch(() => '') : '')
  const startText = await read(target.files.start)
  const recipeDirInImage = `/opt/relax-integration/${RECIPES_DIR}/${target.id}`
  const c = target.contract
  const timeoutFromEnv = intOrUndefined(env.NEMO_GYM_START_TIMEOUT_S)

  if (c) {
    const gatewayPort = intOrUndefined(env.NEMO_GYM_GATEWAY_PORT) ?? c.service.gateway_port
    const placed = {service: {...c.service, gateway_port: gatewayPort}, gym: c.gym}
    const ports = servicePorts(placed)
    const all: ServicePort[] = [
      ...serviceBlockPorts(placed),
      {label: 'private Ray GCS', port: c.ray.gcs_port},
      {label: 'private Ray dashboard', port: c.ray.dashboard_port},
      ...RAY_COMPONENT_PORTS.map((flag, i) => ({label: `Ray ${flag}`, port: c.ray.component_port_base + i})),
    ]
    const verifyName = target.files.verify
    const kind = c.verifier.kind
    return {
      recipe: target.id,
      container: c.service.container,
      containerSource: 'recipe.yaml service.container',
      imageTag: env.NEMO_GYM_IMAGE || c.service.image,
      gymHost: env.GYM_HOST || undefined,
      gatewayPort,
      resourcePort: c.gym.resources_server ? ports.resource : undefined,
      agentPort: ports.agent,
      commit: c.gym.commit,
      commitSource: 'recipe.yaml gym.commit',
      startTimeoutS: timeoutFromEnv ?? c.service.start_timeout_s,
      ports: all,
      recipeDirInImage,
      errorProbe: errorProbeOf(c),
      verifier: verifyName
        ? {
            kind,
            ...(c.verifier.pending ? {pending: c.verifier.pending} : {}),
            python: c.verifier.python,
            script: `${recipeDirInImage}/${verifyName}`,
            successReward: c.verifier.success_reward,
            failureReward: c.verifier.failure_reward ?? undefined,
            source: 'recipe.yaml verifier.python',
            args: (urls) =>
              kind === 'golden'
                ? ['--gateway-url', urls.gateway, '--callback-base-url', `http://${urls.gymHost}:1/v1`]
                : urls.resource
                  ? ['--resource-url', urls.resource]
                  : [],
          }
        : undefined,
    }
  }

  // Hand-written recipe: read what the scripts say.
  const verifyText = await read(target.files.verify)
  const readmeText = await read(target.files.readme)
  const container = scrapeContainerName(startText, env)
  const gatewayPort = scrapeGatewayPort(startText, env)
  const python = scrapePython(verifyText) ?? scrapePython(readmeText) ?? scrapePython(startText)
  const resourceUrlDefault = verifyText.match(/["']--resource-url["'][^\n]*?default\s*=\s*["'](https?:\/\/[^"']+)["']/)?.[1]
  const commit = scrapeCommit(startText)
  return {
    recipe: target.id,
    container,
    containerSource: container ? `${target.files.start}` : 'unknown',
    imageTag: env.NEMO_GYM_IMAGE || shellAssignment(startText, /^NEMO_GYM_IMAGE$/, env) || undefined,
    gymHost: env.GYM_HOST || undefined,
    gatewayPort,
    resourceUrlDefault,
    commit,
    commitSource: commit ? `${target.files.start}` : 'unknown',
    startTimeoutS: timeoutFromEnv ?? 600,
    ports: [],
    recipeDirInImage,
    errorProbe: defaultErrorProbe(resourceUrlDefault !== undefined),
    verifier:
      python && target.files.verify
        ? {
            kind: 'direct',
            python,
            script: `${recipeDirInImage}/${target.files.verify}`,
            successReward: 1,
            source: 'the path named in the verifier/README',
            // A hand-written verifier runs with its own defaults, as its README says.
            args: () => [],
          }
        : undefined,
  }
}

/** URLs of the running service: the container's own environment wins over env.sh. */
export function serviceUrls(desc: ServiceDescription, containerEnv: Record<string, string> = {}): ServiceUrls | undefined {
  const gymHost = containerEnv.GYM_HOST || desc.gymHost
  const gatewayPort = intOrUndefined(containerEnv.NEMO_GYM_GATEWAY_PORT) ?? desc.gatewayPort
  if (!gymHost || gatewayPort === undefined) return undefined
  const shift = gatewayPort - (desc.gatewayPort ?? gatewayPort)
  const resource = desc.resourcePort === undefined ? desc.resourceUrlDefault : `http://${gymHost}:${desc.resourcePort + shift}`
  return {
    gymHost,
    gateway: `http://${gymHost}:${gatewayPort}`,
    resource,
    agent: desc.agentPort === undefined ? undefined : `http://${gymHost}:${desc.agentPort + shift}`,
  }
}
