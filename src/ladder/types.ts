import type {RecipeTarget} from '../recipe/types.js'
import type {RungInputs} from '../runtime/ladder-state.js'
import type {JobDetails} from '../runtime/ray-jobs.js'
import type {RecipeRunState} from '../runtime/run-state.js'
import type {LogDigest} from './training/outputs.js'
import type {Scratch} from './scratch-store.js'

export const RUNGS = ['static', 'data', 'service', 'network', 'trial', 'training'] as const
export type Rung = (typeof RUNGS)[number]

export type CheckStatus = 'pass' | 'fail' | 'skip'

/** The result of one check: data only; rendering is separate. */

export interface CheckResult {
  id: string
  rung: Rung
  title: string
  status: CheckStatus
  message: string
  hint?: string
  file?: string
  line?: number
  evidence?: Record<string, unknown>
}

/** What a check's run returns for itself: its verdict; the runner adds id, rung and title. */
export type CheckOutcome = Omit<CheckResult, 'id' | 'rung' | 'title'>
/** One result of a check that reports several (one per script, one per problem); the runner adds the rung. */
export type NamedResult = Omit<CheckResult, 'rung'>

/** One pass when nothing is wrong, else one result per problem (each with its own file and line). */
export function passOrProblems(id: string, title: string, problems: CheckOutcome[], pass: CheckOutcome | string): CheckOutcome | NamedResult[] {
  if (problems.length === 0) return typeof pass === 'string' ? {status: 'pass', message: pass} : pass
  return problems.map((p) => ({id, title, ...p}))
}


/** Extra options the trial rung reads (the verify command passes them through). */
export interface TrialRungOptions {
  /** Host the scripted model listens on and the Gateway calls back (default: GYM_HOST). */
  callbackHost?: string
  /** Port of the scripted model (default: any free port). */
  callbackPort?: number
}

/** Extra options the training rung reads (the verify and train commands pass them through). */
export interface TrainingRungOptions {
  /** Ray worker logs (files or directories) to scan for OOM and tracebacks. */
  workerLogs?: string[]
  /** The driver log, when it is not the recorded/discovered one. */
  jobLog?: string
}

/** What every climb is given; the rungs that take options of their own read them here, typed. */
export interface LadderOptions extends TrialRungOptions, TrainingRungOptions {
  /** A pinned Gym checkout to check graph names against (optional). */
  gymRoot?: string
  /** Environment the scripts would see (env.sh values are layered on top by the rungs that need them). */
  env: NodeJS.ProcessEnv
  /** Accept a non-training split for a smoke run; every report says so. */
  smoke: boolean
  signal?: AbortSignal
}

/** What the step that ran just before the ladder learned, handed to its rungs. */
export interface StepHandoff {
  /** `start`: the image it just built, so the service rung can tell a stale container. */
  start?: {builtImageId: string}
  /** `train`: the submission it followed, the job's final details and the driver logs it fetched. */
  train?: {runState?: RecipeRunState; job: JobDetails; jobLog?: LogDigest}
}

export interface CheckContext {
  target: RecipeTarget
  options: LadderOptions
  /** Shared between the checks of one run (e.g. parsed scripts, the data scan). */
  scratch: Scratch
  handoff?: StepHandoff
}

export interface Check {
  id: string
  title: string
  run(ctx: CheckContext): Promise<Omit<CheckResult, 'id' | 'rung' | 'title'> | Array<Omit<CheckResult, 'rung'>>>
}

/** A rung, described by itself: what it checks, what its verdict depends on, what comes after it. */
export interface RungDefinition {
  rung: Rung
  /** One line for people: what passing this rung proves. */
  summary: string
  /** What its verdict was judged on: a recorded pass whose inputs changed since is stale. */
  inputs: Array<keyof RungInputs>
  /** The command that proves the next part of the recipe once this rung has passed (none after the last). */
  next?: (recipe: string, relaxRoot: string) => string
  checks(ctx: CheckContext): Check[]
}

export type RungStatus = 'pass' | 'fail' | 'incomplete' | 'not-run'

export interface RungReport {
  rung: Rung
  status: RungStatus
  checks: CheckResult[]
}

export interface LadderReport {
  recipe: string
  dir: string
  level: Rung
  /** false: one rung was checked on its own (--only); a pass then says nothing about the rungs below. */
  climbed: boolean
  status: 'pass' | 'fail'
  /** The first rung that did not pass, if any. */
  stoppedAt: Rung | null
  smoke: boolean
  rungs: RungReport[]
}
