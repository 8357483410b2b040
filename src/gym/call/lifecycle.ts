import {isLosslessNumber} from 'lossless-json'
import {randomUUID} from 'node:crypto'

import {onAbort} from './abort.js'
import {DeadlineQueue} from './deadlines.js'
import {EMPTY_EPISODE, episodeOutcome} from './episode.js'
import {harnessOutcome} from './harness.js'
import {clip} from './clip.js'
import {parseFast, stringifyJson} from '../../json/index.js'
import type {Admission, Limiter} from './limiter.js'
import {PathError, projectFields, resolvePath} from './paths.js'
import {buildRowPlan, type RowPlan, type RowPlanResult} from './request.js'
import {RowSession} from './session.js'
import {AbortedError, Cancel, type HttpResponse, type HttpTransport, TransportError} from '../../runtime/call-transport.js'
import type {CallConfig, CallEnvelope, EpisodeFields, FailureKind, FailureStage, HarnessEvidence, ResourceEnvelope, RowColumns} from './types.js'
import {codeOf, messageOf} from '../../errors.js'

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

function httpFailure(status: number, route: string, body: string, stage: FailureStage, scrub: (t: string) => string, headers: Record<string, string | string[] | undefined> = {}): Failure {
  const kind: FailureKind = status >= 500 ? 'server_failed' : 'http_rejected'
  const snippet = body.trim() === '' ? '' : `: ${clip(scrub(body.trim()), 300)}`
  const location = headers.location === undefined ? undefined : String(headers.location)
  // Where it pointed, without userinfo or query (they may carry credentials).
  const target = location === undefined ? '' : `, a redirect to ${clip(scrub(location.replace(/^([a-z][a-z0-9+.-]*:\/\/)\S*@/i, '$1').replace(/[?#].*$/, '')), 200)}`
  const note = status >= 300 && status < 400 ? `${target} (redirects are not followed)` : ''
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

let isoMs = -1
let isoText = ''
/** new Date().toISOString(), computed once per millisecond (many rows start and finish in the same one). */
function isoNow(): string {
  const now = Date.now()
  if (now !== isoMs) {
    isoMs = now
    isoText = new Date(now).toISOString()
  }
  return isoText
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
  /** JSON fragments that are the same for every row of the context. */
  texts: {
    artifactHead: string
    executeUrl: string
    executeRequestHead: string
    nameJson: string
    needsValue: boolean
    episode: boolean
  }
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
      texts: {
        artifactHead: `{"schema":"gymrecipe.call.attempt/1","command":${q(ctx.config.kind)},"column":${q(ctx.config.name)},"attempt_id":`,
        executeUrl: ctx.config.endpoint + ctx.config.route,
        executeRequestHead: `{"method":"POST","url":${q(ctx.config.endpoint + ctx.config.route)},"headers":`,
        nameJson: q(ctx.config.name),
        needsValue: ctx.config.kind === 'harness' || ctx.config.response_protocol === 'gym-episode' || ctx.config.response_fields !== undefined,
        episode: ctx.config.kind === 'resource' && ctx.config.response_protocol === 'gym-episode',
      },
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

/** What the HTTP part of a row left behind for its evidence and envelope. */
interface Exchange {
  startedAt: string
  failure: Failure | undefined
  /** The parsed response, when the config needs its value (harness, episode, projection). */
  response: unknown
  responseOk: boolean
  /** The response body as received (trimmed), when it is JSON. */
  rawResponse: string | undefined
  lifecycle: LifecycleEntry[]
  cleanupErrors: CleanupError[]
  /** The native request and response as JSON text for the artifact ('null' when none). */
  requestText: string
  responseText: string
  session: RowSession | undefined
  cancelled: boolean
}

/**
 * The lifecycle of a prepared row after its admission was decided. With
 * 'admitted' the caller holds a limiter slot, which this releases after the
 * row's cleanup. `admission` is ignored for a row whose request did not build.
 */
export async function runPreparedRow(ctx: RowCallContext, prepared: PreparedRow, admission: Admission | undefined): Promise<RowOutcome> {
  const {planned} = prepared
  const {config} = ctx
  let ex: Exchange
  if (!planned.ok) {
    if (admission === 'admitted') ctx.limiter.release()
    ex = newExchange({kind: 'request_invalid', stage: 'request', route: planned.route, reason: planned.reason}, undefined)
  } else if (admission === 'cancelled' || admission === undefined) {
    return {state: 'not_started'}
  } else if (admission === 'timeout') {
    ex = newExchange(
      {
        kind: 'admission_timeout',
        stage: 'admission',
        route: null,
        reason: `no free slot within queue_timeout ${config.queue_timeout} s (max_parallel_requests ${config.max_parallel_requests})`,
      },
      undefined,
    )
  } else {
    // Initialize, execute and clean up (the slot is held until cleanup is over).
    const plan = planned.plan
    const common = sharedOf(ctx)
    const session = new RowSession(ctx.transport.openRowClient(), ctx.bearerTokens, common.secrets)
    ex = newExchange(undefined, session)
    try {
      // One deadline for initialize plus execute; cancellation of the run aborts it too.
      const rowAbort = new Cancel()
      if (ctx.cancel.aborted) rowAbort.abort(CANCEL_REASON)
      else common.active.add(rowAbort)
      const deadline = common.rowTimeouts.add(rowAbort)
      const at: Step = {stage: 'initialize', endpoint: config.endpoint, route: config.route, start: 0}
      let sent = false
      try {
        if (config.session && config.session.initialize.length > 0) {
          sent = true
          await initialize(ctx, plan, session, rowAbort, ex, at)
        }
        if (!ex.failure) {
          at.stage = 'execute'
          at.endpoint = config.endpoint
          at.route = config.route
          at.start = performance.now()
          sent = true
          const request = session.send(config.endpoint, config.route, plan.body, rowAbort)
          const res = await request.response
          session.received(res)
          readExecute(ctx, plan, session, ex, at.start, request.url, request.headersJson, res)
        }
      } catch (error) {
        ex.failure = requestFailure(ctx, error, at, ex)
      } finally {
        common.rowTimeouts.remove(deadline)
        common.active.delete(rowAbort)
      }
      // Cleanup runs whenever a request was sent: after success, partial initialization, timeout and cancellation.
      if (sent && config.session && config.session.cleanup.length > 0) await cleanup(ctx, plan, session, ex)
    } finally {
      session.close()
      ctx.limiter.release()
    }
  }
  const record = buildRecord(ctx, prepared, ex)
  let ref: string | undefined
  let writeError: unknown
  const {evidence} = ctx
  try {
    if (evidence.appendAttempt) {
      // batched: every attempt of a write shares one promise
      const queued = evidence.appendAttempt(record.artifactText)
      await queued.written
      ref = queued.ref
    } else {
      ref = await evidence.writeAttempt(prepared.attemptId, record.artifactText)
    }
  } catch (error) {
    writeError = error
  }
  return finishRecord(ctx, record, ref, writeError)
}

function newExchange(failure: Failure | undefined, session: RowSession | undefined): Exchange {
  return {
    startedAt: isoNow(),
    failure,
    response: undefined,
    responseOk: false,
    rawResponse: undefined,
    lifecycle: [],
    cleanupErrors: [],
    requestText: 'null',
    responseText: 'null',
    session,
    cancelled: false,
  }
}

/** Where a row is in its initialize/execute requests (for failures). */
interface Step {
  stage: 'initialize' | 'execute'
  endpoint: string
  route: string
  start: number
}

async function initialize(ctx: RowCallContext, plan: RowPlan, session: RowSession, cancel: Cancel, ex: Exchange, at: Step): Promise<void> {
  const steps = ctx.config.session!.initialize
  for (let i = 0; i < steps.length; i++) {
    const step = steps[i]
    at.route = step.route
    at.endpoint = step.endpoint
    at.start = performance.now()
    const {response: res} = await session.post(step.endpoint, step.route, plan.initializeBodies[i], cancel)
    // initialize response bodies may hold credentials: never kept, only the status
    ex.lifecycle.push({stage: 'initialize', step: i, endpoint: step.endpoint, route: step.route, http_status: res.status, duration_ms: ms(at.start)})
    if (res.status < 200 || res.status >= 300) {
      ex.failure = httpFailure(res.status, step.route, '', 'initialize', (t) => t, res.headers)
      return
    }
    if (!step.response_headers) continue
    let body: unknown
    try {
      body = parseFast(res.body)
    } catch {
      ex.failure = {kind: 'malformed_response', stage: 'initialize', route: step.route, reason: `initialize response of ${step.route} is not JSON, so its session token cannot be read`}
      return
    }
    for (const [header, path] of Object.entries(step.response_headers)) {
      let token: unknown
      try {
        token = resolvePath(body, path)
      } catch (error) {
        if (!(error instanceof PathError)) throw error
      }
      if (typeof token !== 'string' && typeof token !== 'number' && !isLosslessNumber(token)) {
        ex.failure = {kind: 'malformed_response', stage: 'initialize', route: step.route, reason: `initialize response of ${step.route} has no string token at ${path} for header ${header}`}
        return
      }
      session.setSessionHeader(header, String(token))
    }
  }
}

/** Record the execute exchange and decide whether the call completed. */
function readExecute(ctx: RowCallContext, plan: RowPlan, session: RowSession, ex: Exchange, start: number, url: string, headersJson: string, res: HttpResponse): void {
  const {config} = ctx
  const texts = sharedOf(ctx).texts
  ex.lifecycle.push({stage: 'execute', endpoint: config.endpoint, route: config.route, http_status: res.status, duration_ms: ms(start)})
  ex.requestText = `${url === texts.executeUrl ? texts.executeRequestHead : `{"method":"POST","url":${JSON.stringify(url)},"headers":`}${headersJson},"body":${plan.body}}`
  const body = res.body
  // trim only when needed (a JSON body from a service rarely has surrounding whitespace)
  const trimmed = body.length > 0 && (isSpace(body.charCodeAt(0)) || isSpace(body.charCodeAt(body.length - 1))) ? body.trim() : body
  let parsed: unknown
  let parsedOk = false
  if (trimmed !== '') {
    try {
      // the value is only needed to read a harness answer, an episode or a projection;
      // otherwise the body is checked (same grammar) and kept as its own text
      parsed = texts.needsValue ? parseFast(trimmed) : JSON.parse(trimmed)
      parsedOk = true
    } catch {
      parsedOk = false
    }
  }
  // a body that parsed is spliced in as its own (lossless) text
  ex.responseText = `{"http_status":${res.status},"headers":${session.redactedHeadersJson(res.headers)},${parsedOk ? `"body":${trimmed}` : `"body":null,"body_text":${JSON.stringify(body)}`}}`
  if (parsedOk) ex.rawResponse = trimmed
  if (res.status < 200 || res.status >= 300) {
    ex.failure = httpFailure(res.status, config.route, body, 'execute', (t) => session.scrub(t), res.headers)
  } else if (!parsedOk) {
    ex.failure = {
      kind: 'malformed_response',
      stage: 'execute',
      route: config.route,
      reason: trimmed === '' ? `POST ${config.route} answered HTTP ${res.status} with an empty body` : `POST ${config.route} answered HTTP ${res.status} with a body that is not JSON`,
    }
  } else {
    ex.response = parsed
    ex.responseOk = true
  }
}

function isSpace(code: number): boolean {
  return code === 32 || code === 10 || code === 13 || code === 9 || code === 0xfeff || code === 0xa0 || (code >= 0x2000 && code <= 0x3000)
}

/** A request of initialize/execute threw: timeout, cancellation or transport failure. */
function requestFailure(ctx: RowCallContext, error: unknown, at: Step, ex: Exchange): Failure {
  const entry: LifecycleEntry = {stage: at.stage, endpoint: at.endpoint, route: at.route, http_status: null, duration_ms: ms(at.start)}
  let failure: Failure
  if (error instanceof AbortedError) {
    if (error.reason === CANCEL_REASON) {
      ex.cancelled = true
      entry.error = 'cancelled'
      failure = {kind: 'cancelled', stage: at.stage, route: at.route, reason: `run interrupted during ${at.stage} of ${at.route}`}
    } else {
      entry.error = 'timeout'
      failure = {kind: 'execution_timeout', stage: at.stage, route: at.route, reason: `no answer from ${at.route} within timeout ${ctx.config.timeout} s (initialize plus execute)`}
    }
  } else if (error instanceof TransportError) {
    entry.error = error.message
    failure = {kind: 'transport_failed', stage: at.stage, route: at.route, reason: `POST ${at.route}: ${error.message}`}
  } else {
    throw error
  }
  ex.lifecycle.push(entry)
  return failure
}

/** Every cleanup step runs, each bounded by cleanup_timeout; failures are kept in cleanup_errors. */
async function cleanup(ctx: RowCallContext, plan: RowPlan, session: RowSession, ex: Exchange): Promise<void> {
  const sessionConfig = ctx.config.session!
  const steps = sessionConfig.cleanup
  const timeouts = sharedOf(ctx).cleanupTimeouts
  // a Cancel is reused from step to step until one times out
  let stepAbort = new Cancel()
  for (let j = 0; j < steps.length; j++) {
    const step = steps[j]
    const start = performance.now()
    if (stepAbort.aborted) stepAbort = new Cancel()
    const stepDeadline = timeouts.add(stepAbort)
    try {
      const {response: res} = await session.post(step.endpoint, step.route, plan.cleanupBodies[j], stepAbort)
      ex.lifecycle.push({stage: 'cleanup', step: j, endpoint: step.endpoint, route: step.route, http_status: res.status, duration_ms: ms(start)})
      if (res.status < 200 || res.status >= 300) {
        const f = httpFailure(res.status, step.route, res.body, 'cleanup', (t) => session.scrub(t), res.headers)
        ex.cleanupErrors.push({step: j, endpoint: step.endpoint, route: step.route, kind: f.kind as CleanupError['kind'], http_status: res.status, reason: f.reason})
      }
    } catch (error) {
      const timeout = error instanceof AbortedError
      const reason = timeout ? `no answer from ${step.route} within cleanup_timeout ${sessionConfig.cleanup_timeout} s` : `POST ${step.route}: ${(error as Error).message}`
      if (!timeout && !(error instanceof TransportError)) throw error
      ex.lifecycle.push({stage: 'cleanup', step: j, endpoint: step.endpoint, route: step.route, http_status: null, duration_ms: ms(start), error: timeout ? 'timeout' : reason})
      ex.cleanupErrors.push({step: j, endpoint: step.endpoint, route: step.route, kind: timeout ? 'timeout' : 'transport_failed', http_status: null, reason})
    } finally {
      timeouts.remove(stepDeadline)
    }
  }
}

/** The envelope and the attempt artifact of a row whose calls are over (before the artifact is written). */
interface RowRecord {
  envelope: CallEnvelope
  rowIdText: string
  artifactText: string
  episode: EpisodeFields | undefined
  answer: string | null
  toolTrace: unknown[] | undefined
  attemptId: string
  cancelled: boolean
  scrub: (text: string) => string
}

function buildRecord(ctx: RowCallContext, prepared: PreparedRow, ex: Exchange): RowRecord {
  const {config} = ctx
  const {planned, attemptId, input} = prepared
  const rowId = planned.ok ? planned.plan.rowId : planned.rowId
  const provenance = planned.ok ? planned.plan.provenance : planned.provenance
  const session = ex.session
  const scrub = session && session.hasSecrets ? (text: string) => session.scrub(text) : identity
  const texts = sharedOf(ctx).texts
  let failure = ex.failure

  // Interpret the response.
  let responseJson: string | null = null
  let episode: EpisodeFields | undefined = texts.episode ? {...EMPTY_EPISODE} : undefined
  let answer: string | null = null
  let toolTrace: unknown[] | undefined
  if (ex.responseOk) {
    responseJson = scrub(config.response_fields ? stringifyJson(projectFields(ex.response, config.response_fields)) : ex.rawResponse!)
    if (config.kind === 'harness') {
      if (!config.response_fields) responseJson = null
      const outcome = harnessOutcome(ex.response)
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
      const outcome = episodeOutcome(ex.response)
      if (outcome.ok) episode = outcome.fields
      else failure = {kind: 'malformed_response', stage: 'execute', route: config.route, reason: `${outcome.reason}; the raw response is kept in the attempt artifact`}
    }
  }
  const {cleanupErrors} = ex
  if (cleanupErrors.length > 0 && !failure) {
    const first = cleanupErrors[0]
    failure = {kind: 'cleanup_failed', stage: 'cleanup', route: first.route, reason: first.reason}
  }
  if (failure) answer = null

  const provenanceText = planned.ok ? planned.plan.provenanceText : stringifyJson(provenance)
  const cleanupText = cleanupErrors.length === 0 ? '[]' : stringifyJson(cleanupErrors)
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
    cleanup_errors_json: cleanupText === '[]' ? cleanupText : scrub(cleanupText),
    response_json: responseJson,
  }

  // Attempt artifact: the native request and response, the lifecycle, no initialize bodies, tokens or cookies.
  // Written as text in a fixed field order (the JSON a generic serializer would give, without walking objects).
  const rowIdText = planned.ok ? planned.plan.rowIdText : stringifyJson(rowId)
  let artifactText = `${texts.artifactHead}"${attemptId}","row_id":${rowIdText},"row_line":${input.line},"started_at":"${ex.startedAt}","finished_at":"${isoNow()}","status":"${ex.cancelled ? 'cancelled' : envelope.status}",${
    failure ? `"failure_kind":${q(envelope.failure_kind)},"failure_stage":${q(envelope.failure_stage)},"failure_route":${q(envelope.failure_route)},"failure_reason":${q(envelope.failure_reason)}` : NO_FAILURE
  },"provenance":${provenanceText},"lifecycle":${lifecycleText(ex.lifecycle)},"cleanup_errors":${cleanupText}`
  if (episode) artifactText += `,"episode":${stringifyJson(episode)}`
  if (config.kind === 'harness') artifactText += `,"harness":{"answer":${q(answer)},"tool_trace":${toolTrace ? stringifyJson(toolTrace) : '[]'}}`
  artifactText = flattened(scrub(`${artifactText},"request":${ex.requestText},"response":${ex.responseText}}`))
  return {envelope, rowIdText, artifactText, episode, answer, toolTrace, attemptId, cancelled: ex.cancelled, scrub}
}

const identity = (text: string) => text

/**
 * The same text as one string. V8 keeps a string built by concatenation as a tree of its pieces,
 * and a row's attempt and columns then wait in their write batches (the attempt for up to
 * FLUSH_MS): as trees, every piece outlives the young-generation collections meanwhile. Reading a
 * character makes V8 flatten the string in place, so the pieces die young (2-3% more rows per
 * second at 32 rows in flight, about 2 µs less CPU per row, in interleaved runs of bench/call.mjs).
 */
function flattened(text: string): string {
  text.charCodeAt(text.length - 1)
  return text
}

const NO_FAILURE = '"failure_kind":null,"failure_stage":null,"failure_route":null,"failure_reason":null'

/** The row's outcome once its attempt artifact is written (or failed to be). */
function finishRecord(ctx: RowCallContext, record: RowRecord, ref: string | undefined, writeError: unknown): RowOutcome {
  const {config} = ctx
  const {envelope, episode, toolTrace, attemptId, scrub} = record
  let {answer} = record
  if (ref !== undefined) {
    envelope.artifact = ref
  } else {
    const reason = `attempt evidence could not be written: ${codeOf(writeError) ?? ''} ${messageOf(writeError)}`.trim()
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

  if (record.cancelled) return {state: 'cancelled', attemptId}

  const texts = sharedOf(ctx).texts
  const failed = envelope.failure_kind !== null
  const envelopeText = `{"status":"${envelope.status}","row_id":${record.rowIdText},"attempt_id":"${attemptId}","artifact":${q(envelope.artifact)},${
    failed
      ? `"failure_kind":${q(envelope.failure_kind)},"failure_stage":${q(envelope.failure_stage)},"failure_route":${q(envelope.failure_route)},"failure_reason":${q(envelope.failure_reason)}`
      : NO_FAILURE
  },"provenance_json":${q(envelope.provenance_json)},"cleanup_errors_json":${envelope.cleanup_errors_json === '[]' ? '"[]"' : q(envelope.cleanup_errors_json)},"response_json":${q(envelope.response_json)}`
  let columnsText: string
  let toolTraceJson: string | null = null
  if (config.kind === 'harness') {
    toolTraceJson = toolTrace && toolTrace.length > 0 ? scrub(stringifyJson(toolTrace)) : null
    columnsText = `{${texts.nameJson}:${q(answer)},${q(config.evidence_column!)}:${envelopeText},"tool_trace_json":${q(toolTraceJson)}}}`
  } else {
    columnsText = episode ? `{${texts.nameJson}:${envelopeText},${stringifyJson(episode).slice(1)}}` : `{${texts.nameJson}:${envelopeText}}}`
  }
  return new FinishedRow(config, envelope, episode, answer, toolTraceJson, flattened(columnsText), attemptId)
}

/**
 * A finished row's outcome. Its columns as objects are built only when read
 * (runCall uses columnsText); a class keeps that lazy getter off each row.
 */
class FinishedRow implements RowOutcome {
  readonly state = 'finished' as const
  readonly status: 'completed' | 'failed'
  readonly failureKind: FailureKind | null
  readonly episodeStatus: 'completed' | 'failed' | null
  readonly answered: boolean
  private built: RowColumns | undefined

  constructor(
    private readonly config: CallConfig,
    private readonly envelope: CallEnvelope,
    private readonly episode: EpisodeFields | undefined,
    private readonly answer: string | null,
    private readonly toolTraceJson: string | null,
    readonly columnsText: string,
    readonly attemptId: string,
  ) {
    this.status = envelope.status
    this.failureKind = envelope.failure_kind
    this.episodeStatus = episode?.episode_status ?? null
    this.answered = answer !== null
  }

  get columns(): RowColumns {
    return (this.built ??= this.buildColumns())
  }

  private buildColumns(): RowColumns {
    const {config, envelope, episode} = this
    if (config.kind === 'harness') {
      const evidence: HarnessEvidence = {...envelope, tool_trace_json: this.toolTraceJson}
      return {[config.name]: this.answer, [config.evidence_column!]: evidence}
    }
    const cell: ResourceEnvelope = episode ? {...envelope, ...episode} : envelope
    return {[config.name]: cell}
  }
}
