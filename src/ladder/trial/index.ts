/**
 * The trial rung: one deterministic trial through the real Gateway.
 *
 * gymrecipe serves a scripted model on the callback host in the recipe's protocol, creates
 * the trial with the recipe's task row, renews the lease while polling, and passes only on
 * the expected status, reward, tool metrics, tool-result history, artifacts (when
 * configured) and `/readyz.active_trials` back to 0. Stateful environments also abort a
 * second trial mid-flight and require cleanup to be confirmed.
 */
import {splitConfigRootPath} from '../../contract/gym-config/paths.js'
import {ExitCode, GymError} from '../../errors.js'
import {readContainerFile, recipeContainerLogLines} from '../../runtime/container-file.js'
import {gatewayClient} from '../../runtime/gateway-trials.js'
import {PROTOCOL_PATHS, startScriptedModel} from '../../runtime/scripted-model.js'
import type {Check, CheckContext, NamedResult, RungDefinition} from '../types.js'
import {scriptEnv, ScratchKey} from '../scratch.js'
import {serviceAddress, type ServiceAddress} from './context.js'
import {type AbortRun, type TrialPlan, type TrialRun, runAbortedTrial, runTrial} from './engine.js'
import {
  evaluateAbort,
  evaluateArtifact,
  evaluateCreate,
  evaluateGatewayClean,
  evaluateHistory,
  evaluateMetrics,
  evaluateProbe,
  evaluateReward,
  evaluateStatus,
  evaluateToolsOffered,
} from './evaluate.js'
import {type RelaxTask, pickRow, readTaskFromGymRoot, toRelaxTask} from './task.js'
import {explainFailure} from './explain.js'
import {recordGatewayUse} from '../../runtime/gateway-ledger.js'
import {codeOf, hintOf, messageOf} from '../../errors.js'
import {verbatim} from '../../json-document.js'


interface Prepared {
  address: ServiceAddress
  callbackHost: string
  callbackPort?: number
  env: Record<string, string>
  plan: TrialPlan
  activeBefore: number | null
}

const PREPARED = new ScratchKey<Prepared>('trial.prepared')
const MAIN_RUN = new ScratchKey<TrialRun>('trial.main-run')

function skip(id: string, title: string, why: string): NamedResult {
  return {id, title, status: 'skip', message: `not checked: ${why}`}
}

function stateful(ctx: CheckContext): boolean {
  const c = ctx.target.contract
  return Boolean(c?.trial?.cleanup_probe && c.gateway.cleanup)
}

async function loadTask(ctx: CheckContext, ref = ctx.target.contract!.trial!.task): Promise<{task: RelaxTask; source: string}> {
  const contract = ctx.target.contract!
  // A row of the user's own tree (`${NAME}/…`): the same absolute path here and in the container, which mounts it.
  const rooted = splitConfigRootPath(ref.file)
  if (rooted) {
    const dir = (await scriptEnv(ctx))[rooted.name]
    if (!dir?.startsWith('/')) {
      throw new GymError(`trial.task.file ${ref.file} is under ${rooted.name}, which env.sh does not set to an absolute directory`, {code: 'E_TRIAL_TASK', exit: ExitCode.failure, hint: `Set ${rooted.name} in env.sh to the absolute path of your own tree.`})
    }
    const {text, where} = await readTaskFromGymRoot(dir, rooted.inside)
    return {task: toRelaxTask(pickRow(text, ref.row, where)), source: `${where} row ${ref.row}`}
  }
  if (ctx.options.gymRoot) {
    const {text, where} = await readTaskFromGymRoot(ctx.options.gymRoot, ref.file)
    return {task: toRelaxTask(pickRow(text, ref.row, where)), source: `${where} row ${ref.row}`}
  }
  const inImage = `/opt/nemo-gym/${ref.file}`
  const text = await readContainerFile(contract.service.container, inImage, {recipeId: contract.id})
  const where = `${contract.service.container}:${inImage}`
  return {task: toRelaxTask(pickRow(text, ref.row, where)), source: `${where} row ${ref.row}`}
}

const prepare: Check = {
  id: 'trial.setup',
  title: 'Trial set-up: contract, task row, Gateway ready',
  async run(ctx) {
    const contract = ctx.target.contract
    const results: NamedResult[] = []
    if (!contract) {
      return [skip('trial.contract', 'Trial contract', 'no recipe.yaml: the scripted turns and expected values live in the recipe contract')]
    }
    if (!contract.trial) {
      return [{
        id: 'trial.contract', title: 'Trial contract', status: 'fail',
        message: 'recipe.yaml has no trial block (scripted turns and expected values)',
        hint: 'Add a trial: block (see recipes/calendar.yaml or recipes/workplace-assistant.yaml), or regenerate with gymrecipe new --from <built-in>.',
        file: 'recipe.yaml',
      }]
    }
    const trial = contract.trial
    results.push({
      id: 'trial.contract', title: 'Trial contract', status: 'pass',
      message: `${trial.turns.length} scripted turn(s) over ${contract.gateway.callback_protocol}; expect ${trial.expect.status}, reward ${trial.expect.reward}, history [${trial.expect.tool_result_history.join(', ')}]`,
    })
    const env = await scriptEnv(ctx)
    const address = serviceAddress(contract, env)
    if ('error' in address) {
      results.push({id: 'trial.gateway-ready', title: 'Gateway ready', status: 'fail', message: address.error, hint: 'The trial targets the Gateway the training script uses: http://${GYM_HOST}:${NEMO_GYM_GATEWAY_PORT}.'})
      return results
    }
    let task: {task: RelaxTask; source: string}
    try {
      task = await loadTask(ctx)
      results.push({id: 'trial.task', title: 'Trial task row', status: 'pass', message: `task from ${task.source} (${task.task.messages.length} message(s))`, evidence: {source: task.source}})
    } catch (error) {
      results.push({id: 'trial.task', title: 'Trial task row', status: 'fail', message: messageOf(error), hint: hintOf(error)})
      return results
    }
    const gateway = gatewayClient(address.gatewayUrl)
    const ready = await gateway.readyz()
    const body = ready.body
    if (ready.status !== 200 || body?.ready !== true) {
      const why = ready.status === 0 ? `unreachable (${ready.error})` : `HTTP ${ready.status}, ready=${body?.ready ?? '(not given)'}`
      results.push({
        id: 'trial.gateway-ready', title: 'Gateway ready', status: 'fail',
        message: `${address.gatewayUrl}/readyz is ${why}`,
        hint: `Start the service (gymrecipe start ${contract.id}) and check docker logs ${contract.service.container}.`,
        evidence: {readyz: verbatim(body)},
      })
      return results
    }
    const activeBefore = typeof body.active_trials === 'number' ? body.active_trials : null
    results.push({
      id: 'trial.gateway-ready', title: 'Gateway ready', status: 'pass',
      message: `${address.gatewayUrl} ready (trials=${body.trials}, active_trials=${body.active_trials}, epoch ${String(body.service_epoch ?? '?').slice(0, 8)})`,
      evidence: {readyz: verbatim(body)},
    })
    const options = ctx.options
    const callbackHost = options.callbackHost ?? address.gymHost
    const prepared: Prepared = {
      address,
      callbackHost,
      callbackPort: options.callbackPort,
      env,
      activeBefore,
      plan: {
        recipeId: contract.id,
        environment: contract.gym.environment,
        config: contract.gym.gateway_config,
        task: task.task,
        turns: trial.turns,
        interruptPolicy: contract.gateway.interrupt_policy,
        deadlineS: trial.deadline_s,
        leaseS: trial.lease_s,
        captureArtifacts: Boolean(env.NEMO_GYM_ARTIFACT_ROOT),
        signal: ctx.options.signal,
      },
    }
    ctx.scratch.set(PREPARED, prepared)
    return results
  },
}

const MAIN_IDS: Array<[string, string]> = [
  ['trial.created', 'Trial created'],
  ['trial.status', 'Trial status'],
  ['trial.reward', 'Trial reward'],
  ['trial.tool-metrics', 'Tool calls and tool outputs'],
  ['trial.history', 'Tool results fed back (callback history)'],
]

const runMain: Check = {
  id: 'trial.run',
  title: 'Deterministic trial through the Gateway',
  async run(ctx) {
    const prepared = ctx.scratch.get(PREPARED)
    if (!prepared) return MAIN_IDS.map(([id, title]) => skip(id, title, 'the trial set-up did not pass'))
    const contract = ctx.target.contract!
    const trial = contract.trial!
    const protocol = contract.gateway.callback_protocol
    let model
    try {
      model = await startScriptedModel({host: prepared.callbackHost, port: prepared.callbackPort, protocol})
    } catch (error) {
      return [{
        id: 'trial.created', title: 'Trial created', status: 'fail',
        message: `cannot serve the scripted model on ${prepared.callbackHost}:${prepared.callbackPort ?? 0} (${codeOf(error) ?? messageOf(error)})`,
        hint: 'The callback host must be an address of this machine that the Gym container can reach; pass --callback-host/--callback-port.',
      }]
    }
    let run: TrialRun
    let rejected
    const startedAt = Date.now() / 1000 - 1
    try {
      run = await runTrial(gatewayClient(prepared.address.gatewayUrl), model, prepared.plan)
      rejected = model.rejected.map((r) => ({...r}))
    } finally {
      await model.close()
    }
    ctx.scratch.set(MAIN_RUN, run)
    const base = {requestId: run.requestId, callbackBaseUrl: model.baseUrl, protocol, servedPath: PROTOCOL_PATHS[protocol]}
    const created = evaluateCreate(run, {...base, callbackHost: prepared.callbackHost, env: prepared.env, kind: 'trial'})
    if (created.status !== 'pass') return [created, ...MAIN_IDS.slice(1).map(([id, title]) => skip(id, title, 'the trial was not created'))]
    const results: NamedResult[] = [
      created,
      evaluateStatus(run, trial.expect.status),
      evaluateReward(run, trial.expect.reward),
      evaluateMetrics(run, trial.expect),
      evaluateHistory(run, trial.expect.tool_result_history, rejected, base),
    ]
    if (contract.data.tools) results.push(evaluateToolsOffered(run))
    if (prepared.plan.captureArtifacts) results.push(await evaluateArtifact(run, prepared.env.NEMO_GYM_ARTIFACT_ROOT, contract))
    if (results.some((r) => r.status === 'fail')) await quoteTheCause(results, run, contract.service.container, contract.id, startedAt)
    return results
  },
}

/**
 * A recipe with several environments: each further environment with a trial of its own runs it
 * through the same Gateway under its own environment/config, and must come out as recorded.
 * One that has none is named, never passed over in silence.
 */
const runOtherEnvironments: Check = {
  id: 'trial.environments',
  title: 'Deterministic trial of every further environment',
  async run(ctx) {
    const contract = ctx.target.contract
    const others = contract?.gym.additional_environments ?? []
    const prepared = ctx.scratch.get(PREPARED)
    if (!contract || !prepared) return others.map((e) => skip(`trial.${e.environment}`, `Trial of ${e.environment}`, 'the trial set-up did not pass'))
    const results: NamedResult[] = []
    for (const e of others) {
      const id = `trial.${e.environment}`
      const title = `Trial of ${e.environment} (Gateway config ${e.gateway_config})`
      if (!e.trial) {
        results.push({id, title, status: 'fail', message: `recipe.yaml records no trial for ${e.environment}: nothing proves it trains through the Gateway`, hint: 'Add a trial: block to its entry under gym.additional_environments (as recipes/<built-in>.yaml write one).', file: 'recipe.yaml'})
        continue
      }
      let task
      try {
        task = await loadTask(ctx, e.trial.task)
      } catch (error) {
        results.push({id, title, status: 'fail', message: messageOf(error), hint: hintOf(error)})
        continue
      }
      const model = await startScriptedModel({host: prepared.callbackHost, port: prepared.callbackPort, protocol: contract.gateway.callback_protocol})
      let run: TrialRun
      try {
        run = await runTrial(gatewayClient(prepared.address.gatewayUrl), model, {...prepared.plan, environment: e.environment, config: e.gateway_config, task: task.task, turns: e.trial.turns, deadlineS: e.trial.deadline_s, leaseS: e.trial.lease_s, captureArtifacts: false})
      } finally {
        await model.close()
      }
      const checks = [evaluateStatus(run, e.trial.expect.status), evaluateReward(run, e.trial.expect.reward), evaluateMetrics(run, e.trial.expect)]
      const failed = checks.filter((c) => c.status !== 'pass')
      results.push(failed.length === 0
        ? {id, title, status: 'pass', message: `${checks.map((c) => c.message).join('; ')} (task from ${task.source})`}
        : {id, title, status: 'fail', message: failed.map((c) => c.message).join('; '), hint: failed.find((c) => c.hint)?.hint ?? `Read the container log: gymrecipe logs ${contract.id}.`})
    }
    return results
  },
}

/**
 * A failed trial's cause is in the container's log, not in the Gateway's answer: the line that
 * explains it is quoted in the first failed check (the status check when it failed).
 */
async function quoteTheCause(results: NamedResult[], run: TrialRun, container: string, recipeId: string, sinceSeconds: number): Promise<void> {
  const lines = await recipeContainerLogLines(container, {recipeId, sinceSeconds}).catch(() => undefined)
  if (!lines) return
  const rolloutIds = [...new Set(run.callbacks.map((c) => /\/ng-rollout\/([^/]+)\//.exec(c.path)?.[1]).filter((id): id is string => Boolean(id)))]
  const explained = explainFailure(lines, {requestId: run.requestId, rolloutIds})
  if (!explained) return
  const target = results.find((r) => r.id === 'trial.status' && r.status === 'fail') ?? results.find((r) => r.status === 'fail')!
  target.message = `${target.message}; the container log says (${explained.tie}): ${explained.line}`
  target.evidence = {...target.evidence, log_line: explained.line, log_line_tie: explained.tie}
  target.hint ??= `Read the whole log: gymrecipe logs ${recipeId} (or docker logs ${container}).`
}

const runCleanup: Check = {
  id: 'trial.cleanup',
  title: 'Cleanup of an aborted trial',
  async run(ctx) {
    const prepared = ctx.scratch.get(PREPARED)
    if (!prepared) return [skip('trial.cleanup-abort', 'Aborted trial cleaned up', 'the trial set-up did not pass')]
    const main = ctx.scratch.get(MAIN_RUN)
    if (main && main.create.status !== 202) return [skip('trial.cleanup-abort', 'Aborted trial cleaned up', 'the Gateway refused the first trial (see trial.created)')]
    const contract = ctx.target.contract!
    const cleanup = contract.gateway.cleanup!
    let model
    try {
      model = await startScriptedModel({host: prepared.callbackHost, port: prepared.callbackPort, protocol: contract.gateway.callback_protocol})
    } catch (error) {
      return [{id: 'trial.cleanup-abort', title: 'Aborted trial cleaned up', status: 'fail', message: `cannot serve the scripted model (${codeOf(error) ?? messageOf(error)})`}]
    }
    let run: AbortRun
    try {
      run = await runAbortedTrial(gatewayClient(prepared.address.gatewayUrl), model, prepared.plan)
    } finally {
      await model.close()
    }
    const created = evaluateCreate(run, {requestId: run.requestId, callbackHost: prepared.callbackHost, env: prepared.env, kind: 'abort', callbackBaseUrl: model.baseUrl})
    if (created.status !== 'pass') return [{...created, id: 'trial.cleanup-abort', title: 'Aborted trial cleaned up'}]
    const server = cleanup.server === 'agent' ? prepared.address.agentUrl : prepared.address.resourceUrl
    return [evaluateAbort(run), await evaluateProbe(server, cleanup.path)]
  },
}

const gatewayClean: Check = {
  id: 'trial.gateway-clean',
  title: 'Gateway clean afterwards (active_trials back to 0)',
  async run(ctx) {
    const prepared = ctx.scratch.get(PREPARED)
    if (!prepared) return [skip('trial.gateway-clean', 'Gateway clean afterwards', 'the trial set-up did not pass')]
    const main = ctx.scratch.get(MAIN_RUN)
    const results = await evaluateGatewayClean(gatewayClient(prepared.address.gatewayUrl), prepared.activeBefore, main)
    // The trials this rung created are expected on this epoch from now on (see the service rung).
    const after = (results[0]?.evidence as {readyz?: {service_epoch?: unknown; trials?: unknown}} | undefined)?.readyz
    if (typeof after?.service_epoch === 'string' && typeof after?.trials === 'number') {
      await recordGatewayUse(ctx.target.dir, {serviceEpoch: after.service_epoch, trialsAfter: after.trials, by: 'the trial rung'}, ctx.options.env)
    }
    return results
  },
}

export const trialRung: RungDefinition = {
  rung: 'trial',
  summary: 'a deterministic trial through the Gateway completes with the expected reward, tool results fed back and cleanup proven',
  inputs: ['files', 'imageId', 'serviceEpoch'],
  next: (recipe, relaxRoot) => `gymrecipe train ${recipe} --relax-root ${relaxRoot} --dry-run`,
  checks: (ctx) => {
    const others = (ctx.target.contract?.gym.additional_environments?.length ?? 0) > 0 ? [runOtherEnvironments] : []
    return stateful(ctx) ? [prepare, runMain, ...others, runCleanup, gatewayClean] : [prepare, runMain, ...others, gatewayClean]
  },
}
