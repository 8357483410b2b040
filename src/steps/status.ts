/**
 * `gymrecipe status`: the recipe's last training submission (run state + Ray Jobs API), its
 * Gateway (/readyz) and its Gym container (Docker Engine API), at a glance. Read-only.
 */
import path from 'node:path'

import type {RecipeContract} from '../contract/types.js'
import {inspectContainer} from '../runtime/container.js'
import {dockerTarget, tryDocker, unsupportedHostMessage} from '../runtime/docker.js'
import {pathExists} from '../runtime/fs.js'
import {gatewayRegisters} from '../runtime/gateway-trials.js'
import {objectFields, readyz} from '../runtime/http.js'
import {rayJobsClientFromEnv, redactUrl} from '../runtime/ray-jobs.js'
import {scriptEnvironment} from '../runtime/recipe-env.js'
import {checkContext, ladderStanding, type RungStanding} from '../ladder/index.js'
import {resolveRecipe} from '../recipe/target.js'
import {trainingGateway} from '../contract/endpoints.js'
import {readRunState} from '../runtime/run-state.js'
import {messageOf} from '../errors.js'

export interface JobStatusView {
  submissionId: string
  dashboardAddress: string
  /** Which variable the address came from when the job was submitted (null for older records). */
  dashboardSource: string | null
  submittedAt: string
  logFile: string | null
  smoke: boolean
  /** The Ray job status, or null when the dashboard could not tell. */
  status: string | null
  message: string | null
  errorType: string | null
  driverExitCode: number | null
  startTime: number | null
  endTime: number | null
  problem: string | null
}

export interface GatewayView {
  url: string | null
  reachable: boolean
  httpStatus: number | null
  ready: boolean | null
  serviceEpoch: string | null
  trials: number | null
  activeTrials: number | null
  terminalTrials: number | null
  gymCommit: string | null
  /** Whether the Gateway registers this recipe's environment/config (null: unknown). */
  registers: boolean | null
  problem: string | null
}

export interface ContainerView {
  name: string | null
  exists: boolean
  state: string | null
  running: boolean
  /** Value of the ownership label ai.relax.recipe. */
  label: string | null
  owned: boolean
  image: string | null
  gatewayPort: number | null
  problem: string | null
}

export interface StatusReport {
  recipe: string
  dir: string
  job: JobStatusView | null
  gateway: GatewayView
  container: ContainerView
  /** env.sh was sourced with bash to read its values (its commands ran). */
  envShSourced: boolean
  /** Each rung's last verdict, judged against the inputs of now (stale when they changed). */
  ladder: RungStanding[]
}

export async function recipeStatus(options: {relaxRoot: string; recipe: string; env: NodeJS.ProcessEnv}): Promise<StatusReport> {
  const target = await resolveRecipe(options.relaxRoot, options.recipe)
  const env = await scriptEnvironment(target.dir, options.env)
  const contract = target.contract

  const [job, gateway, container] = await Promise.all([jobView(target.dir, env, options.env), gatewayView(contract, env), containerView(contract, options.env)])
  const ladder = (await ladderStanding(checkContext(target, {env: options.env, smoke: false}))).rungs
  return {recipe: target.id, dir: target.dir, job, gateway, container, envShSourced: await pathExists(path.join(target.dir, 'env.sh')), ladder}
}


/** The last job `train` recorded, as Ray's dashboard sees it now. */
async function jobView(dir: string, env: Record<string, string>, callerEnv: NodeJS.ProcessEnv): Promise<JobStatusView | null> {
  const state = await readRunState(dir, callerEnv)
  if (!state) return null
  const job: JobStatusView = {
    submissionId: state.submissionId,
    dashboardAddress: redactUrl(state.dashboardAddress),
    dashboardSource: state.dashboardSource ?? null,
    submittedAt: state.submittedAt,
    logFile: state.logFile,
    smoke: state.smoke,
    status: null,
    message: null,
    errorType: null,
    driverExitCode: null,
    startTime: null,
    endTime: null,
    problem: null,
  }
  try {
    const details = await rayJobsClientFromEnv(env, {address: state.dashboardAddress, timeoutMs: 10_000}).client.status(state.submissionId)
    Object.assign(job, {
      status: details.status,
      message: details.message,
      errorType: details.error_type,
      driverExitCode: details.driver_exit_code,
      startTime: details.start_time,
      endTime: details.end_time,
    })
  } catch (error) {
    job.problem = messageOf(error)
  }
  return job
}

/** The Gateway the training would reach: its /readyz, and whether it registers this recipe. */
async function gatewayView(contract: RecipeContract | null, env: Record<string, string>): Promise<GatewayView> {
  const gateway: GatewayView = {
    url: null,
    reachable: false,
    httpStatus: null,
    ready: null,
    serviceEpoch: null,
    trials: null,
    activeTrials: null,
    terminalTrials: null,
    gymCommit: null,
    registers: null,
    problem: null,
  }
  const endpoint = contract ? trainingGateway(contract, env) : {problem: 'recipe.yaml is missing: the Gateway port is unknown'}
  if ('problem' in endpoint) {
    gateway.problem = endpoint.problem
  } else {
    gateway.url = endpoint.url
    const {answer, error} = await readyz(endpoint.url, 3000)
    if (!answer) {
      gateway.problem = `no answer: ${error}`
    } else {
      const body = objectFields(answer.json)
      gateway.reachable = true
      gateway.httpStatus = answer.status
      gateway.ready = typeof body.ready === 'boolean' ? body.ready : null
      gateway.serviceEpoch = typeof body.service_epoch === 'string' ? body.service_epoch : null
      gateway.trials = typeof body.trials === 'number' ? body.trials : null
      gateway.activeTrials = typeof body.active_trials === 'number' ? body.active_trials : null
      gateway.terminalTrials = typeof body.terminal_trials === 'number' ? body.terminal_trials : null
      gateway.gymCommit = typeof body.gym_commit === 'string' ? body.gym_commit : null
      if (body.protocol_version !== 'relax-nemo-gym/v1') gateway.problem = `HTTP ${answer.status} but not a Relax Gateway`
      else if (contract) {
        // A Gateway on this port may be another recipe's; it must register this recipe's pair.
        const {environment, gateway_config: config} = contract.gym
        const registration = await gatewayRegisters(endpoint.url, environment, config, contract.gateway.interrupt_policy)
        gateway.registers = registration.registered
        if (registration.registered === false) gateway.problem = `does not register ${environment}/${config}: another recipe's service`
        else if (registration.registered === null) gateway.problem = `registration of ${environment}/${config} not confirmed (probe answered HTTP ${registration.answer.status})`
      }
    }
  }
  return gateway
}

/** The recipe's service container, if Docker is reachable. */
async function containerView(contract: RecipeContract | null, callerEnv: NodeJS.ProcessEnv): Promise<ContainerView> {
  const container: ContainerView = {name: contract?.service.container ?? null, exists: false, state: null, running: false, label: null, owned: false, image: null, gatewayPort: null, problem: null}
  if (!contract) {
    container.problem = 'recipe.yaml is missing: the container name is unknown'
  } else {
    const target_ = dockerTarget(callerEnv)
    const docker = await tryDocker(target_)
    if (!docker) {
      container.problem = target_.unsupportedHost ? unsupportedHostMessage(target_.unsupportedHost) : `Docker is not reachable at ${target_.socketPath}`
    } else {
      const found = await inspectContainer(docker, contract.service.container)
      if (found) {
        container.exists = true
        container.state = found.status
        container.running = found.running
        container.label = found.owner ?? null
        container.owned = found.owner === contract.id
        container.image = found.imageRef
        const port = Number(found.env.NEMO_GYM_GATEWAY_PORT)
        container.gatewayPort = Number.isInteger(port) && port > 0 ? port : null
        if (!container.owned) container.problem = `not this recipe's container (ai.relax.recipe=${found.owner ?? '<unset>'})`
      }
    }
  }
  return container
}

/** Three lines for people. */
export function statusLines(report: StatusReport): string[] {
  const lines = [`${report.recipe} (${report.dir})${report.envShSourced ? ', env.sh read by sourcing it with bash' : ''}`]
  const job = report.job
  if (!job) {
    lines.push('  job        none recorded (gymrecipe train records its submission)')
  } else {
    const when = job.endTime ? `, ended ${new Date(job.endTime).toISOString()}` : ''
    const status = job.status ?? `UNKNOWN (${job.problem})`
    lines.push(`  job        ${job.submissionId}  ${status}  on ${job.dashboardAddress}${job.dashboardSource ? ` (from ${job.dashboardSource})` : ''}  submitted ${job.submittedAt}${when}${job.smoke ? '  [SMOKE]' : ''}`)
    if (job.status === 'FAILED' && job.message) lines.push(`             ${job.message.split('\n')[0]}`)
    if (job.status === 'SUCCEEDED') lines.push(`             a SUCCEEDED job is not proof: gymrecipe verify ${report.recipe} --level training`)
    if (job.logFile) lines.push(`             log: ${job.logFile}`)
  }
  const g = report.gateway
  if (!g.reachable) {
    lines.push(`  gateway    ${g.url ?? '?'}  unreachable: ${g.problem}`)
  } else {
    const ready = g.ready ? 'ready' : `NOT ready (HTTP ${g.httpStatus})`
    lines.push(`  gateway    ${g.url}  ${ready}  epoch ${g.serviceEpoch?.slice(0, 8) ?? '?'}  trials ${g.trials ?? '?'}  active ${g.activeTrials ?? '?'}${g.problem ? `  (${g.problem})` : ''}`)
  }
  const c = report.container
  if (!c.exists) {
    lines.push(`  container  ${c.name ?? '?'}  ${c.problem ?? 'does not exist'}`)
  } else {
    lines.push(`  container  ${c.name}  ${c.state}  ai.relax.recipe=${c.label ?? '<unset>'}${c.owned ? '' : ' (NOT this recipe)'}  image ${c.image}  port ${c.gatewayPort ?? '?'}`)
  }
  // One line per rung: what the last climb concluded, as it stands now.
  lines.push(`  ladder     ${report.ladder.map((r) => `${r.rung} ${r.status === 'never' ? 'never checked' : r.status}`).join(', ')}`)
  return lines
}
