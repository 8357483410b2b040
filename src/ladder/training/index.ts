/**
 * The training rung: prove a run trained, from its outputs. A SUCCEEDED job
 * state is never enough; every check reads an artifact:
 *
 * - rollout dumps under `<save>/rollout_result/train/` exist and have Relax's fields;
 * - groups (by group_index) have >= 4 samples and at least one has reward variance;
 * - the job log has an optimizer step `step N: {... 'train/grad_norm': <finite> ...}`;
 * - a checkpoint `iter_XXXXXXX/` named by `latest_checkpointed_iteration.txt`;
 * - no OOM or Traceback in the driver log or any worker log given;
 * - the Gateway's `/readyz.active_trials` is back to 0.
 *
 * When rewards carry no signal, the groups check says why (triage.ts).
 */
import {promises as fsp} from 'node:fs'
import path from 'node:path'

import {trainingLogName} from '../../contract/endpoints.js'
import {environmentsOf, type RecipeContract} from '../../contract/types.js'
import {gatewayClient, trialCounts} from '../../runtime/gateway-trials.js'
import {normalizeDashboardAddress, rayJobsClientFromEnv} from '../../runtime/ray-jobs.js'
import {type RecipeRunState, readRunState} from '../../runtime/run-state.js'
import {scriptEnv, ScratchKey} from '../scratch.js'
import {serviceAddress} from '../trial/context.js'
import type {Check, CheckContext, NamedResult, RungDefinition} from '../types.js'
import {
  type Dumps,
  checkpointState,
  digestFile,
  digestText,
  groupStats,
  LogDigest,
  readRolloutDumps,
  readTerminalTraces,
  workerLogFiles,
} from './outputs.js'
import {VERDICT_TEXT, triage} from './triage.js'
import {promptIndex, signalByEnvironment} from './environments.js'
import {dataPlan} from '../data/source.js'
import {messageOf} from '../../errors.js'


export const MIN_GROUP_SIZE = 4

interface JobLog {
  digest: LogDigest
  source: string
}

interface Facts {
  saveDir: string
  dumps?: Dumps
  log?: JobLog
  runState?: RecipeRunState
}

const FACTS = new ScratchKey<Facts>('training.facts')

/** `${EXP_DIR}/<model>_mcore_<gpus>xgpu` as the generated training script passes it to --save. */
export function saveDirOf(contract: RecipeContract, env: Record<string, string | undefined>, relaxRoot: string): {saveDir: string; expDir: string; defaulted: boolean} {
  const exp = (env.EXP_DIR ?? '').trim()
  const expDir = exp ? path.resolve(relaxRoot, exp) : path.join(relaxRoot, 'outputs', `nemo-gym-${contract.id}`)
  return {saveDir: path.join(expDir, `${contract.training.model.name}_mcore_${contract.training.gpus}xgpu`), expDir, defaulted: !exp}
}

/**
 * The newest `log/<slug>-<gpus>xgpu-nemo-gym-<id>-<time>.log` the training script's tee wrote in
 * any of `dirs`, optionally only one modified since `sinceMs` (a run's own log, not an older one).
 */
export async function newestTrainingLog(dirs: string[], contract: Pick<RecipeContract, 'id' | 'training'>, sinceMs = 0): Promise<string | undefined> {
  const prefix = `${trainingLogName(contract)}-`
  let best: {file: string; mtime: number} | undefined
  for (const dir of dirs) {
    const entries = await fsp.readdir(dir).catch(() => [] as string[])
    for (const entry of entries) {
      if (!entry.startsWith(prefix) || !entry.endsWith('.log')) continue
      const file = path.join(dir, entry)
      const stat = await fsp.stat(file).catch(() => null)
      if (stat && stat.mtimeMs >= sinceMs && (!best || stat.mtimeMs > best.mtime)) best = {file, mtime: stat.mtimeMs}
    }
  }
  return best?.file
}

async function facts(ctx: CheckContext): Promise<Facts> {
  const existing = ctx.scratch.get(FACTS)
  if (existing) return existing
  const env = await scriptEnv(ctx)
  const {saveDir} = saveDirOf(ctx.target.contract!, env, ctx.target.relaxRoot)
  const made: Facts = {saveDir}
  ctx.scratch.set(FACTS, made)
  return made
}

function skip(id: string, title: string, why: string): NamedResult {
  return {id, title, status: 'skip', message: `not checked: ${why}`}
}

const needsContract = (id: string, title: string, run: (ctx: CheckContext) => Promise<NamedResult[]>): Check => ({
  id,
  title,
  async run(ctx) {
    if (!ctx.target.contract) return [skip(id, title, 'no recipe.yaml: the save directory and log names come from the recipe contract')]
    return run(ctx)
  },
})

const rolloutDumps = needsContract('training.rollout-dumps', 'Rollout dumps under <save>/rollout_result/train/', async (ctx) => {
  const run = await facts(ctx)
  const id = 'training.rollout-dumps'
  const title = 'Rollout dumps under <save>/rollout_result/train/'
  const stat = await fsp.stat(run.saveDir).catch(() => null)
  if (!stat?.isDirectory()) {
    return [{
      id, title, status: 'fail',
      message: `save directory ${run.saveDir} does not exist: the run wrote no outputs there`,
      hint: 'The save directory is ${EXP_DIR}/<model>_mcore_<gpus>xgpu/ with EXP_DIR from env.sh; check EXP_DIR, or that the job ran at all.',
      evidence: {save_dir: run.saveDir},
    }]
  }
  const dumps = await readRolloutDumps(run.saveDir)
  run.dumps = dumps
  const ev = {save_dir: run.saveDir, dump_dir: dumps.dir, files: dumps.files, samples: dumps.samples.length, problems: dumps.problems.slice(0, 10)}
  if (dumps.samples.length === 0) {
    const traces = await readTerminalTraces(run.saveDir)
    const triaged = traces.length > 0 ? triage([], traces, run.log?.digest) : undefined
    return [{
      id, title, status: 'fail',
      message: `no rollout samples under ${dumps.dir}${dumps.files.length > 0 ? ` (${dumps.files.length} empty file(s))` : ''}` +
        (triaged ? `; ${traces.length} sample(s) never committed — ${triaged.text}` : ''),
      hint: 'Relax writes <save>/rollout_result/train/{rollout_id}.jsonl whenever --save is set; no file means no rollout committed (see the job log).',
      evidence: {...ev, ...(triaged ? {triage: triaged} : {})},
    }]
  }
  if (dumps.problems.length > 0) {
    const p = dumps.problems[0]
    return [{id, title, status: 'fail', message: `${dumps.problems.length} malformed dump record(s); first: ${p.message}`, file: p.file, line: p.line, evidence: ev}]
  }
  return [{id, title, status: 'pass', message: `${dumps.samples.length} sample(s) in ${dumps.files.length} dump file(s) under ${dumps.dir}`, evidence: ev}]
})

const groups = needsContract('training.groups', 'Groups of >= 4 samples with reward variance', async (ctx) => {
  const run = await facts(ctx)
  const id = 'training.groups'
  const title = 'Groups of >= 4 samples with reward variance'
  if (!run.dumps || run.dumps.samples.length === 0) return [skip(id, title, 'no rollout samples to group')]
  const stats = groupStats(run.dumps.samples)
  const small = stats.filter((g) => g.size < MIN_GROUP_SIZE)
  const varied = stats.filter((g) => g.variance)
  const sizes = [...new Set(stats.map((g) => g.size))].sort((a, b) => a - b)
  const ev: Record<string, unknown> = {
    groups: stats.length,
    sizes,
    groups_with_variance: varied.length,
    rewards: stats.slice(0, 8).map((g) => ({group: g.key, rewards: g.rewards})),
  }
  const problems: string[] = []
  let hint: string | undefined
  if (small.length > 0) {
    problems.push(`${small.length} of ${stats.length} group(s) have fewer than ${MIN_GROUP_SIZE} samples (sizes ${sizes.join(', ')})` +
      (sizes[0] === 1 ? ': one sample per prompt gives zero GRPO advantage by construction' : ''))
    hint = `Use --n-samples-per-prompt >= ${MIN_GROUP_SIZE} in the training script.`
  }
  if (varied.length === 0) {
    const all = stats.flatMap((g) => g.rewards)
    const value = all.length > 0 && all.every((r) => r === all[0]) ? all[0] : undefined
    const traces = await readTerminalTraces(run.saveDir)
    const triaged = triage(run.dumps.samples, traces, run.log?.digest)
    ev.triage = triaged
    const what = value === undefined ? 'no group has reward variance' : `every reward is ${value}`
    problems.push(`${what}: zero advantage in all ${stats.length} group(s), nothing to learn from; ${triaged.text}`)
    if (value !== undefined && value > 0 && triaged.verdict === 'model') problems[problems.length - 1] = `${what}: every sample succeeded, zero advantage in all ${stats.length} group(s) (the task is too easy for this model, or the verifier accepts anything)`
    hint ??= triaged.verdict === 'model'
      ? 'Rewards are real but constant: check a few responses against the verifier (verify_<recipe>.py), the answer format and the parsers.'
      : `Fix the cause first (${VERDICT_TEXT[triaged.verdict]}): read the trial statuses and error codes in the job log and rollout_result/reward_terminal_traces/.`
  }
  if (problems.length > 0) return [{id, title, status: 'fail', message: problems.join('; '), hint, evidence: ev}]
  return [{id, title, status: 'pass', message: `${stats.length} group(s) of ${sizes.join('/')} samples; ${varied.length} with reward variance (non-zero advantage)`, evidence: ev}]
})

const ENVIRONMENTS_TITLE = 'Reward variance in every environment'

/** Several environments: each must show reward variance of its own, never averaged into the others'. */
const environmentSignal = needsContract('training.environments', ENVIRONMENTS_TITLE, async (ctx) => {
  const run = await facts(ctx)
  const id = 'training.environments'
  const title = ENVIRONMENTS_TITLE
  const environments = environmentsOf(ctx.target.contract!).map((e) => e.environment)
  run.dumps ??= await readRolloutDumps(run.saveDir)
  if (run.dumps.samples.length === 0) return [skip(id, title, 'no rollout samples to attribute')]
  const plan = await dataPlan(ctx)
  if (!plan.readable || !plan.file) return [skip(id, title, `the raw data (NEMO_GYM_SOURCE_DATA${plan.file ? ` ${plan.file}` : ''}) is not readable here, and only its rows tell which environment a dumped prompt belongs to`)]
  const index = await promptIndex(plan.file, new Set(environments))
  const signal = signalByEnvironment(run.dumps.samples, index, environments)
  const perEnvironment = Object.fromEntries(signal.environments.map((e) => [e.environment, {samples: e.samples, groups: e.groups, groups_with_variance: e.groupsWithVariance, mean_reward: e.meanReward, rewards: e.rewards}]))
  const ev = {per_environment: perEnvironment, unattributed: signal.unattributed, raw_data: plan.file}
  const attributed = run.dumps.samples.length - signal.unattributed
  if (attributed === 0) {
    return [{id, title, status: 'skip', message: `not checked: none of the ${run.dumps.samples.length} dumped prompt(s) matches the last user turn of a row of ${plan.file}`, hint: 'Was the run trained on this raw file? The prompts are matched by their last user turn (ChatML-rendered or a message list).', evidence: ev}]
  }
  const problems: string[] = []
  let hint: string | undefined
  for (const e of signal.environments) {
    if (e.samples === 0) {
      problems.push(`${e.environment} has no sample among the ${attributed} attributed: it never trained in this run`)
      hint ??= 'Check the mix (data.environments on the data rung) and that its rows reach the Gateway under their own environment/config.'
      continue
    }
    if (e.groupsWithVariance > 0) continue
    const triaged = triage(signal.samplesOf.get(e.environment) ?? [], [], undefined)
    const constant = e.rewards.length === 1 ? `every reward ${e.rewards[0]}` : 'no group with reward variance'
    problems.push(`${e.environment} never varies: ${constant} in its ${e.groups} group(s) of ${e.samples} sample(s), zero advantage; ${triaged.text.replace(/^triage: /, `triage of ${e.environment}: `)}`)
    hint ??= `Run verify_<recipe>.py --environment <name> and the trial of that environment; rewards that never move in one environment are hidden by the others' in the run-wide mean.`
  }
  const summary = signal.environments.map((e) => `${e.environment} ${e.samples} sample(s), ${e.groupsWithVariance}/${e.groups} group(s) varied${e.meanReward === null ? '' : `, mean reward ${Number(e.meanReward.toFixed(3))}`}`).join('; ')
  const unattributed = signal.unattributed > 0 ? ` (${signal.unattributed} sample(s) not attributed)` : ''
  if (problems.length > 0) return [{id, title, status: 'fail', message: `${problems.join('; ')} — per environment: ${summary}${unattributed}`, hint, evidence: ev}]
  return [{id, title, status: 'pass', message: `per environment: ${summary}${unattributed}`, evidence: ev}]
})

/** A log file read into a digest, or undefined when it cannot be read. */
async function fileLog(file: string): Promise<JobLog | undefined> {
  try {
    return {digest: await digestFile(file), source: file}
  } catch {
    return undefined
  }
}

async function loadJobLog(ctx: CheckContext, run: Facts): Promise<{log?: JobLog; problem?: string; tried: string[]}> {
  const contract = ctx.target.contract!
  const tried: string[] = []
  const explicit = ctx.options.jobLog
  if (explicit) {
    tried.push(explicit)
    const log = await fileLog(explicit)
    return log ? {log, tried} : {problem: `job log ${explicit} is not readable`, tried}
  }
  const env = await scriptEnv(ctx)
  // `gymrecipe train` hands over the submission it followed and the log it read while following.
  const handed = ctx.handoff?.train?.runState
  const state = handed ?? (await readRunState(ctx.target.dir, {...process.env, ...ctx.options.env}).catch(() => undefined))
  run.runState = state
  const handedLog = ctx.handoff?.train?.jobLog
  if (state && handedLog && handedLog.lines > 0) {
    return {log: {digest: handedLog, source: `Ray job ${state.submissionId} on ${normalizeDashboardAddress(state.dashboardAddress)}`}, tried}
  }
  if (state) {
    // The dashboard has the whole driver log, also for RAY_NO_WAIT=1 submissions: streamed, not held whole.
    const where = `Ray job ${state.submissionId} on ${normalizeDashboardAddress(state.dashboardAddress)}`
    tried.push(where)
    try {
      const {client} = rayJobsClientFromEnv(env, {address: state.dashboardAddress, timeoutMs: 20_000, signal: ctx.options.signal})
      const digest = new LogDigest(where)
      const streamed = await client.tail(state.submissionId, {onText: (text) => digest.push(text)}).catch(() => undefined)
      if (!streamed?.complete) {
        const text = await client.logs(state.submissionId)
        const whole = digestText(text, where)
        if (whole.lines > 0) return {log: {digest: whole, source: where}, tried}
      } else if (digest.end().lines > 0) {
        return {log: {digest, source: where}, tried}
      }
    } catch {
      // fall back to the local tee of `ray job submit`
    }
    if (state.logFile) {
      tried.push(state.logFile)
      const log = await fileLog(state.logFile)
      if (log) return {log, tried}
    }
  }
  const dirs = [...new Set([path.join(ctx.target.relaxRoot, 'log'), path.join(process.cwd(), 'log')])]
  tried.push(...dirs.map((d) => path.join(d, `${trainingLogName(contract)}-*.log`)))
  const found = await newestTrainingLog(dirs, contract)
  if (found) {
    const log = await fileLog(found)
    if (log) return {log, tried}
  }
  return {problem: 'no job log found', tried}
}

const optimizerStep = needsContract('training.optimizer-step', 'Optimizer step with a finite grad norm', async (ctx) => {
  const run = await facts(ctx)
  const id = 'training.optimizer-step'
  const title = 'Optimizer step with a finite grad norm'
  const {log, problem, tried} = await loadJobLog(ctx, run)
  if (!log) {
    return [{
      id, title, status: 'fail', message: `${problem} (looked at ${tried.join(', ')})`,
      hint: 'Pass --job-log <driver log>, or run the training through `gymrecipe train` so the submission is recorded.',
    }]
  }
  run.log = log
  const {steps, degenerate, saved} = log.digest
  const finite = steps.filter((s) => s.gradNorm !== null && Number.isFinite(s.gradNorm))
  const ev = {job_log: log.source, step_lines: steps.length, finite_steps: finite.length, degenerate_batches: degenerate, saved_rollout_results: saved, first_step: steps[0]?.text ?? null}
  if (steps.length === 0) {
    return [{
      id, title, status: 'fail',
      message: `no optimizer step in the job log ${log.source} (no "step N: {... 'train/grad_norm': ...}" line)${saved.length > 0 ? `, although ${saved.length} rollout result(s) were saved` : ''}`,
      hint: 'The trainer never finished a step: look for an actor failure in the worker logs (--worker-log) and check global batch size vs samples per rollout.',
      evidence: ev,
    }]
  }
  if (finite.length === 0) {
    const shown = steps.slice(0, 3).map((s) => `step ${s.step}: grad_norm ${s.gradNorm === null ? 'missing' : String(s.gradNorm)}`).join(', ')
    return [{
      id, title, status: 'fail',
      message: `${steps.length} step line(s) but no finite train/grad_norm (${shown}): every step was skipped`,
      hint: 'A NaN/inf grad norm means the optimizer skipped the step: check the loss scale, rewards and the degenerate-batch lines.',
      file: log.source.startsWith('/') ? log.source : undefined,
      line: log.source.startsWith('/') ? steps[0].line : undefined,
      evidence: ev,
    }]
  }
  return [{id, title, status: 'pass', message: `${finite.length} optimizer step(s) with a finite grad norm (last: step ${finite.at(-1)!.step}, grad_norm ${finite.at(-1)!.gradNorm}) in ${log.source}`, evidence: ev}]
})

const checkpoint = needsContract('training.checkpoint', 'Checkpoint iter_XXXXXXX + latest_checkpointed_iteration.txt', async (ctx) => {
  const run = await facts(ctx)
  const id = 'training.checkpoint'
  const title = 'Checkpoint iter_XXXXXXX + latest_checkpointed_iteration.txt'
  const state = await checkpointState(run.saveDir)
  const ev = {save_dir: run.saveDir, tracker: state.tracker, iteration: state.iteration, iter_dirs: state.iterDirs}
  if (state.tracker === null) {
    return [{
      id, title, status: 'fail',
      message: `no checkpoint: ${path.join(run.saveDir, 'latest_checkpointed_iteration.txt')} is missing${state.iterDirs.length > 0 ? ` (iter dirs: ${state.iterDirs.join(', ')})` : ' and there is no iter_* directory'}`,
      hint: 'Relax saves every --save-interval rollouts and after the last one; a missing checkpoint means the run did not get there (or --save points elsewhere).',
      evidence: ev,
    }]
  }
  if (!state.iteration || !/^\d+$/.test(state.iteration)) {
    return [{id, title, status: 'fail', message: `latest_checkpointed_iteration.txt holds ${JSON.stringify(state.iteration)}, not an iteration number`, file: state.tracker, evidence: ev}]
  }
  if (!state.iterDirExists) {
    return [{id, title, status: 'fail', message: `latest_checkpointed_iteration.txt names iteration ${state.iteration}, but ${state.iterDir} is missing or empty`, file: state.tracker, evidence: ev}]
  }
  return [{id, title, status: 'pass', message: `checkpoint ${state.iterDir} (latest_checkpointed_iteration.txt = ${state.iteration})`, evidence: ev}]
})

const logsClean = needsContract('training.logs-clean', 'No OOM or traceback in the driver and worker logs', async (ctx) => {
  const run = await facts(ctx)
  const id = 'training.logs-clean'
  const title = 'No OOM or traceback in the driver and worker logs'
  const findings = run.log ? [...run.log.digest.findings] : []
  const scanned: string[] = run.log ? [run.log.source] : []
  const missing: string[] = []
  for (const target of ctx.options.workerLogs ?? []) {
    let files: string[]
    try {
      files = await workerLogFiles(target)
    } catch {
      missing.push(target)
      continue
    }
    for (const file of files) {
      findings.push(...(await digestFile(file)).findings)
      scanned.push(file)
    }
  }
  const ev = {scanned, findings: findings.slice(0, 20), missing}
  if (missing.length > 0) {
    return [{id, title, status: 'fail', message: `worker log(s) not found: ${missing.join(', ')}`, evidence: ev}]
  }
  if (!run.log) {
    return [{id, title, status: 'fail', message: 'the driver log could not be read (see the optimizer-step check)', evidence: ev}]
  }
  if (findings.length > 0) {
    const first = findings.find((x) => x.kind === 'oom') ?? findings[0]
    const ooms = findings.filter((x) => x.kind === 'oom').length
    const tbs = findings.filter((x) => x.kind === 'traceback').length
    return [{
      id, title, status: 'fail',
      message: `${ooms > 0 ? `${ooms} OOM line(s)` : ''}${ooms > 0 && tbs > 0 ? ' and ' : ''}${tbs > 0 ? `${tbs} traceback(s)` : ''}; first in ${first.source}:${first.line}: ${first.text}`,
      hint: first.kind === 'oom'
        ? 'An actor ran out of GPU memory while the job may still report SUCCEEDED: lower max tokens per GPU, use --log-probs-chunk-size, or recompute.'
        : 'Read the traceback: a failure there is hidden by the job state.',
      file: first.source.startsWith('/') ? first.source : undefined,
      line: first.source.startsWith('/') ? first.line : undefined,
      evidence: ev,
    }]
  }
  const workers = scanned.length - 1
  return [{
    id, title, status: 'pass',
    message: `no OOM or traceback in the driver log${workers > 0 ? ` and ${workers} worker log file(s)` : ' (no worker logs given: pass --worker-log to scan Ray worker logs)'}`,
    evidence: ev,
  }]
})

const gatewayClean = needsContract('training.gateway-clean', 'Gateway clean after the run (active_trials 0)', async (ctx) => {
  const id = 'training.gateway-clean'
  const title = 'Gateway clean after the run (active_trials 0)'
  const env = await scriptEnv(ctx)
  const address = serviceAddress(ctx.target.contract!, env)
  if ('error' in address) return [{id, title, status: 'fail', message: address.error}]
  const ready = await gatewayClient(address.gatewayUrl).readyz()
  const active = ready.body?.active_trials
  const ev = {gateway: address.gatewayUrl, readyz: ready.body ?? ready.error ?? null}
  if (ready.status === 0 || typeof active !== 'number') {
    return [{id, title, status: 'fail', message: `${address.gatewayUrl}/readyz did not answer (${ready.status === 0 ? ready.error : `HTTP ${ready.status}`})`, evidence: ev}]
  }
  if (active > 0) {
    return [{
      id, title, status: 'fail',
      message: `active_trials=${active} on ${address.gatewayUrl} after the run: a trial leaked (a requester died without aborting, or an actor still hangs)`,
      hint: 'Stop the leftover requester or actor, then restart the service so the Gateway starts clean (trials=0).',
      evidence: ev,
    }]
  }
  return [{id, title, status: 'pass', message: `active_trials=0 (${trialCounts(ready.body)})`, evidence: ev}]
})

const jobState = needsContract('training.job-state', 'Ray job state (never proof on its own)', async (ctx) => {
  const run = await facts(ctx)
  const id = 'training.job-state'
  const title = 'Ray job state (never proof on its own)'
  const state = run.runState
  if (!state) return []
  const env = await scriptEnv(ctx)
  try {
    const handed = ctx.handoff?.train?.job
    const details = handed?.submission_id === state.submissionId ? handed : await rayJobsClientFromEnv(env, {address: state.dashboardAddress, timeoutMs: 20_000}).client.status(state.submissionId)
    const ev = {submission_id: state.submissionId, status: details.status, message: details.message, driver_exit_code: details.driver_exit_code}
    if (details.status === 'SUCCEEDED') {
      return [{id, title, status: 'pass', message: `job ${state.submissionId} SUCCEEDED (not proof by itself: the other checks are)`, evidence: ev}]
    }
    return [{id, title, status: 'fail', message: `job ${state.submissionId} is ${details.status}${details.message ? `: ${String(details.message).slice(0, 300)}` : ''}`, evidence: ev}]
  } catch (error) {
    return [skip(id, title, `the Ray dashboard did not report job ${state.submissionId} (${messageOf(error)})`)]
  }
})

export const trainingRung: RungDefinition = {
  rung: 'training',
  summary: 'a real run trained: rollouts with reward variance, a finite optimizer step, a checkpoint, clean logs',
  inputs: ['files', 'data', 'submissionId'],
  // The optimizer-step check reads the job log first: the other log-based checks reuse it.
  checks: (ctx) => [optimizerStep, rolloutDumps, groups, ...((ctx.target.contract?.gym.additional_environments?.length ?? 0) > 0 ? [environmentSignal] : []), checkpoint, logsClean, gatewayClean, jobState],
}
