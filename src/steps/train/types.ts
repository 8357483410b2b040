/** What train is asked, how it ended, and what it reports. */
import type {RungReport} from '../../ladder/index.js'
import type {JobDetails} from '../../runtime/ray-jobs.js'
import type {PreflightItem} from './preflight.js'

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
  /** Which variable the dashboard address came from. */
  dashboardSource: string
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
