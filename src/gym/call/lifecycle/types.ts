/** A call row's shapes: what it is given (context, input), what it leaves (outcome, attempt artifact), and its failures and lifecycle entries. */
import type {Limiter} from '../limiter.js'
import type {RowPlanResult} from '../request.js'
import type {HttpTransport} from '../../../runtime/call-transport.js'
import type {CallConfig, FailureKind, FailureStage, RowColumns} from '../types.js'

/** Writes one attempt artifact; returns its path relative to the evidence directory. */
export interface AttemptWriter {
  writeAttempt(attemptId: string, text: string): Promise<string>
  /**
   * Optional, the same without a promise per attempt: queue the text, get its
   * reference at once and a promise of the batch write it is part of.
   */
  appendAttempt?(text: string): {ref: string; written: Promise<void>}
  /** Optional: characters of attempts queued or being written, which the run window bounds. */
  readonly pendingChars?: number
  /** Optional: no further row will start, so batching the last rows' attempts only delays them. */
  inputDone?(): void
}

export interface RowCallContext {
  config: CallConfig
  transport: HttpTransport
  /** endpoint -> bearer token, read at start-up. */
  bearerTokens: ReadonlyMap<string, string>
  limiter: Limiter
  /** Aborted when the run is interrupted (Ctrl+C / SIGTERM). */
  cancel: AbortSignal
  evidence: AttemptWriter
  /** Epoch ms after which a row can no longer be admitted (run start + queue_timeout); undefined for none. */
  queueDeadline?: number
}

export interface RowInput {
  /** 0-based index among the input rows. */
  index: number
  /** 1-based line in the input file. */
  line: number
  row: Record<string, unknown>
}

export interface RowOutcome {
  /** finished: the row has its final columns; cancelled: interrupted in flight (evidence written); not_started: interrupted while queued. */
  state: 'finished' | 'cancelled' | 'not_started'
  columns?: RowColumns
  status?: 'completed' | 'failed'
  failureKind?: FailureKind | null
  episodeStatus?: 'completed' | 'failed' | null
  answered?: boolean
  attemptId?: string
  /** `columns` as compact lossless JSON (what the journal and the output get). */
  columnsText?: string
}

/** A row whose requests are built (or whose request failed to build), ready for admission. */
export interface PreparedRow {
  input: RowInput
  attemptId: string
  planned: RowPlanResult
}

export interface Failure {
  kind: FailureKind
  stage: FailureStage
  route: string | null
  reason: string
}

export interface CleanupError {
  step: number
  endpoint: string
  route: string
  kind: 'timeout' | 'http_rejected' | 'server_failed' | 'transport_failed'
  http_status: number | null
  reason: string
}

export interface LifecycleEntry {
  stage: 'initialize' | 'execute' | 'cleanup'
  step?: number
  endpoint: string
  route: string
  http_status: number | null
  duration_ms: number
  error?: string
}
