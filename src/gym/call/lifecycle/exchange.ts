/** A row's HTTP part: initialize (seed the session), execute, clean up — each bounded by its deadline and Ctrl+C, each failure named by its stage and route. */
import {isLosslessNumber} from 'lossless-json'
import {parseFast} from '../../../json/index.js'
import type {Admission} from '../limiter.js'
import {PathError, resolvePath} from '../paths.js'
import type {RowPlan} from '../request.js'
import {RowSession} from '../session.js'
import {AbortedError, Cancel, type HttpResponse, TransportError} from '../../../runtime/call-transport.js'
import type {RowCallContext, RowOutcome, PreparedRow, Failure, CleanupError, LifecycleEntry} from './types.js'
import {CANCEL_REASON, httpFailure, isoNow, ms, sharedOf} from './context.js'
import {buildRecord, finishRecord} from './record.js'

/** What the HTTP part of a row left behind for its evidence and envelope. */
export interface Exchange {
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

export function newExchange(failure: Failure | undefined, session: RowSession | undefined): Exchange {
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
export interface Step {
  stage: 'initialize' | 'execute'
  endpoint: string
  route: string
  start: number
}

export async function initialize(ctx: RowCallContext, plan: RowPlan, session: RowSession, cancel: Cancel, ex: Exchange, at: Step): Promise<void> {
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
export function readExecute(ctx: RowCallContext, plan: RowPlan, session: RowSession, ex: Exchange, start: number, url: string, headersJson: string, res: HttpResponse): void {
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

export function isSpace(code: number): boolean {
  return code === 32 || code === 10 || code === 13 || code === 9 || code === 0xfeff || code === 0xa0 || (code >= 0x2000 && code <= 0x3000)
}

/** A request of initialize/execute threw: timeout, cancellation or transport failure. */
export function requestFailure(ctx: RowCallContext, error: unknown, at: Step, ex: Exchange): Failure {
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
export async function cleanup(ctx: RowCallContext, plan: RowPlan, session: RowSession, ex: Exchange): Promise<void> {
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
