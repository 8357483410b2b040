/**
 * Public types of the Gym call library: the validated config, the per-row
 * envelope written to the output column, and the distinct failure kinds.
 */

/** Which contract a run follows: a resource server route or an agent harness. */
export type CallKind = 'resource' | 'harness'

/** Where in a row's lifecycle a call failed; null on success. */
export type FailureStage = 'request' | 'admission' | 'initialize' | 'execute' | 'cleanup' | 'storage'

/**
 * Distinct failure kinds. `cancelled` only appears in attempt evidence of rows
 * that were in flight when the run was interrupted; such rows are not written
 * to the output and are called again by `--resume`.
 */
export const FAILURE_KINDS = [
  'request_invalid',
  'admission_timeout',
  'execution_timeout',
  'http_rejected',
  'server_failed',
  'transport_failed',
  'malformed_response',
  'unfinished_harness_output',
  'cleanup_failed',
  'artifact_storage_failed',
  'cancelled',
] as const

export type FailureKind = (typeof FAILURE_KINDS)[number]

export interface SessionStepConfig {
  /** Base URL of the service; defaults to the column's `endpoint`. */
  endpoint: string
  route: string
  /** Row path of the request body (an object or a JSON string of one); `{}` when unset. */
  request_column?: string
  /** Header name -> dot path of a token in this step's JSON response (initialize steps only). */
  response_headers?: Record<string, string>
  /** Environment variable holding a bearer token sent only to this step's endpoint. */
  bearer_token_env?: string
}

export interface SessionConfig {
  initialize: SessionStepConfig[]
  cleanup: SessionStepConfig[]
  /** Seconds; bounds each cleanup step separately. */
  cleanup_timeout: number
}

export interface CallConfig {
  kind: CallKind
  name: string
  endpoint: string
  route: string
  /** Row path of the row id; unset means the 1-based input line number. */
  row_id_column?: string
  request_columns: Record<string, string>
  request_values: Record<string, unknown>
  request_column?: string
  provenance_columns: string[]
  max_parallel_requests: number
  /** Seconds; bounds initialize plus execute of one row. */
  timeout: number
  /** Seconds a row may wait for admission; undefined means no admission deadline. */
  queue_timeout?: number
  session?: SessionConfig
  bearer_token_env?: string
  /** Resource only. */
  response_protocol?: 'gym-episode'
  /** Output name -> dot path into the response. */
  response_fields?: Record<string, string>
  /** Harness only: the column that receives the evidence envelope. */
  evidence_column?: string
}

/** Fields shared by the resource cell and the harness evidence cell. */
export interface CallEnvelope {
  status: 'completed' | 'failed'
  row_id: unknown
  attempt_id: string
  /** Attempt artifact path, relative to the evidence directory; null when it could not be written. */
  artifact: string | null
  failure_kind: FailureKind | null
  failure_stage: FailureStage | null
  failure_route: string | null
  failure_reason: string | null
  /** JSON object string: configured provenance path -> value. */
  provenance_json: string
  /** JSON array string of cleanup step errors ("[]" when none). */
  cleanup_errors_json: string
  /** JSON string of the response (or its projection); null when there is none. */
  response_json: string | null
}

export interface EpisodeFields {
  episode_status: 'completed' | 'failed' | null
  episode_failure_kind: string | null
  episode_failure_reason: string | null
  episode_failure_stage: string | null
  episode_terminal: boolean | null
  reward: unknown
  mask_sample: boolean | null
}

export type ResourceEnvelope = CallEnvelope & Partial<EpisodeFields>

export interface HarnessEvidence extends CallEnvelope {
  /** JSON array string of the tool-call items of the response; null when there are none. */
  tool_trace_json: string | null
}

/** What one row contributes to its output line: column name -> value. */
export type RowColumns = Record<string, unknown>
