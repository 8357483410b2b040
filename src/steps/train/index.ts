/**
 * `gymrecipe train`: pre-flight, then run the recipe's generated training script (which ends in
 * `ray job submit`), follow the job through the Ray Jobs REST API, and prove the run with the
 * training rung. A SUCCEEDED job state alone is never reported as success.
 *
 * The script runs unmodified, as `bash <run script>` from the Relax checkout, in its own process
 * group with its output streamed. gymrecipe only sets RELAX_SUBMISSION_ID (a fresh unique id, so it
 * knows which job is its own) and RAY_DASHBOARD_ADDRESS (the endpoint it resolved exactly as the
 * script would, so both talk to the same dashboard). Waiting is the script's default; only the
 * user's RAY_NO_WAIT=1 makes it return after submission. Either way gymrecipe follows the job
 * itself from the moment it exists (its state by polling, its log over one websocket stream, kept
 * in bounded memory) and judges it by its state, never by the exit of the script's `ray` CLI,
 * whose log stream can drop while the job runs on.
 * Ctrl+C never stops anything broadly: at most this run's own submission, by id.
 */
import {setTimeout as sleep} from 'node:timers/promises'
import {randomBytes} from 'node:crypto'
import path from 'node:path'

import {codeOf, ExitCode, messageOf} from '../../errors.js'
import {resolveRecipe} from '../../recipe/target.js'
import {checkContext, checkLines, LogDigest, newestTrainingLog, runRung, trainingRung} from '../../ladder/index.js'
import type {RecipeTarget} from '../../recipe/types.js'
import {followJob, type FollowResult, isTerminal, type JobDetails, LogTail, rayJobsClientFromEnv, redactUrl, type RayJobsClient, resolveJobsEndpoint} from '../../runtime/ray-jobs.js'
import {scriptEnvironment} from '../../runtime/recipe-env.js'
import {runScript, type ScriptRun} from '../../runtime/script.js'
import type {RecipeContract} from '../../contract/types.js'
import {submissionIdFor, trainingGateway} from '../../contract/endpoints.js'
import {type RecipeRunState, writeRunState} from '../../runtime/run-state.js'
import {shellWord} from '../../shell-words.js'
import {runPreflight} from './preflight.js'
import {assertGymRoot} from '../../contract/gym-config/paths.js'

import type {TrainOutcome, TrainOptions, TrainReport} from './types.js'
import {aborted, publicJob, requireContract, submitOnlyEntrypoint, recordTrainingTrials, envWords} from './support.js'

export * from './types.js'

export async function train(options: TrainOptions): Promise<TrainReport> {
  await assertGymRoot(options.gymRoot)
  const target = await requireContract(await resolveRecipe(options.relaxRoot, options.recipe))
  const run = new TrainRun(options, target, await scriptEnvironment(target.dir, options.env))
  return run.go()
}

/** The last word of a run: its outcome, exit status and one-line message. */
class Finished {
  constructor(
    readonly outcome: TrainOutcome,
    readonly exitCode: number,
    readonly message: string,
  ) {}
}

/**
 * One `gymrecipe train`, phase by phase: plan (the command and its variables), pre-flight, run the
 * script while polling its job, follow the job to its end, prove it with the training rung. Each
 * phase either hands on or ends the run with a Finished; an interrupt at any point goes to
 * `interrupted()`, which decides about this run's own submission.
 */
class TrainRun {
  private readonly contract: RecipeContract
  private readonly dashboard: string
  private readonly dashboardSource: string
  private readonly shownDashboard: string
  private readonly submissionId: string
  private readonly stopCommand: string
  private readonly addedEnv: Record<string, string>
  private readonly report: TrainReport
  private readonly interval: number
  private client?: RayJobsClient
  private script?: ScriptRun
  private startedAt = 0
  private job: JobDetails | undefined
  /** What the job log said so far, for the training rung, and its last lines for the report. */
  private readonly digest: LogDigest
  private logTail = new LogTail()
  /** gymrecipe's own follow of the job: started when the job first exists, ended at its end. */
  private following: Promise<FollowResult> | undefined
  private followError: unknown
  private state: RecipeRunState | undefined
  private lastPollError: string | undefined

  constructor(
    private readonly options: TrainOptions,
    private readonly target: RecipeTarget & {contract: RecipeContract},
    private readonly scriptEnv: Record<string, string>,
  ) {
    this.contract = target.contract
    const endpoint = resolveJobsEndpoint(scriptEnv)
    this.dashboard = endpoint.address
    this.dashboardSource = endpoint.source
    this.submissionId = submissionIdFor(this.contract, new Date(), randomBytes(3).toString('hex'))
    this.digest = new LogDigest(`Ray job ${this.submissionId} on ${redactUrl(this.dashboard)}`)
    this.interval = options.pollIntervalMs ?? 2000
    const entrypointEnv = submitOnlyEntrypoint(target.relaxRoot, scriptEnv)
    this.addedEnv = {...entrypointEnv, RELAX_SUBMISSION_ID: this.submissionId, RAY_DASHBOARD_ADDRESS: this.dashboard}
    // Shown to people and in --json: a password in the dashboard URL never is.
    this.shownDashboard = redactUrl(this.dashboard)
    this.stopCommand = `ray job stop --address=${this.shownDashboard} ${this.submissionId}`
    const shownEnv = {...entrypointEnv, RELAX_SUBMISSION_ID: this.submissionId, RAY_DASHBOARD_ADDRESS: this.shownDashboard}
    const relScript = path.relative(target.relaxRoot, path.join(target.dir, target.files.run!))
    this.report = {
      recipe: target.id,
      dir: target.dir,
      outcome: 'dry-run',
      exitCode: ExitCode.ok,
      message: '',
      submissionId: this.submissionId,
      dashboardAddress: this.shownDashboard,
      dashboardSource: this.dashboardSource,
      waits: scriptEnv.RAY_NO_WAIT !== '1',
      command: {
        cwd: target.relaxRoot,
        argv: ['bash', relScript],
        env: shownEnv,
        shell: `cd ${shellWord(target.relaxRoot)} && ${envWords(shownEnv)} bash ${shellWord(relScript)}`,
      },
      preflight: [],
      job: null,
      logFile: null,
      logTail: [],
      scriptExitCode: null,
      trainingRung: null,
      stopCommand: null,
    }
  }

  async go(): Promise<TrainReport> {
    const end = (await this.preflight()) ?? (await this.runScript()) ?? (await this.follow()) ?? (await this.prove())
    this.report.outcome = end.outcome
    this.report.exitCode = end.exitCode
    this.report.message = end.message
    return this.report
  }

  private say(line: string): void {
    this.options.say(line)
  }

  // ---------------------------------------------------------------- pre-flight
  private async preflight(): Promise<Finished | undefined> {
    const {options, target, report} = this
    this.say(`Pre-flight for ${target.id} (${target.dir})`)
    try {
      report.preflight = await runPreflight({target, callerEnv: options.env, scriptEnv: this.scriptEnv, smoke: options.smoke, gymRoot: options.gymRoot, signal: options.interrupt, submissionId: this.submissionId}, {
        started: (doing) => options.working?.start(doing),
        finished: (item) => {
          options.working?.stop()
          this.say(`  ${item.status === 'pass' ? '✔' : '✖'} ${item.title}: ${item.message}`)
          if (item.status !== 'pass' && item.hint) this.say(`      hint: ${item.hint}`)
        },
      })
    } finally {
      options.working?.stop()
    }
    if (this.scriptEnv.RELAX_SUBMISSION_ID) this.say(`  note: RELAX_SUBMISSION_ID=${this.scriptEnv.RELAX_SUBMISSION_ID} from the environment is replaced by a fresh id`)
    const {command, waits} = report
    this.say(`${options.dryRun ? 'Would run' : 'Running'} (in ${command.cwd}): ${envWords(command.env)} bash ${command.argv[1]}`)
    this.say(`  the script ${waits ? 'waits for the job and streams its log (RAY_NO_WAIT=1 would return after submission)' : 'returns after submission (RAY_NO_WAIT=1); gymrecipe follows the job'}`)
    if (options.interrupt.aborted) return new Finished('interrupted', ExitCode.interrupted, 'interrupted during pre-flight; nothing was submitted')
    const failed = report.preflight.filter((i) => i.status !== 'pass')
    if (failed.length > 0) return new Finished('preflight-failed', ExitCode.precondition, `pre-flight failed (${failed.map((i) => i.id).join(', ')}); nothing was submitted`)
    if (options.dryRun) return new Finished('dry-run', ExitCode.ok, 'dry run: pre-flight passed; nothing was submitted')
    return undefined
  }

  // ---------------------------------------------------------------- run the script, polling its job
  /** The tee of this run, not an older one (2 s of slack for file-system time stamps). */
  private async scriptLog(): Promise<string | null> {
    return (await newestTrainingLog([path.join(this.report.command.cwd, 'log')], this.contract, this.startedAt - 2000)) ?? null
  }

  private async record(): Promise<void> {
    if (this.state) await writeRunState(this.state, this.options.env)
  }

  /** One look at the job: its details, and (once) the run state, gymrecipe's own follow and the script's log file. */
  private async poll(): Promise<void> {
    let job: JobDetails
    try {
      job = await this.client!.status(this.submissionId)
    } catch (error) {
      if (codeOf(error) !== 'E_RAY_JOB_NOT_FOUND') this.lastPollError = messageOf(error)
      return
    }
    this.job = job
    this.lastPollError = undefined
    if (!this.state) {
      this.state = {
        recipe: this.target.id,
        recipeDir: this.target.dir,
        submissionId: this.submissionId,
        dashboardAddress: this.dashboard,
        dashboardSource: this.dashboardSource,
        logFile: null,
        submittedAt: new Date().toISOString(),
        smoke: this.options.smoke || this.contract.data.smoke,
      }
      await this.record()
      this.say(`gymrecipe: submission ${this.submissionId} is ${job.status} on ${this.shownDashboard} (from ${this.dashboardSource})`)
      this.startFollowing()
    }
    if (!this.state.logFile) {
      const found = await this.scriptLog()
      if (found) {
        this.state.logFile = found
        this.report.logFile = found
        await this.record()
      }
    }
  }

  /**
   * Follow the job from its first moment: one log stream for the whole run. While the script's own
   * `ray job submit` is streaming the log, gymrecipe reads it quietly; once the script has ended
   * (or never waited), what follows is shown.
   */
  private startFollowing(): void {
    const {options, report} = this
    const followed = followJob(this.client!, this.submissionId, {
      intervalMs: this.interval,
      signal: options.interrupt,
      onLogs: (text) => {
        this.digest.push(text)
        this.logTail.push(text)
        if (!(report.waits && this.script?.running())) options.passthrough?.('stdout', text)
      },
      onStatus: (job) => {
        this.job = job
      },
      onNotice: (line) => this.say(`gymrecipe: ${line}`),
    })
    this.following = followed
    followed.catch((error) => {
      this.followError = error
    })
  }

  private noteJob(): void {
    this.report.job = publicJob(this.job)
    this.report.logTail = this.logTail.last(40)
  }

  private async runScript(): Promise<Finished | undefined> {
    const {options, target, report} = this
    this.client = rayJobsClientFromEnv(this.scriptEnv, {address: this.dashboard}).client
    this.startedAt = Date.now()
    const script = runScript(path.join(target.dir, target.files.run!), {
      cwd: report.command.cwd,
      env: {...options.env, ...this.addedEnv},
      onOutput: (stream, text) => options.passthrough?.(stream, text),
    })
    this.script = script
    const interruptSeen = aborted(options.interrupt)
    while (script.running()) {
      const next = await Promise.race([script.exited.then(() => 'exit' as const), sleep(this.interval).then(() => 'tick' as const), interruptSeen.then(() => 'interrupt' as const)])
      if (next === 'interrupt') return this.interrupted()
      await this.poll()
    }
    const exit = await script.exited
    report.scriptExitCode = exit.exitCode ?? null
    await this.poll()
    if (!this.job) {
      await sleep(300)
      await this.poll()
    }
    if (!this.job) {
      report.logTail = [...script.tail('stdout', 20), ...script.tail('stderr', 20)]
      const reason = this.lastPollError ? `; the dashboard could not be asked: ${this.lastPollError}` : ''
      return new Finished('not-submitted', ExitCode.failure, `the training script exited ${exit.exitCode ?? exit.signal} and job ${this.submissionId} does not exist on ${this.shownDashboard}${reason}`)
    }
    return undefined
  }

  // ---------------------------------------------------------------- an interrupt: this run's own job only
  private async interrupted(): Promise<Finished> {
    const {options, report, submissionId} = this
    this.say('')
    this.say('gymrecipe: interrupted')
    const script = this.script
    await script?.stop('SIGTERM', 5000)
    await this.poll()
    if (!this.job) {
      await sleep(500)
      await this.poll()
    }
    this.noteJob()
    const job = this.job
    if (!job) return new Finished('interrupted', ExitCode.interrupted, `interrupted before ${submissionId} reached Ray; nothing is running`)
    if (isTerminal(job.status)) return new Finished('interrupted', ExitCode.interrupted, `interrupted; job ${submissionId} had already ended ${job.status}`)
    let stop = options.stopOnInterrupt
    // Ctrl+C on a terminal asks; a SIGTERM (a supervisor, a scheduler) never waits for an answer.
    if (options.confirm && options.interrupt.reason !== 'SIGTERM') {
      try {
        stop = await options.confirm(`Stop Ray job ${submissionId} (this run's own submission) on ${this.shownDashboard}? [y/N] `)
      } catch {
        stop = false
      }
    }
    if (!stop) {
      report.stopCommand = this.stopCommand
      this.say(`gymrecipe: job ${submissionId} keeps running on the cluster (${job.status}).`)
      this.say(`  stop it with: ${this.stopCommand}`)
      this.say(`  follow it with: gymrecipe status ${this.target.id} --relax-root ${this.target.relaxRoot}`)
      return new Finished('interrupted', ExitCode.interrupted, `interrupted; job ${submissionId} left running`)
    }
    this.say(`gymrecipe: stopping ${submissionId} (only this submission, by id)`)
    try {
      await this.client!.stop(submissionId)
    } catch (error) {
      report.stopCommand = this.stopCommand
      return new Finished('interrupted', ExitCode.interrupted, `interrupted; stopping ${submissionId} failed: ${messageOf(error)}. Stop it with: ${this.stopCommand}`)
    }
    const deadline = Date.now() + 60_000
    while (Date.now() < deadline) {
      await this.poll()
      if (this.job && isTerminal(this.job.status)) break
      await sleep(1000)
    }
    this.noteJob()
    const last = this.job as JobDetails | undefined
    if (!last || !isTerminal(last.status)) {
      report.stopCommand = this.stopCommand
      return new Finished('interrupted', ExitCode.interrupted, `interrupted; asked Ray to stop ${submissionId} but it is still ${last?.status ?? 'in a state Ray did not report'}. Check with: ${this.stopCommand}`)
    }
    return new Finished('interrupted', ExitCode.interrupted, `interrupted; job ${submissionId} ${last.status}`)
  }

  // ---------------------------------------------------------------- follow through the REST API
  private async follow(): Promise<Finished | undefined> {
    const {options, report, submissionId} = this
    if (!isTerminal(this.job!.status) && report.waits) {
      // The script's CLI ended (its log stream dropped, or it was killed) while the job runs on.
      this.say(`gymrecipe: the training script exited ${report.scriptExitCode ?? '?'} but job ${submissionId} is ${this.job!.status}: its state decides, so gymrecipe follows it`)
    } else if (!isTerminal(this.job!.status)) {
      this.say(`gymrecipe: following ${submissionId} through the Ray Jobs API (${this.job!.status})`)
    }
    try {
      if (!this.following) this.startFollowing()
      const followed = await this.following!
      this.job = followed.job
    } catch (error) {
      if (options.interrupt.aborted) return this.interrupted()
      this.noteJob()
      report.stopCommand = this.stopCommand
      return new Finished('follow-lost', ExitCode.failure, `lost track of ${submissionId} (${messageOf(error ?? this.followError)}); it may still be running: check with gymrecipe status ${this.target.id}, stop it with ${this.stopCommand}`)
    }
    this.digest.end()
    if (!report.logFile) report.logFile = await this.scriptLog()
    if (this.state && report.logFile && this.state.logFile !== report.logFile) {
      this.state.logFile = report.logFile
      await this.record()
    }
    this.noteJob()
    const job = this.job!
    if (job.status === 'FAILED') {
      const details = [job.error_type, job.driver_exit_code === null ? null : `driver exit code ${job.driver_exit_code}`].filter(Boolean).join(', ')
      this.say(`gymrecipe: job ${submissionId} FAILED${details ? ` (${details})` : ''}; last log lines:`)
      for (const line of report.logTail.slice(-30)) this.say(`  | ${line}`)
      return new Finished('job-failed', ExitCode.failure, `job ${submissionId} FAILED${details ? ` (${details})` : ''}`)
    }
    if (job.status === 'STOPPED') return new Finished('job-stopped', ExitCode.failure, `job ${submissionId} was STOPPED before it finished: nothing is proven`)
    return undefined
  }

  // ---------------------------------------------------------------- prove it: the training rung
  private async prove(): Promise<Finished> {
    const {options, target, report, submissionId} = this
    this.say(`gymrecipe: job ${submissionId} SUCCEEDED; a job state is not proof — running the training rung`)
    await recordTrainingTrials(target.dir, trainingGateway(this.contract, this.scriptEnv), submissionId, options.env)
    const handoff = {train: {runState: this.state, job: this.job!, jobLog: this.digest}}
    // env.sh was already sourced over the caller's environment for the script; the rung sees the same.
    const rungOptions = {env: this.scriptEnv, smoke: options.smoke, gymRoot: options.gymRoot, signal: options.interrupt, workerLogs: options.workerLogs}
    report.trainingRung = await runRung(trainingRung, checkContext(target, rungOptions, handoff), {
      // Each check is printed here as it finishes; only a warning of the runner itself goes through.
      printer: {live: false, line: () => undefined, warn: (text) => this.say(text)},
      onCheck: (check) => {
        for (const line of checkLines(check, '  ')) this.say(line)
      },
    })
    if (report.trainingRung.status !== 'pass') {
      return new Finished('training-rung-failed', ExitCode.rungFailed, `job ${submissionId} SUCCEEDED but the training rung ${report.trainingRung.status === 'fail' ? 'failed' : 'could not be fully checked'}: the run is not proven`)
    }
    return new Finished('succeeded', ExitCode.ok, `job ${submissionId} SUCCEEDED and the training rung passed`)
  }
}
