/**
 * One deterministic trial through the real Gateway: create it with
 * the scripted model as its model endpoint, renew the lease while polling, and stop at a
 * terminal state. Also the cleanup proof of stateful environments: a second trial held
 * mid-flight by the scripted model and aborted.
 */
import {setTimeout as sleep} from 'node:timers/promises'
import {randomBytes} from 'node:crypto'

import {type GatewayClient, type GatewayAnswer, type TrialSnapshot, isTerminal, snapshotOf} from '../../runtime/gateway-trials.js'
import type {CallbackRecord, ScriptedModel, ScriptedTurn} from '../../runtime/scripted-model.js'
import type {RelaxTask} from './task.js'

export const PROTOCOL_VERSION = 'relax-nemo-gym/v1'

export interface TrialPlan {
  recipeId: string
  environment: string
  config: string
  task: RelaxTask
  turns: ScriptedTurn[]
  interruptPolicy: string
  deadlineS: number
  leaseS: number
  captureArtifacts: boolean
  pollIntervalMs?: number
  /** Give up (and abort the trial) this long after the deadline. */
  graceMs?: number
  signal?: AbortSignal
}

export interface TrialRun {
  requestId: string
  create: GatewayAnswer
  snapshot: TrialSnapshot | null
  history: number[]
  callbacks: CallbackRecord[]
  renewals: number
  renewFailures: Array<{status: number; detail: unknown}>
  /** No terminal state within deadline + grace: gymrecipe aborted the trial itself. */
  timedOut: boolean
  elapsedMs: number
}


/** Replace a secret wherever a Gateway answer might echo it (e.g. a 422 quoting the payload). */
export function scrub<T>(value: T, secret: string): T {
  if (value === undefined || !secret) return value
  const text = JSON.stringify(value)
  return text.includes(secret) ? (JSON.parse(text.split(secret).join('<redacted>')) as T) : value
}

function scrubRun(run: TrialRun & {abort?: GatewayAnswer | null}, secret: string): void {
  run.create = scrub(run.create, secret)
  run.snapshot = scrub(run.snapshot, secret)
  run.renewFailures = scrub(run.renewFailures, secret)
  if (run.abort) run.abort = scrub(run.abort, secret)
}

function requestId(recipeId: string, kind: string): string {
  const stamp = new Date().toISOString().replace(/[-:.TZ]/g, '').slice(0, 14)
  return `gymrecipe-${kind}-${recipeId}-${stamp}-${randomBytes(6).toString('hex')}`
}

/** The create payload; the api key is the scripted session's bearer token. */
export function trialPayload(plan: TrialPlan, id: string, baseUrl: string, apiKey: string): Record<string, unknown> {
  const metadata: Record<string, unknown> = {integration: 'gymrecipe', integration_test: true}
  if (plan.captureArtifacts) metadata.capture_artifacts = true
  return {
    protocol_version: PROTOCOL_VERSION,
    request_id: id,
    session: {session_id: `session-${id}`, group_id: `gymrecipe-${plan.recipeId}`, rollout_mode: 'eval', attempt: 1},
    environment: {name: plan.environment, config: plan.config, task: plan.task},
    model_endpoint: {base_url: baseUrl, api_key: apiKey, model: 'model'},
    generation: {responses_create_params: {}, sampling_params: {}},
    interrupt_policy: plan.interruptPolicy,
    deadline_s: plan.deadlineS,
    lease_s: plan.leaseS,
    metadata,
  }
}

async function pollToTerminal(
  gateway: GatewayClient,
  id: string,
  first: TrialSnapshot | null,
  plan: TrialPlan,
  run: Pick<TrialRun, 'renewals' | 'renewFailures'>,
): Promise<{snapshot: TrialSnapshot | null; timedOut: boolean}> {
  const poll = plan.pollIntervalMs ?? 200
  const renewEvery = Math.max(50, (plan.leaseS * 1000) / 3)
  const giveUpAt = Date.now() + plan.deadlineS * 1000 + (plan.graceMs ?? 30_000)
  let snapshot = first
  let nextRenew = Date.now() + renewEvery
  while (!isTerminal(snapshot?.status)) {
    if (Date.now() >= giveUpAt || plan.signal?.aborted) {
      const aborted = await gateway.abort(id)
      // Abort is asynchronous: its 202 carries the snapshot from before the cleanup ran.
      return {snapshot: await settleAfterAbort(gateway, id, snapshotOf(aborted, 202) ?? snapshot, poll), timedOut: true}
    }
    await sleep(poll)
    if (Date.now() >= nextRenew) {
      const renewed = await gateway.renew(id)
      if (renewed.status === 204) run.renewals++
      else run.renewFailures.push({status: renewed.status, detail: renewed.body ?? renewed.error})
      nextRenew = Date.now() + renewEvery
    }
    snapshot = snapshotOf(await gateway.get(id), 200) ?? snapshot
  }
  return {snapshot, timedOut: false}
}

/** Poll a just-aborted trial until the Gateway reports its terminal state (bounded: 15 s). */
async function settleAfterAbort(gateway: GatewayClient, id: string, last: TrialSnapshot | null, poll: number): Promise<TrialSnapshot | null> {
  const until = Date.now() + 15_000
  let snapshot = last
  while (!isTerminal(snapshot?.status) && Date.now() < until) {
    await sleep(poll)
    snapshot = snapshotOf(await gateway.get(id), 200) ?? snapshot
  }
  return snapshot
}

/** Run one trial to a terminal state. */
export async function runTrial(gateway: GatewayClient, model: ScriptedModel, plan: TrialPlan): Promise<TrialRun> {
  const started = Date.now()
  const id = requestId(plan.recipeId, 'trial')
  const {apiKey, session} = model.addSession(plan.turns)
  const run: TrialRun = {requestId: id, create: {status: 0, body: undefined}, snapshot: null, history: [], callbacks: [], renewals: 0, renewFailures: [], timedOut: false, elapsedMs: 0}
  run.create = await gateway.create(trialPayload(plan, id, model.baseUrl, apiKey))
  if (run.create.status === 202) {
    const {snapshot, timedOut} = await pollToTerminal(gateway, id, snapshotOf(run.create, 202), plan, run)
    run.snapshot = snapshot
    run.timedOut = timedOut
  }
  run.history = session.history()
  run.callbacks = session.callbacks.map((c) => ({...c}))
  run.elapsedMs = Date.now() - started
  scrubRun(run, apiKey)
  return run
}

export interface AbortRun extends TrialRun {
  /** The scripted model held callback `holdAt` before the abort was sent. */
  heldAt: number
  reachedHold: boolean
  abort: GatewayAnswer | null
}

/**
 * The cleanup proof: start a second trial, hold its model callback `holdAt` (after the
 * first tool result when the script starts with a tool call), abort it mid-flight, and
 * follow it to its terminal state.
 */
export async function runAbortedTrial(gateway: GatewayClient, model: ScriptedModel, plan: TrialPlan, holdTimeoutMs = 60_000): Promise<AbortRun> {
  const started = Date.now()
  const id = requestId(plan.recipeId, 'abort')
  const heldAt = plan.turns[0]?.tool_call && plan.turns.length > 1 ? 1 : 0
  const {apiKey, session} = model.addSession(plan.turns, {holdAt: heldAt})
  const run: AbortRun = {
    requestId: id, create: {status: 0, body: undefined}, snapshot: null, history: [], callbacks: [], renewals: 0, renewFailures: [],
    timedOut: false, elapsedMs: 0, heldAt, reachedHold: false, abort: null,
  }
  try {
    run.create = await gateway.create(trialPayload(plan, id, model.baseUrl, apiKey))
    if (run.create.status !== 202) return run
    // Wait until the trial is mid-flight (its callback is being held), renewing the lease.
    const holdDeadline = Date.now() + holdTimeoutMs
    let reached = false
    void session.held.then(() => {
      reached = true
    })
    let snapshot: TrialSnapshot | null = snapshotOf(run.create, 202)
    let nextRenew = Date.now() + Math.max(50, (plan.leaseS * 1000) / 3)
    while (!reached && Date.now() < holdDeadline && !isTerminal(snapshot?.status)) {
      await sleep(50)
      if (Date.now() >= nextRenew) {
        const renewed = await gateway.renew(id)
        if (renewed.status === 204) run.renewals++
        else run.renewFailures.push({status: renewed.status, detail: renewed.body ?? renewed.error})
        nextRenew = Date.now() + Math.max(50, (plan.leaseS * 1000) / 3)
      }
      snapshot = snapshotOf(await gateway.get(id), 200) ?? snapshot
    }
    run.reachedHold = reached
    run.abort = await gateway.abort(id)
    const first = snapshotOf(run.abort, 202) ?? snapshot
    const {snapshot: final, timedOut} = await pollToTerminal(gateway, id, first, {...plan, deadlineS: 0, graceMs: 120_000}, run)
    run.snapshot = final
    run.timedOut = timedOut
  } finally {
    session.release()
    run.history = session.history()
    run.callbacks = session.callbacks.map((c) => ({...c}))
    run.elapsedMs = Date.now() - started
    scrubRun(run, apiKey)
  }
  return run
}

/** A reward as a number: plain numbers, or an object with a numeric `scalar` (thin-client rule). */
export function scalarReward(reward: unknown): number | null {
  if (typeof reward === 'number') return reward
  if (reward && typeof reward === 'object' && 'scalar' in reward && typeof reward.scalar === 'number') return reward.scalar
  return null
}
