import {isLosslessNumber} from 'lossless-json'
import {randomUUID} from 'node:crypto'

import {onAbort} from './abort.js'
import {DeadlineQueue} from './deadlines.js'
import {EMPTY_EPISODE, episodeOutcome} from './episode.js'
import {harnessOutcome} from './harness.js'
import {clip, parseFast, stringifyLossless} from './json.js'
import type {Admission, Limiter} from './limiter.js'
import {PathError, projectFields, resolvePath} from './paths.js'
import {buildRowPlan, type RowPlanResult} from './request.js'
import {RowSession} from './session.js'
import {AbortedError, Cancel, type HttpTransport, TransportError} from './transport.js'
import type {CallConfig, CallEnvelope, EpisodeFields, FailureKind, FailureStage, HarnessEvidence, ResourceEnvelope, RowColumns} from './types.js'

/** Writes one attempt artifact; returns its path relative to the evidence directory. */
export interface AttemptWriter {
  writeAttempt(attemptId: string, text: string): Promise<string>
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

interface Failure {
  kind: FailureKind
  stage: FailureStage
  route: string | null
  reason: string
}

interface CleanupError {
  step: number
  endpoint: string
  route: string
  kind: 'timeout' | 'http_rejected' | 'server_failed' | 'transport_failed'
  http_status: number | null
  reason: string
}

interface LifecycleEntry {
  stage: 'initialize' | 'execute' | 'cleanup'
  step?: number
  endpoint: string
  route: string
  http_status: number | null
  duration_ms: number
  error?: string
}

export const CANCEL_REASON = 'gymrecipe-call-cancelled'

function httpFailure(status: number, route: string, body: string, stage: FailureStage, scrub: (t: string) => string): Failure {
  const kind: FailureKind = status >= 500 ? 'server_failed' : 'http_rejected'
  const snippet = body.trim() === '' ? '' : `: ${clip(scrub(body.trim()), 300)}`
  const note = status >= 300 && status < 400 ? ' (redirects are not followed)' : ''
  return {kind, stage, route, reason: `POST ${route} answered HTTP ${status}${note}${snippet}`}
}

/** A JSON string, or null. */
function q(text: string | null): string {
  return text === null ? 'null' : JSON.stringify(text)
}

/** The lifecycle entries as JSON, keys in their usual order. */
function lifecycleText(entries: LifecycleEntry[]): string {
  let out = '['
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]
    out += `${i === 0 ? '' : ','}{"stage":${q(e.stage)}${e.step === undefined ? '' : `,"step":${e.step}`},"endpoint":${q(e.endpoint)},"route":${q(e.route)},"http_status":${e.http_status === null ? 'null' : e.http_status},"duration_ms":${JSON.stringify(e.duration_ms)}${e.error === undefined ? '' : `,"error":${q(e.error)}`}}`
  }
  return `${out}]`
}

function ms(start: number): number {
  return Math.round((performance.now() - start) * 10) / 10
}

/**
 * What a context needs once, not per row: the shared timeout queues, the
 * list of global secrets, and the rows in initialize/execute (cancelled
 * together when the run is interrupted, through one listener on ctx.cancel).
 */
interface ContextShared {
  rowTimeouts: DeadlineQueue
  cleanupTimeouts: DeadlineQueue
  secrets: readonly string[]
  active: Set<Cancel>
}
const shared = new WeakMap<RowCallContext, ContextShared>()

function sharedOf(ctx: RowCallContext): ContextShared {
  let found = shared.get(ctx)
  if (!found) {
    const active = new Set<Cancel>()
    found = {
      rowTimeouts: new DeadlineQueue(ctx.config.timeout * 1000),
      cleanupTimeouts: new DeadlineQueue((ctx.config.session?.cleanup_timeout ?? 30) * 1000),
      secrets: [...ctx.bearerTokens.values()],
      active,
    }
    onAbort(ctx.cancel, () => {
      for (const row of [...active]) row.abort(CANCEL_REASON)
    })
    shared.set(ctx, found)
  }
  return found
}

/** Build a row's requests (no I/O). */
export function prepareRow(ctx: RowCallContext, input: RowInput): PreparedRow {
  return {input, attemptId: randomUUID(), planned: buildRowPlan(ctx.config, input.row, input.line)}
}

/**
 * Admission of a prepared row: a free slot of max_parallel_requests, in call
 * order; 'timeout' once the run's queue deadline has passed; 'cancelled' when
 * the run is interrupted while the row waits.
 */
export function admit(ctx: RowCallContext): Admission | Promise<Admission> {
  // queueDeadline is absolute: a row that would start after it fails admission
  if (ctx.queueDeadline !== undefined && Date.now() >= ctx.queueDeadline) return 'timeout'
  if (ctx.cancel.aborted) return 'cancelled'
  if (ctx.limiter.tryAcquire()) return 'admitted'
  return ctx.limiter.acquire(ctx.queueDeadline, ctx.cancel)
}

/**
 * One row's whole lifecycle: build requests, wait for admission, initialize,
 * execute, clean up, write the attempt artifact. Never throws for row-level
 * problems; they become the envelope's failure fields.
 */
export async function callRow(ctx: RowCallContext, input: RowInput): Promise<RowOutcome> {
  const prepared = prepareRow(ctx, input)
  return runPreparedRow(ctx, prepared, prepared.planned.ok ? await admit(ctx) : undefined)
}

/**
 * The lifecycle of a prepared row after its admission was decided. With
 * 'admitted' the caller holds a limiter slot, which this releases after the
 * row's cleanup. `admission` is ignored for a row whose request did not build.
 */
export async function runPreparedRow(ctx: RowCallContext, prepared: PreparedRow, admission: Admission | undefined): Promise<RowOutcome> {
  const {config} = ctx
  const {input, attemptId, planned} = prepared
  const common = sharedOf(ctx)
  const startedAt = new Date().toISOString()
  const needsValue = config.kind === 'harness' || config.response_protocol === 'gym-episode' || config.response_fields !== undefined
  const rowId = planned.ok ? planned.plan.rowId : planned.rowId
  const provenance = planned.ok ? planned.plan.provenance : planned.provenance

  let failure: Failure | undefined
  let response: unknown
  let responseOk = false
  const lifecycle: LifecycleEntry[] = []
  const cleanupErrors: CleanupError[] = []
  // Serialized JSON of the native request and response for the artifact (built once, spliced in).
  let requestText = 'null'
  let responseText = 'null'
  let rawResponse: string | undefined
  let session: RowSession | undefined
  let cancelled = false

  if (!planned.ok) {
    if (admission === 'admitted') ctx.limiter.release()
    failure = {kind: 'request_invalid', stage: 'request', route: planned.route, reason: planned.reason}
  } else {
    if (admission === 'cancelled' || admission === undefined) return {state: 'not_started'}
    if (admission === 'timeout') {
      failure = {kind: 'admission_timeout', stage: 'admission', route: null, reason: `no free slot within queue_timeout ${config.queue_timeout} s (max_parallel_requests ${config.max_parallel_requests})`}
    } else {
      try {
        session = new RowSession(ctx.transport.openRowClient(), ctx.bearerTokens, common.secrets)
        const plan = planned.plan
        // One deadline for initialize plus execute; cancellation of the run aborts it too.
        const rowAbort = new Cancel()
        if (ctx.cancel.aborted) rowAbort.abort(CANCEL_REASON)
        else common.active.add(rowAbort)
        const deadline = common.rowTimeouts.add(rowAbort)
        const signal = rowAbort
        let sent = false
        let stage: FailureStage = 'initialize'
        let currentRoute = config.route
        let currentEndpoint = config.endpoint
        let stepStart = 0
        try {
          const steps = config.session?.initialize ?? []
          for (let i = 0; i < steps.length && !failure; i++) {
            const step = steps[i]
            currentRoute = step.route
            currentEndpoint = step.endpoint
            stepStart = performance.now()
            sent = true
            const {response: res} = await session.post(step.endpoint, step.route, plan.initializeBodies[i], signal)
            // initialize response bodies may hold credentials: never kept, only the status
            lifecycle.push({stage: 'initialize', step: i, endpoint: step.endpoint, route: step.route, http_status: res.status, duration_ms: ms(stepStart)})
            if (res.status < 200 || res.status >= 300) {
              failure = httpFailure(res.status, step.route, '', 'initialize', (t) => t)
              break
            }
            if (step.response_headers) {
              let body: unknown
              try {
                body = parseFast(res.body)
              } catch {
                failure = {kind: 'malformed_response', stage: 'initialize', route: step.route, reason: `initialize response of ${step.route} is not JSON, so its session token cannot be read`}
                break
              }
              for (const [header, path] of Object.entries(step.response_headers)) {
                let token: unknown
                try {
                  token = resolvePath(body, path)
                } catch (error) {
                  if (!(error instanceof PathError)) throw error
                }
                if (typeof token !== 'string' && typeof token !== 'number' && !isLosslessNumber(token)) {
                  failure = {kind: 'malformed_response', stage: 'initialize', route: step.route, reason: `initialize response of ${step.route} has no string token at ${path} for header ${header}`}
                  break
                }
                session.setSessionHeader(header, String(token))
              }
            }
          }
          if (!failure) {
            stage = 'execute'
            currentRoute = config.route
            currentEndpoint = config.endpoint
            stepStart = performance.now()
            sent = true
            const {request, response: res} = await session.post(config.endpoint, config.route, plan.body, signal)
            lifecycle.push({stage: 'execute', endpoint: config.endpoint, route: config.route, http_status: res.status, duration_ms: ms(stepStart)})
            requestText = `{"method":"POST","url":${JSON.stringify(request.url)},"headers":${session.redactedHeadersJson(request.headers)},"body":${plan.body}}`
            const trimmed = res.body.trim()
            let parsed: unknown
            let parsedOk = false
            if (trimmed !== '') {
              try {
                // the value is only needed to read a harness answer, an episode or a projection;
                // otherwise the body is checked (same grammar) and kept as its own text
                parsed = needsValue ? parseFast(trimmed) : JSON.parse(trimmed)
                parsedOk = true
              } catch {
                parsedOk = false
              }
            }
            // a body that parsed is spliced in as its own (lossless) text
            responseText = `{"http_status":${res.status},"headers":${session.redactedHeadersJson(res.headers)},${parsedOk ? `"body":${trimmed}` : `"body":null,"body_text":${JSON.stringify(res.body)}`}}`
            if (parsedOk) rawResponse = trimmed
            if (res.status < 200 || res.status >= 300) {
              failure = httpFailure(res.status, config.route, res.body, 'execute', (t) => session!.scrub(t))
            } else if (!parsedOk) {
              failure = {
                kind: 'malformed_response',
                stage: 'execute',
                route: config.route,
                reason: res.body.trim() === '' ? `POST ${config.route} answered HTTP ${res.status} with an empty body` : `POST ${config.route} answered HTTP ${res.status} with a body that is not JSON`,
              }
            } else {
              response = parsed
              responseOk = true
            }
          }
        } catch (error) {
          const entry: LifecycleEntry = {stage: stage === 'initialize' ? 'initialize' : 'execute', endpoint: currentEndpoint, route: currentRoute, http_status: null, duration_ms: ms(stepStart)}
          if (error instanceof AbortedError) {
            if (error.reason === CANCEL_REASON) {
              cancelled = true
              entry.error = 'cancelled'
              failure = {kind: 'cancelled', stage, route: currentRoute, reason: `run interrupted during ${stage} of ${currentRoute}`}
            } else {
              entry.error = 'timeout'
              failure = {kind: 'execution_timeout', stage, route: currentRoute, reason: `no answer from ${currentRoute} within timeout ${config.timeout} s (initialize plus execute)`}
            }
          } else if (error instanceof TransportError) {
            entry.error = error.message
            failure = {kind: 'transport_failed', stage, route: currentRoute, reason: `POST ${currentRoute}: ${error.message}`}
          } else {
            throw error
          }
          lifecycle.push(entry)
        } finally {
          common.rowTimeouts.remove(deadline)
          common.active.delete(rowAbort)
        }

        // Cleanup runs whenever a request was sent: after success, partial initialization, timeout and cancellation.
        if (sent && config.session && config.session.cleanup.length > 0) {
          const steps = config.session.cleanup
          // each step gets its own cleanup_timeout; a controller is reused until one times out
          let stepAbort = new Cancel()
          for (let j = 0; j < steps.length; j++) {
            const step = steps[j]
            const start = performance.now()
            if (stepAbort.aborted) stepAbort = new Cancel()
            const stepDeadline = common.cleanupTimeouts.add(stepAbort)
            try {
              const {response: res} = await session.post(step.endpoint, step.route, plan.cleanupBodies[j], stepAbort)
              lifecycle.push({stage: 'cleanup', step: j, endpoint: step.endpoint, route: step.route, http_status: res.status, duration_ms: ms(start)})
              if (res.status < 200 || res.status >= 300) {
                const f = httpFailure(res.status, step.route, res.body, 'cleanup', (t) => session!.scrub(t))
                cleanupErrors.push({step: j, endpoint: step.endpoint, route: step.route, kind: f.kind as CleanupError['kind'], http_status: res.status, reason: f.reason})
              }
            } catch (error) {
              const timeout = error instanceof AbortedError
              const reason = timeout ? `no answer from ${step.route} within cleanup_timeout ${config.session.cleanup_timeout} s` : `POST ${step.route}: ${(error as Error).message}`
              if (!timeout && !(error instanceof TransportError)) throw error
              lifecycle.push({stage: 'cleanup', step: j, endpoint: step.endpoint, route: step.route, http_status: null, duration_ms: ms(start), error: timeout ? 'timeout' : reason})
              cleanupErrors.push({step: j, endpoint: step.endpoint, route: step.route, kind: timeout ? 'timeout' : 'transport_failed', http_status: null, reason})
            } finally {
              common.cleanupTimeouts.remove(stepDeadline)
            }
          }
        }
      } finally {
        session?.close()
        ctx.limiter.release()
      }
    }
  }

  const scrub = (text: string) => (session ? session.scrub(text) : text)

  // Interpret the response.
  let responseJson: string | null = null
  let episode: EpisodeFields | undefined = config.kind === 'resource' && config.response_protocol === 'gym-episode' ? {...EMPTY_EPISODE} : undefined
  let answer: string | null = null
  let toolTrace: unknown[] | undefined
  if (responseOk) {
    responseJson = scrub(config.response_fields ? stringifyLossless(projectFields(response, config.response_fields)) : rawResponse!)
    if (config.kind === 'harness') {
      if (!config.response_fields) responseJson = null
      const outcome = harnessOutcome(response)
      if (outcome.kind === 'answer') {
        answer = outcome.answer
        toolTrace = outcome.toolTrace
      } else if (outcome.kind === 'unfinished') {
        toolTrace = outcome.toolTrace
        failure = {kind: 'unfinished_harness_output', stage: 'execute', route: config.route, reason: outcome.reason}
      } else {
        failure = {kind: 'malformed_response', stage: 'execute', route: config.route, reason: outcome.reason}
      }
    } else if (episode) {
      const outcome = episodeOutcome(response)
      if (outcome.ok) episode = outcome.fields
      else failure = {kind: 'malformed_response', stage: 'execute', route: config.route, reason: `${outcome.reason}; the raw response is kept in the attempt artifact`}
    }
  }
  if (cleanupErrors.length > 0 && !failure) {
    const first = cleanupErrors[0]
    failure = {kind: 'cleanup_failed', stage: 'cleanup', route: first.route, reason: first.reason}
  }
  if (failure) answer = null

  const provenanceText = stringifyLossless(provenance)
  const cleanupText = cleanupErrors.length === 0 ? '[]' : stringifyLossless(cleanupErrors)
  const envelope: CallEnvelope = {
    status: failure ? 'failed' : 'completed',
    row_id: rowId,
    attempt_id: attemptId,
    artifact: null,
    failure_kind: failure?.kind ?? null,
    failure_stage: failure?.stage ?? null,
    failure_route: failure?.route ?? null,
    failure_reason: failure ? clip(scrub(failure.reason)) : null,
    provenance_json: provenanceText,
    cleanup_errors_json: scrub(cleanupText),
    response_json: responseJson,
  }

  // Attempt artifact: the native request and response, the lifecycle, no initialize bodies, tokens or cookies.
  // Written as text in a fixed field order (the same JSON a generic serializer would give, without walking objects).
  const rowIdText = stringifyLossless(rowId)
  let artifactText = `{"schema":"gymrecipe.call.attempt/1","command":${q(config.kind)},"column":${q(config.name)},"attempt_id":${q(attemptId)},"row_id":${rowIdText},"row_line":${input.line},"started_at":${q(startedAt)},"finished_at":${q(new Date().toISOString())},"status":${q(cancelled ? 'cancelled' : envelope.status)},"failure_kind":${q(envelope.failure_kind)},"failure_stage":${q(envelope.failure_stage)},"failure_route":${q(envelope.failure_route)},"failure_reason":${q(envelope.failure_reason)},"provenance":${provenanceText},"lifecycle":${lifecycleText(lifecycle)},"cleanup_errors":${cleanupText}`
  if (episode) artifactText += `,"episode":${stringifyLossless(episode)}`
  if (config.kind === 'harness') artifactText += `,"harness":{"answer":${q(answer)},"tool_trace":${toolTrace ? stringifyLossless(toolTrace) : '[]'}}`
  artifactText = scrub(`${artifactText},"request":${requestText},"response":${responseText}}`)
  try {
    envelope.artifact = await ctx.evidence.writeAttempt(attemptId, artifactText)
  } catch (error: any) {
    const reason = `attempt evidence could not be written: ${error?.code ?? ''} ${error?.message ?? error}`.trim()
    answer = null
    if (envelope.status === 'completed') {
      envelope.status = 'failed'
      envelope.failure_kind = 'artifact_storage_failed'
      envelope.failure_stage = 'storage'
      envelope.failure_route = null
      envelope.failure_reason = clip(scrub(reason))
    } else {
      envelope.failure_reason = clip(scrub(`${envelope.failure_reason}; ${reason}`))
    }
  }

  if (cancelled) return {state: 'cancelled', attemptId}

  let columns: RowColumns
  let columnsText: string
  const envelopeText = `{"status":${q(envelope.status)},"row_id":${rowIdText},"attempt_id":${q(attemptId)},"artifact":${q(envelope.artifact)},"failure_kind":${q(envelope.failure_kind)},"failure_stage":${q(envelope.failure_stage)},"failure_route":${q(envelope.failure_route)},"failure_reason":${q(envelope.failure_reason)},"provenance_json":${q(envelope.provenance_json)},"cleanup_errors_json":${q(envelope.cleanup_errors_json)},"response_json":${q(envelope.response_json)}`
  if (config.kind === 'harness') {
    const evidence: HarnessEvidence = {...envelope, tool_trace_json: toolTrace && toolTrace.length > 0 ? scrub(stringifyLossless(toolTrace)) : null}
    columns = {[config.name]: answer, [config.evidence_column!]: evidence}
    columnsText = `{${q(config.name)}:${q(answer)},${q(config.evidence_column!)}:${envelopeText},"tool_trace_json":${q(evidence.tool_trace_json)}}}`
  } else {
    const cell: ResourceEnvelope = episode ? {...envelope, ...episode} : envelope
    columns = {[config.name]: cell}
    columnsText = episode ? `{${q(config.name)}:${envelopeText},${stringifyLossless(episode).slice(1)}}` : `{${q(config.name)}:${envelopeText}}}`
  }
  return {
    state: 'finished',
    columns,
    columnsText,
    status: envelope.status,
    failureKind: envelope.failure_kind,
    episodeStatus: episode?.episode_status ?? null,
    answered: answer !== null,
    attemptId,
  }
}
