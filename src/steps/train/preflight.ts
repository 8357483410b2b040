/**
 * Pre-flight of `gymrecipe train`: everything that must hold before a job is submitted. Every
 * check runs (so one run shows every problem); none of them submits, starts or stops anything.
 */
import {promises as fsp} from 'node:fs'
import path from 'node:path'

import {codeOf, ExitCode, hintOf, isGymError, messageOf} from '../../errors.js'
import type {RecipeContract} from '../../contract/types.js'
import {checkContext, RUNG_DEFINITIONS, runLadder} from '../../ladder/index.js'
import type {RecipeTarget} from '../../recipe/types.js'
import {inspectContainer} from '../../runtime/container.js'
import {dockerTarget, tryDocker} from '../../runtime/docker.js'
import {gatewayRegisters} from '../../runtime/gateway-trials.js'
import {objectFields, readyz} from '../../runtime/http.js'
import {which} from '../../runtime/process.js'
import {dashboardResolveProblem, rayCredentials, rayJobsClient, redactUrl, resolveJobsEndpoint} from '../../runtime/ray-jobs.js'
import {trainingGateway} from '../../contract/endpoints.js'

export type PreflightStatus = 'pass' | 'fail'

export interface PreflightItem {
  id: string
  title: string
  status: PreflightStatus
  message: string
  hint?: string
  evidence?: Record<string, unknown>
}

export interface PreflightInput {
  target: RecipeTarget & {contract: RecipeContract}
  /** The caller's environment (the script runs with it and sources env.sh itself). */
  callerEnv: NodeJS.ProcessEnv
  /** The environment after env.sh: what the training script sees. */
  scriptEnv: Record<string, string>
  smoke: boolean
  gymRoot?: string
  signal?: AbortSignal
  /** The id this run will submit under: it must not exist yet. */
  submissionId?: string
}

const PROTOCOL = 'relax-nemo-gym/v1'

function pass(id: string, title: string, message: string, evidence?: Record<string, unknown>): PreflightItem {
  return {id, title, status: 'pass', message, evidence}
}

function fail(id: string, title: string, message: string, hint?: string, evidence?: Record<string, unknown>): PreflightItem {
  return {id, title, status: 'fail', message, hint, evidence}
}

async function statOf(p: string): Promise<{isFile: boolean; isDirectory: boolean; size: number} | undefined> {
  try {
    const s = await fsp.stat(p)
    return {isFile: s.isFile(), isDirectory: s.isDirectory(), size: s.size}
  } catch {
    return undefined
  }
}

/** The model directory of the recipe and its config.json (the script's `test -s` check). */
export async function checkModel(input: PreflightInput): Promise<PreflightItem> {
  const title = 'Model directory and config.json'
  const {contract} = input.target
  const modelDir = input.scriptEnv.MODEL_DIR
  if (!modelDir) return fail('model', title, 'MODEL_DIR is not set', 'Set MODEL_DIR in env.sh: the parent directory of the model, same absolute path on every Ray node.')
  const dir = path.join(modelDir, contract.training.model.name)
  const evidence = {modelDir: dir}
  const dirStat = await statOf(dir)
  if (!dirStat?.isDirectory) {
    return fail('model', title, `model directory ${dir} does not exist`, `Download it first, e.g. hf download Qwen/${contract.training.model.name} --local-dir "${dir}"`, evidence)
  }
  const config = path.join(dir, 'config.json')
  const configStat = await statOf(config)
  if (!configStat?.isFile || configStat.size === 0) return fail('model', title, `${config} is missing or empty`, 'The checkpoint download is incomplete.', evidence)
  return pass('model', title, `${dir} has config.json`, evidence)
}

/** NEMO_GYM_SOURCE_DATA is the recipe's raw file (never the `_relax.jsonl` preview). */
export async function checkSourceData(input: PreflightInput): Promise<PreflightItem> {
  const title = 'Source data is the raw Gym file'
  const raw = input.target.contract.data.raw_filename
  const value = input.scriptEnv.NEMO_GYM_SOURCE_DATA
  if (!value) return fail('source-data', title, 'NEMO_GYM_SOURCE_DATA is not set', `Set it in env.sh to the absolute shared path of ${raw}.`)
  const evidence = {NEMO_GYM_SOURCE_DATA: value, expected: raw}
  if (!path.isAbsolute(value)) return fail('source-data', title, `NEMO_GYM_SOURCE_DATA is relative: ${value}`, 'Every Ray node must see the same absolute path.', evidence)
  if (value.endsWith('_relax.jsonl')) {
    return fail('source-data', title, `${value} is the converted preview, not the raw file`, `Training converts the raw rows itself; point NEMO_GYM_SOURCE_DATA at ${path.join(path.dirname(value), raw)}.`, evidence)
  }
  if (path.basename(value) !== raw) return fail('source-data', title, `${value} does not end with /${raw}`, 'Use the file the prepare script wrote.', evidence)
  const stat = await statOf(value)
  if (!stat?.isFile || stat.size === 0) return fail('source-data', title, `${value} is missing or empty`, 'Run the prepare step first (gymrecipe prepare).', evidence)
  return pass('source-data', title, `${value} (${stat.size} bytes)`, evidence)
}

/** The ladder up to the data rung (static, then data) on the script's environment. */
export async function checkDataRung(input: PreflightInput): Promise<PreflightItem> {
  const title = 'Data rung passes'
  if (!RUNG_DEFINITIONS.some((d) => d.rung === 'data')) {
    return fail('data-rung', title, 'the data rung is not available in this build, so the source data is unproven', 'Run `gymrecipe verify --level data` with a build that has it.')
  }
  const report = await runLadder(
    RUNG_DEFINITIONS,
    checkContext(input.target, {env: input.scriptEnv, smoke: input.smoke, gymRoot: input.gymRoot, signal: input.signal}),
    {level: 'data'},
  )
  const problems = report.rungs
    .flatMap((r) => r.checks)
    .filter((c) => c.status !== 'pass')
    .map((c) => `${c.rung}/${c.title}: ${c.status === 'skip' ? 'not checked: ' : ''}${c.message}`)
  const summary = report.rungs.map((r) => `${r.rung} ${r.status}`).join(', ')
  if (report.status !== 'pass') {
    return fail('data-rung', title, `${summary}${problems.length > 0 ? `: ${problems.slice(0, 5).join('; ')}` : ''}`, `gymrecipe verify ${input.target.id} --level data --relax-root ${input.target.relaxRoot}`, {rungs: report.rungs})
  }
  return pass('data-rung', title, summary, {checks: report.rungs.reduce((n, r) => n + r.checks.length, 0)})
}

/** The Gateway the script will use is ready, speaks the protocol, and has no active trial. */
export async function checkGateway(input: PreflightInput): Promise<PreflightItem> {
  const title = 'Gateway ready with zero active trials'
  const gateway = trainingGateway(input.target.contract, input.scriptEnv)
  if ('problem' in gateway) return fail('gateway', title, gateway.problem, 'Set GYM_HOST in env.sh.')
  const url = `${gateway.url}/readyz`
  const {answer, error} = await readyz(gateway.url, 5000)
  if (!answer) return fail('gateway', title, `no answer from ${url}: ${error}`, `Start the service first: gymrecipe start ${input.target.id}`, {gateway: gateway.url})
  const status = answer.status
  const body = objectFields(answer.json)
  const evidence = {
    gateway: gateway.url,
    httpStatus: status,
    ready: body.ready ?? null,
    active_trials: body.active_trials ?? null,
    trials: body.trials ?? null,
    service_epoch: body.service_epoch ?? null,
    gym_commit: body.gym_commit ?? null,
  }
  if (body.protocol_version !== PROTOCOL) {
    return fail('gateway', title, `${url} answered HTTP ${status} but is not a Relax Gateway`, 'Another service holds this port, or NEMO_GYM_GATEWAY_PORT is wrong.', evidence)
  }
  if (status !== 200 || body.ready !== true) return fail('gateway', title, `${url} is not ready (HTTP ${status}, ready=${String(body.ready)})`, `Check the service: gymrecipe status ${input.target.id}; docker logs ${input.target.contract.service.container}`, evidence)
  if (body.active_trials !== 0) {
    return fail(
      'gateway',
      title,
      `${body.active_trials} active trial(s) on ${gateway.url}: another requester (a stale Relax client or another run) is using this Gateway`,
      'Stop that requester first, then restart the service and check that trials=0 on a fresh service_epoch.',
      evidence,
    )
  }
  const commit = input.target.contract.gym.commit
  if (body.gym_commit !== commit) {
    return fail('gateway', title, `the Gateway reports gym_commit ${body.gym_commit}, the recipe pins ${commit}`, `Rebuild and restart the service: gymrecipe start ${input.target.id}`, evidence)
  }
  // A ready Gateway on this port may be another recipe's: it must register this recipe's pair.
  const {environment, gateway_config: config} = input.target.contract.gym
  const registration = await gatewayRegisters(gateway.url, environment, config, input.target.contract.gateway.interrupt_policy)
  if (registration.registered === false) {
    return fail('gateway', title, `the Gateway on ${gateway.url} does not register ${environment}/${config}: it is another recipe's service`, `Start this recipe's service (gymrecipe start ${input.target.id}) on its own port, or point NEMO_GYM_GATEWAY_PORT at it.`, evidence)
  }
  if (registration.registered === null) {
    return fail('gateway', title, `cannot tell whether the Gateway on ${gateway.url} registers ${environment}/${config}: a registration probe was answered HTTP ${registration.answer.status}`, `gymrecipe status ${input.target.id}`, evidence)
  }
  return pass('gateway', title, `${gateway.url} ready, registers ${environment}/${config}, active_trials=0, epoch ${String(body.service_epoch).slice(0, 8)}`, evidence)
}

/** The Gateway port the script will use equals the running service's port (container env, else the contract). */
export async function checkGatewayPort(input: PreflightInput): Promise<PreflightItem> {
  const title = 'Training targets the running service port'
  const {contract} = input.target
  const gateway = trainingGateway(contract, input.scriptEnv)
  if ('problem' in gateway) return fail('gateway-port', title, gateway.problem)
  const docker = await tryDocker(dockerTarget(input.callerEnv))
  let servicePort = contract.service.gateway_port
  let source = 'recipe.yaml service.gateway_port'
  let note = ''
  if (docker) {
    const container = await inspectContainer(docker, contract.service.container)
    if (container) {
      if (container.owner !== contract.id) {
        return fail('gateway-port', title, `container ${contract.service.container} is not this recipe's (ai.relax.recipe=${container.owner ?? '<unset>'})`, 'gymrecipe never uses a container without its ownership label.')
      }
      if (!container.running) return fail('gateway-port', title, `container ${contract.service.container} is not running (${container.status})`, `gymrecipe start ${contract.id}`)
      const fromContainer = Number(container.env.NEMO_GYM_GATEWAY_PORT)
      if (Number.isInteger(fromContainer) && fromContainer > 0) {
        servicePort = fromContainer
        source = `container ${contract.service.container} NEMO_GYM_GATEWAY_PORT`
      }
    } else {
      note = ` (no container ${contract.service.container}; compared with the contract)`
    }
  } else {
    note = ' (Docker not reachable; compared with the contract)'
  }
  const evidence = {trainingPort: gateway.port, trainingPortSource: gateway.portSource, servicePort, servicePortSource: source}
  if (gateway.port !== servicePort) {
    return fail(
      'gateway-port',
      title,
      `the training script would use port ${gateway.port} (${gateway.portSource}) but the service listens on ${servicePort} (${source})${note}`,
      'Set NEMO_GYM_GATEWAY_PORT in env.sh to the port the service was started with (one value for both scripts).',
      evidence,
    )
  }
  return pass('gateway-port', title, `port ${gateway.port} (${source})${note}`, evidence)
}

/** RAY_ADDRESS / the dashboard address resolves and answers /api/version. */
export async function checkDashboard(input: PreflightInput): Promise<PreflightItem> {
  const title = 'Ray dashboard reachable'
  let endpoint
  try {
    endpoint = resolveJobsEndpoint(input.scriptEnv)
  } catch (error) {
    return fail('ray-dashboard', title, messageOf(error), hintOf(error) ?? '', {})
  }
  const {address, source} = endpoint
  const shown = redactUrl(address)
  const evidence = {dashboard: shown, source, ...(endpoint.note ? {note: endpoint.note} : {})}
  const resolveProblem = await dashboardResolveProblem(address)
  if (resolveProblem) return fail('ray-dashboard', title, `${shown} (${source}): ${resolveProblem}`, 'Set RAY_ADDRESS=<head>:6379 or RAY_DASHBOARD_ADDRESS=http://<head>:8265 in env.sh.', evidence)
  // Malformed headers are bad input (exit 2), not an unreachable cluster.
  const {headers, auth} = rayCredentials(input.scriptEnv)
  try {
    const client = rayJobsClient(address, {headers, auth, timeoutMs: 10_000, signal: input.signal})
    const version = await client.version()
    if (input.submissionId) {
      const existing = await client.status(input.submissionId).catch((error) => {
        if (codeOf(error) === 'E_RAY_JOB_NOT_FOUND') return undefined
        throw error
      })
      if (existing) {
        return fail('ray-dashboard', title, `submission id ${input.submissionId} already exists on ${shown} (${existing.status})`, 'Ray never reuses a submission id; run train again for a fresh one.', evidence)
      }
    }
    return pass('ray-dashboard', title, `${shown} (${source}), Ray ${String(version.ray_version ?? '?')}, credentials: ${auth.how}`, {...evidence, ray_version: version.ray_version ?? null, credentials: auth.how})
  } catch (error) {
    return fail('ray-dashboard', title, `${shown} (${source}): ${messageOf(error)}`, hintOf(error) ?? 'Set RAY_DASHBOARD_ADDRESS when the dashboard is not on <RAY_ADDRESS host>:8265.', evidence)
  }
}

/** The programs the training script calls. */
export async function checkTools(input: PreflightInput): Promise<PreflightItem> {
  const title = 'ray, jq and bash on PATH'
  const found: Record<string, string | null> = {}
  for (const tool of ['bash', 'jq', 'ray']) found[tool] = (await which(tool, input.callerEnv.PATH ?? '')) ?? null
  const missing = Object.entries(found)
    .filter(([, where]) => !where)
    .map(([tool]) => tool)
  if (missing.length > 0) {
    return fail('tools', title, `not on PATH: ${missing.join(', ')}`, missing.includes('ray') ? "The training script submits with `ray job submit`: install Ray's CLI (pip install 'ray[default]') matching the cluster." : 'Install the missing tools.', {found})
  }
  return pass('tools', title, Object.values(found).join(', '), {found})
}

/** The verifier has examples: a run on a grader never shown to tell right from wrong proves nothing. */
async function checkVerifierKnown(input: PreflightInput): Promise<PreflightItem> {
  const title = 'The verifier has known-correct and known-wrong examples'
  const v = input.target.contract.verifier
  if (v.kind === 'pending') {
    return fail('verifier', title, `verifier pending: ${v.pending ?? 'no example is recorded'}`, `Give the examples (gymrecipe new ${input.target.id} --update --verifier <file.yaml>), then prove them: gymrecipe verify ${input.target.id} --level service`)
  }
  return pass('verifier', title, v.kind === 'golden' ? 'a golden trial (recipe.yaml verifier)' : `${v.correct.length} correct and ${v.wrong.length} wrong turn(s) in recipe.yaml`)
}

/** What each pre-flight check is doing while it runs (the data rung alone can take seconds). */
const UNDER_WAY = new Map<(input: PreflightInput) => Promise<PreflightItem>, string>([
  [checkTools, 'looking for ray, jq and bash'],
  [checkVerifierKnown, "reading the verifier's examples"],
  [checkModel, 'checking the model directory'],
  [checkSourceData, 'checking the source data'],
  [checkDataRung, 'climbing the static and data rungs'],
  [checkGateway, 'asking the Gateway /readyz'],
  [checkGatewayPort, "comparing the training script's Gateway port with the service's"],
  [checkDashboard, 'asking the Ray dashboard'],
])

export interface PreflightProgress {
  /** A check starts: what it is doing. */
  started?(doing: string): void
  /** A check ended: its result, in order. */
  finished?(item: PreflightItem): void
}

export async function runPreflight(input: PreflightInput, progress: PreflightProgress = {}): Promise<PreflightItem[]> {
  const items: PreflightItem[] = []
  for (const [check, doing] of UNDER_WAY) {
    progress.started?.(doing)
    let item: PreflightItem
    try {
      item = await check(input)
    } catch (error) {
      // Bad input (e.g. malformed RAY_JOB_HEADERS) stops the command with exit 2, like any usage error.
      if (isGymError(error) && error.exit === ExitCode.usage) throw error
      item = fail(check.name, check.name, `check crashed: ${messageOf(error)}`, hintOf(error))
    }
    items.push(item)
    progress.finished?.(item)
  }
  return items
}
