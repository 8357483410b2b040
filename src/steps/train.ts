/**
 * `gymrecipe train`: pre-flight, then run the recipe's generated training script (which ends in
 * `ray job submit`), follow the job through the Ray Jobs REST API, and prove the run with the
 * training rung. A SUCCEEDED job state alone is never reported as success.
 *
 * The script runs unmodified, as `bash <run script>` from the Relax checkout, in its own process
 * group with its output streamed. gymrecipe only sets RELAX_SUBMISSION_ID (a fresh unique id, so it
 * knows which job is its own) and RAY_DASHBOARD_ADDRESS (the address it derived exactly as the
 * script would, so both talk to the same dashboard). Waiting is the script's default; only the
 * user's RAY_NO_WAIT=1 makes it return after submission, and gymrecipe then follows the job itself.
 * Ctrl+C never stops anything broadly: at most this run's own submission, by id.
 */
import {setTimeout as sleep} from 'node:timers/promises'
import {randomBytes} from 'node:crypto'
import path from 'node:path'

import {codeOf, ExitCode, GymError, messageOf} from '../errors.js'
import {resolveRecipe} from '../ladder/target.js'
import {newestTrainingLog, trainingRung} from '../ladder/training/index.js'
import type {RecipeTarget, RungReport} from '../ladder/types.js'
import {
  dashboardAddressFromEnv,
  followJob,
  isTerminal,
  type JobDetails,
  logTail,
  rayJobHeadersFromEnv,
  redactUrl,
  rayJobsClient,
} from '../runtime/ray-jobs.js'
import {recordGatewayUse} from '../runtime/gateway-ledger.js'
import {readyz} from '../runtime/http.js'
import {recipeEnvironment} from '../runtime/recipe-env.js'
import {runScript, type ScriptRun} from '../runtime/script.js'
import type {RecipeContract} from '../contract/types.js'
import {submissionIdFor, trainingGateway} from '../contract/endpoints.js'
import {type RecipeRunState, writeRunState} from '../runtime/run-state.js'
import {checkLines} from '../ladder/render.js'
import {shellWord} from '../shell-words.js'
import {runRung} from '../ladder/runner.js'
import {type PreflightItem, runPreflight} from './train-preflight.js'
import {Scratch} from '../ladder/scratch-store.js'
import {assertGymRoot} from '../contract/gym-config/paths.js'

export type TrainOutcome =
  | 'dry-run'
  | 'preflight-failed'
  | 'not-submitted'
  | 'succeeded'
  | 'job-failed'
  | 'job-stopped'
  | 'follow-lost'
  | 'training-rung-failed'
  | 'interrupted'

export interface TrainOptions {
  relaxRoot: string
  recipe: string
  /** The caller's environment; the script runs with it (plus the two variables above). */
  env: NodeJS.ProcessEnv
  dryRun: boolean
  /** Non-interactive Ctrl+C/SIGTERM: stop this run's own submission instead of only printing the command. */
  stopOnInterrupt: boolean
  smoke: boolean
  gymRoot?: string
  /** Ray worker logs (files or directories) the training rung scans for OOM and tracebacks. */
  workerLogs?: string[]
  /** Aborted when the user interrupts (Ctrl+C, SIGTERM). */
  interrupt: AbortSignal
  /** Ask a yes/no question on a terminal; undefined when nobody can answer. */
  confirm?: (question: string) => Promise<boolean>
  /** A line for people. */
  say: (line: string) => void
  /** What is under way while nothing else is printed (a spinner on a terminal); cleared before the next line. */
  working?: {start(text: string): void; stop(): void}
  /** The script's own output and the job log, as they arrive. */
  passthrough?: (stream: 'stdout' | 'stderr', text: string) => void
  pollIntervalMs?: number
}

export interface TrainCommand {
  cwd: string
  argv: string[]
  /** Variables gymrecipe adds to the caller's environment. */
  env: Record<string, string>
  /** The same as one shell line. */
  shell: string
}

export interface TrainReport {
  recipe: string
  dir: string
  outcome: TrainOutcome
  exitCode: number
  message: string
  submissionId: string
  dashboardAddress: string
  /** True when the script waits for the job (RAY_NO_WAIT is not 1). */
  waits: boolean
  command: TrainCommand
  preflight: PreflightItem[]
  /** The job as the Ray Jobs API last reported it (runtime_env omitted: it may hold secrets). */
  job: Omit<JobDetails, 'runtime_env'> | null
  logFile: string | null
  logTail: string[]
  scriptExitCode: number | null
  trainingRung: RungReport | null
  /** How to stop the job by hand, when it was left running. */
  stopCommand: string | null
}

function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve()
    else signal.addEventListener('abort', () => resolve(), {once: true})
  })
}

function publicJob(job: JobDetails | undefined): Omit<JobDetails, 'runtime_env'> | null {
  if (!job) return null
  const {runtime_env: _runtimeEnv, ...rest} = job
  return rest
}

async function requireContract(target: RecipeTarget): Promise<RecipeTarget & {contract: RecipeContract}> {
  if (!target.contract) {
    throw new GymError(`${target.dir} has no recipe.yaml`, {
      code: 'E_CONTRACT_MISSING',
      exit: ExitCode.usage,
      hint: 'train needs the recorded contract (model, raw filename, ports); generate the recipe with `gymrecipe new`.',
    })
  }
  return target as RecipeTarget & {contract: RecipeContract}
}

/**
 * Without RELAX_ENTRYPOINT_MODE the training script sources Relax's scripts/entrypoint/local.sh,
 * which may kill stray python/ray processes and stop other jobs. gymrecipe never stops anything
 * broadly, so it plays the entrypoint's harmless part itself: the mode, the model config dir and a
 * runtime env (the script adds the checkout to PYTHONPATH). Values the caller set are kept.
 */
export function submitOnlyEntrypoint(relaxRoot: string, scriptEnv: Record<string, string>): Record<string, string> {
  if (scriptEnv.RELAX_ENTRYPOINT_MODE) return {}
  // Only what is missing: the script inherits the rest, and a caller's RUNTIME_ENV_JSON may hold
  // tokens, so it must never be echoed in the printed command or --json.
  const added: Record<string, string> = {RELAX_ENTRYPOINT_MODE: 'gymrecipe'}
  if (!scriptEnv.MODEL_CONFIG_DIR) added.MODEL_CONFIG_DIR = path.join(relaxRoot, 'scripts', 'models')
  if (!scriptEnv.RUNTIME_ENV_JSON) added.RUNTIME_ENV_JSON = '{"env_vars":{}}'
  return added
}

/** The Gateway's trials after this job are gymrecipe's own from now on (see the service rung). */
async function recordTrainingTrials(recipeDir: string, gateway: ReturnType<typeof trainingGateway>, submissionId: string, env: NodeJS.ProcessEnv): Promise<void> {
  if ('problem' in gateway) return
  const {answer} = await readyz(gateway.url, 5000)
  const body = answer?.json as {service_epoch?: unknown; trials?: unknown} | undefined
  if (typeof body?.service_epoch === 'string' && typeof body.trials === 'number') {
    await recordGatewayUse(recipeDir, {serviceEpoch: body.service_epoch, trialsAfter: body.trials, by: `training ${submissionId}`}, env)
  }
}

export async function train(options: TrainOptions): Promise<TrainReport> {
  await assertGymRoot(options.gymRoot)
  const target = await requireContract(await resolveRecipe(options.relaxRoot, options.recipe))
  const contract = target.contract
  const scriptEnv = await recipeEnvironment(target.dir, options.env)
  const dashboard = dashboardAddressFromEnv(scriptEnv).address
  const submissionId = submissionIdFor(contract, new Date(), randomBytes(3).toString('hex'))
  const runScriptPath = path.join(target.dir, target.files.run!)
  const waits = scriptEnv.RAY_NO_WAIT !== '1'
  const entrypointEnv = submitOnlyEntrypoint(target.relaxRoot, scriptEnv)
  const addedEnv = {...entrypointEnv, RELAX_SUBMISSION_ID: submissionId, RAY_DASHBOARD_ADDRESS: dashboard}
  // Shown to people and in --json: a password in the dashboard URL never is.
  const shownDashboard = redactUrl(dashboard)
  const shownEnv = {...entrypointEnv, RELAX_SUBMISSION_ID: submissionId, RAY_DASHBOARD_ADDRESS: shownDashboard}
  const relScript = path.relative(target.relaxRoot, runScriptPath)
  const command: TrainCommand = {
    cwd: target.relaxRoot,
    argv: ['bash', relScript],
    env: shownEnv,
    shell: `cd ${shellWord(target.relaxRoot)} && ${Object.entries(shownEnv)
      .map(([k, v]) => `${k}=${shellWord(v)}`)
      .join(' ')} bash ${shellWord(relScript)}`,
  }
  const stopCommand = `ray job stop --address=${shownDashboard} ${submissionId}`
  const report: TrainReport = {
    recipe: target.id,
    dir: target.dir,
    outcome: 'dry-run',
    exitCode: ExitCode.ok,
    message: '',
    submissionId,
    dashboardAddress: shownDashboard,
    waits,
    command,
    preflight: [],
    job: null,
    logFile: null,
    logTail: [],
    scriptExitCode: null,
    trainingRung: null,
    stopCommand: null,
  }
  const finish = (outcome: TrainOutcome, exitCode: number, message: string): TrainReport => {
    report.outcome = outcome
    report.exitCode = exitCode
    report.message = message
    return report
  }

  // ---------------------------------------------------------------- pre-flight
  options.say(`Pre-flight for ${target.id} (${target.dir})`)
  try {
    report.preflight = await runPreflight({target, callerEnv: options.env, scriptEnv, smoke: options.smoke, gymRoot: options.gymRoot, signal: options.interrupt, submissionId}, {
      started: (doing) => options.working?.start(doing),
      finished(item) {
        options.working?.stop()
        options.say(`  ${item.status === 'pass' ? '✔' : '✖'} ${item.title}: ${item.message}`)
        if (item.status !== 'pass' && item.hint) options.say(`      hint: ${item.hint}`)
      },
    })
  } finally {
    options.working?.stop()
  }
  if (scriptEnv.RELAX_SUBMISSION_ID) options.say(`  note: RELAX_SUBMISSION_ID=${scriptEnv.RELAX_SUBMISSION_ID} from the environment is replaced by a fresh id`)
  const failed = report.preflight.filter((i) => i.status !== 'pass')
  options.say(`${options.dryRun ? 'Would run' : 'Running'} (in ${command.cwd}): ${Object.entries(shownEnv).map(([k, v]) => `${k}=${shellWord(v)}`).join(' ')} bash ${relScript}`)
  options.say(`  the script ${waits ? 'waits for the job and streams its log (RAY_NO_WAIT=1 would return after submission)' : 'returns after submission (RAY_NO_WAIT=1); gymrecipe follows the job'}`)
  if (options.interrupt.aborted) return finish('interrupted', ExitCode.interrupted, 'interrupted during pre-flight; nothing was submitted')
  if (failed.length > 0) {
    return finish('preflight-failed', ExitCode.precondition, `pre-flight failed (${failed.map((i) => i.id).join(', ')}); nothing was submitted`)
  }
  if (options.dryRun) return finish('dry-run', ExitCode.ok, 'dry run: pre-flight passed; nothing was submitted')

  // ---------------------------------------------------------------- run the script
  const client = rayJobsClient(dashboard, {headers: rayJobHeadersFromEnv(scriptEnv)})
  const interval = options.pollIntervalMs ?? 2000
  const startedAt = Date.now()
  // The tee of this run, not an older one (2 s of slack for file-system time stamps).
  const scriptLog = async () => (await newestTrainingLog([path.join(command.cwd, 'log')], contract, startedAt - 2000)) ?? null
  let job: JobDetails | undefined
  let logs = ''
  let state: RecipeRunState | undefined
  let lastPollError: string | undefined

  const record = async () => {
    if (!state) return
    await writeRunState(state, options.env)
  }
  const poll = async () => {
    try {
      job = await client.status(submissionId)
    } catch (error) {
      if (codeOf(error) !== 'E_RAY_JOB_NOT_FOUND') lastPollError = messageOf(error)
      return
    }
    lastPollError = undefined
    if (!state) {
      state = {
        recipe: target.id,
        recipeDir: target.dir,
        submissionId,
        dashboardAddress: dashboard,
        logFile: null,
        submittedAt: new Date().toISOString(),
        smoke: options.smoke || contract.data.smoke,
      }
      await record()
      options.say(`gymrecipe: submission ${submissionId} is ${job.status} on ${shownDashboard}`)
    }
    try {
      logs = await client.logs(submissionId)
    } catch {
      // keep the previous text
    }
    if (!state.logFile) {
      const found = await scriptLog()
      if (found) {
        state.logFile = found
        report.logFile = found
        await record()
      }
    }
  }

  const script: ScriptRun = runScript(runScriptPath, {
    cwd: command.cwd,
    env: {...options.env, ...addedEnv},
    onOutput: (stream, text) => options.passthrough?.(stream, text),
  })
  const scriptExit = script.exited

  const interrupted = async (): Promise<TrainReport> => {
    options.say('')
    options.say('gymrecipe: interrupted')
    if (script.running()) {
      script.signalGroup('SIGTERM')
      const gone = await Promise.race([scriptExit.then(() => true), sleep(5000).then(() => false)])
      if (!gone) script.signalGroup('SIGKILL')
      await scriptExit
    }
    await poll()
    if (!job) {
      await sleep(500)
      await poll()
    }
    report.job = publicJob(job)
    report.logTail = logTail(logs)
    if (!job) return finish('interrupted', ExitCode.interrupted, `interrupted before ${submissionId} reached Ray; nothing is running`)
    if (isTerminal(job.status)) return finish('interrupted', ExitCode.interrupted, `interrupted; job ${submissionId} had already ended ${job.status}`)
    let stop = options.stopOnInterrupt
    // Ctrl+C on a terminal asks; a SIGTERM (a supervisor, a scheduler) never waits for an answer.
    if (options.confirm && options.interrupt.reason !== 'SIGTERM') {
      try {
        stop = await options.confirm(`Stop Ray job ${submissionId} (this run's own submission) on ${shownDashboard}? [y/N] `)
      } catch {
        stop = false
      }
    }
    if (!stop) {
      report.stopCommand = stopCommand
      options.say(`gymrecipe: job ${submissionId} keeps running on the cluster (${job.status}).`)
      options.say(`  stop it with: ${stopCommand}`)
      options.say(`  follow it with: gymrecipe status ${target.id} --relax-root ${target.relaxRoot}`)
      return finish('interrupted', ExitCode.interrupted, `interrupted; job ${submissionId} left running`)
    }
    options.say(`gymrecipe: stopping ${submissionId} (only this submission, by id)`)
    try {
      await client.stop(submissionId)
    } catch (error) {
      report.stopCommand = stopCommand
      return finish('interrupted', ExitCode.interrupted, `interrupted; stopping ${submissionId} failed: ${messageOf(error)}. Stop it with: ${stopCommand}`)
    }
    const deadline = Date.now() + 60_000
    while (Date.now() < deadline) {
      await poll()
      if (job && isTerminal(job.status)) break
      await sleep(1000)
    }
    report.job = publicJob(job)
    report.logTail = logTail(logs)
    if (!job || !isTerminal(job.status)) {
      report.stopCommand = stopCommand
      return finish('interrupted', ExitCode.interrupted, `interrupted; asked Ray to stop ${submissionId} but it is still ${job?.status}. Check with: ${stopCommand}`)
    }
    return finish('interrupted', ExitCode.interrupted, `interrupted; job ${submissionId} ${job.status}`)
  }

  const interruptSeen = aborted(options.interrupt)
  while (script.running()) {
    const next = await Promise.race([scriptExit.then(() => 'exit' as const), sleep(interval).then(() => 'tick' as const), interruptSeen.then(() => 'interrupt' as const)])
    if (next === 'interrupt') return interrupted()
    await poll()
  }
  const exit = await scriptExit
  report.scriptExitCode = exit.exitCode ?? null
  await poll()
  if (!job) {
    await sleep(300)
    await poll()
  }
  if (!job) {
    const tail = [...script.tail('stdout', 20), ...script.tail('stderr', 20)]
    report.logTail = tail
    const reason = lastPollError ? `; the dashboard could not be asked: ${lastPollError}` : ''
    return finish('not-submitted', ExitCode.failure, `the training script exited ${exit.exitCode ?? exit.signal} and job ${submissionId} does not exist on ${shownDashboard}${reason}`)
  }

  // ---------------------------------------------------------------- follow through the REST API
  if (!isTerminal(job.status)) {
    options.say(`gymrecipe: following ${submissionId} through the Ray Jobs API (${job.status})`)
    try {
      const followed = await followJob(client, submissionId, {
        intervalMs: interval,
        signal: options.interrupt,
        // When the script waited, it already streamed the log up to here.
        logOffset: waits ? logs.length : 0,
        onLogs: (chunk) => options.passthrough?.('stdout', chunk),
      })
      job = followed.job
      logs = followed.logs
    } catch (error) {
      if (options.interrupt.aborted) return interrupted()
      report.job = publicJob(job)
      report.logTail = logTail(logs)
      report.stopCommand = stopCommand
      return finish('follow-lost', ExitCode.failure, `lost track of ${submissionId} (${messageOf(error)}); it may still be running: check with gymrecipe status ${target.id}, stop it with ${stopCommand}`)
    }
  }
  if (!report.logFile) report.logFile = await scriptLog()
  if (state && report.logFile && state.logFile !== report.logFile) {
    state.logFile = report.logFile
    await record()
  }
  report.job = publicJob(job)
  report.logTail = logTail(logs)

  if (job.status === 'FAILED') {
    const details = [job.error_type, job.driver_exit_code === null ? null : `driver exit code ${job.driver_exit_code}`].filter(Boolean).join(', ')
    options.say(`gymrecipe: job ${submissionId} FAILED${details ? ` (${details})` : ''}; last log lines:`)
    for (const line of report.logTail.slice(-30)) options.say(`  | ${line}`)
    return finish('job-failed', ExitCode.failure, `job ${submissionId} FAILED${details ? ` (${details})` : ''}`)
  }
  if (job.status === 'STOPPED') {
    return finish('job-stopped', ExitCode.failure, `job ${submissionId} was STOPPED before it finished: nothing is proven`)
  }

  // ---------------------------------------------------------------- prove it: the training rung
  options.say(`gymrecipe: job ${submissionId} SUCCEEDED; a job state is not proof — running the training rung`)
  await recordTrainingTrials(target.dir, trainingGateway(contract, scriptEnv), submissionId, options.env)
  const handoff = {train: {runState: state, job, jobLogs: logs}}
  // env.sh was already sourced over the caller's environment for the script; the rung sees the same.
  const rungOptions = {env: scriptEnv, smoke: options.smoke, gymRoot: options.gymRoot, signal: options.interrupt, workerLogs: options.workerLogs}
  report.trainingRung = await runRung(trainingRung, {target, options: rungOptions, scratch: new Scratch(), handoff}, {render: false, onCheck: (check) => {
    for (const line of checkLines(check, '  ')) options.say(line)
  }})
  if (report.trainingRung.status !== 'pass') {
    return finish('training-rung-failed', ExitCode.rungFailed, `job ${submissionId} SUCCEEDED but the training rung ${report.trainingRung.status === 'fail' ? 'failed' : 'could not be fully checked'}: the run is not proven`)
  }
  return finish('succeeded', ExitCode.ok, `job ${submissionId} SUCCEEDED and the training rung passed`)
}
