import {randomUUID} from 'node:crypto'

import type {Admission} from '../limiter.js'
import {buildRowPlan} from '../request.js'
import type {RowCallContext, RowInput, RowOutcome, PreparedRow} from './types.js'
import {runPreparedRow} from './exchange.js'

/**
 * One row of a call, from its requests to its evidence: prepare and admit here, the HTTP
 * exchange (exchange.ts), the envelope and artifact (record.ts).
 */
export type {AttemptWriter, PreparedRow, RowCallContext, RowInput, RowOutcome} from './types.js'
export {CANCEL_REASON} from './context.js'
export {runPreparedRow} from './exchange.js'

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
