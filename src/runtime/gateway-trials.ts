/**
 * HTTP client for the Relax Gateway routes a trial needs: /readyz,
 * POST /v1/trials, GET /v1/trials/{id}, POST .../renew and .../abort, plus a plain GET
 * for cleanup probes. No proxy variable is read, like the integration's `trust_env=False`
 * clients. Transport failures are returned, never thrown.
 */
import {HttpFailure, httpRequest} from './http.js'
import {messageOf} from '../errors.js'

export interface GatewayAnswer {
  /** HTTP status, or 0 when the request never got an answer. */
  status: number
  /** The JSON answer, the text of a non-JSON one, or undefined without an answer. */
  body: unknown
  /** Transport error text when status is 0. */
  error?: string
}

export const TERMINAL_STATUSES = ['completed', 'truncated', 'aborted', 'failed'] as const

export interface TrialSnapshot {
  protocol_version?: string
  request_id: string
  status: string
  reward: unknown
  metrics: Record<string, unknown>
  artifact_ref: string | null
  error: null | ({code?: string; type?: string; message?: string; cause?: unknown} & Record<string, unknown>)
}

export interface ReadyzBody {
  ready?: boolean
  trials?: number
  active_trials?: number
  terminal_trials?: number
  service_epoch?: string
  gym_commit?: string
  janitor_healthy?: boolean
  [key: string]: unknown
}

/** The trial counts a /readyz answer gives, in words; a count it does not give is left out. */
export function trialCounts(body: ReadyzBody | undefined): string {
  const parts = (['trials', 'terminal_trials'] as const).filter((k) => typeof body?.[k] === 'number').map((k) => `${k}=${body![k]}`)
  return parts.length > 0 ? parts.join(', ') : 'no trial counts given'
}

/** The trial snapshot an answer carries (a 200 from GET, the 202 of create or abort), or null. */
export function snapshotOf(answer: GatewayAnswer, ...statuses: number[]): TrialSnapshot | null {
  const {body} = answer
  return statuses.includes(answer.status) && body && typeof body === 'object' && !Array.isArray(body) ? (body as TrialSnapshot) : null
}

/** A JSON request that never throws: transport failures come back as status 0 with the reason. */
export async function httpJson(method: 'GET' | 'POST', url: string, body?: unknown, timeoutMs = 30_000): Promise<GatewayAnswer> {
  try {
    const answer = await httpRequest(method, url, {body: body === undefined ? undefined : JSON.stringify(body), timeoutMs})
    // Keep a non-JSON body as text: error pages say what went wrong.
    return {status: answer.status, body: answer.json ?? (answer.text || undefined)}
  } catch (error) {
    return {status: 0, body: undefined, error: error instanceof HttpFailure ? error.reason : messageOf(error)}
  }
}

export function gatewayClient(gatewayUrl: string) {
  const base = gatewayUrl.replace(/\/+$/, '')
  const trial = (id: string) => `${base}/v1/trials/${encodeURIComponent(id)}`
  return {
    url: base,
    readyz: () => httpJson('GET', `${base}/readyz`, undefined, 10_000) as Promise<GatewayAnswer & {body: ReadyzBody | undefined}>,
    create: (payload: unknown) => httpJson('POST', `${base}/v1/trials`, payload),
    get: (id: string) => httpJson('GET', trial(id), undefined, 10_000),
    renew: (id: string) => httpJson('POST', `${trial(id)}/renew`, undefined, 10_000),
    abort: (id: string, timeoutMs = 150_000) => httpJson('POST', `${trial(id)}/abort`, undefined, timeoutMs),
  }
}

export type GatewayClient = ReturnType<typeof gatewayClient>

/**
 * Whether a Gateway registers an environment/config, asked without creating a trial: the create
 * request carries a deadline no registration allows, so a registered pair is refused for its
 * deadline (400) and an unregistered one for being unknown (400 "not registered").
 */
export async function gatewayRegisters(gatewayUrl: string, environment: string, config: string, interruptPolicy: string): Promise<{registered: boolean | null; answer: GatewayAnswer}> {
  const client = gatewayClient(gatewayUrl)
  const requestId = `gymrecipe-registration-probe-${Date.now()}`
  const answer = await client.create({
    protocol_version: 'relax-nemo-gym/v1',
    request_id: requestId,
    session: {session_id: requestId, group_id: 'gymrecipe-probe', rollout_mode: 'eval', attempt: 1},
    environment: {name: environment, config, task: {messages: [{role: 'user', content: 'registration probe'}], metadata: {}}},
    model_endpoint: {base_url: 'http://127.0.0.1:9/v1', api_key: 'gymrecipe-probe', model: 'model'},
    interrupt_policy: interruptPolicy,
    deadline_s: 1e12,
    lease_s: 1,
  })
  const detail = JSON.stringify(answer.body ?? '')
  // Never expected (no registration allows that deadline), but a created probe must not linger.
  if (answer.status === 202) await client.abort(requestId, 10_000)
  if (answer.status === 400 && /not registered/i.test(detail)) return {registered: false, answer}
  if (answer.status === 400 || answer.status === 202) return {registered: true, answer}
  return {registered: null, answer}
}

export function isTerminal(status: unknown): boolean {
  return typeof status === 'string' && (TERMINAL_STATUSES as readonly string[]).includes(status)
}
