/**
 * Ray Jobs REST client (the dashboard's Job Submission API, `http://<head>:8265`), sending what
 * Ray's own client sends (runtime/http.ts: no browser headers, no redirects, bounded answers).
 *
 * Routes: `GET /api/version`, `POST /api/jobs/` (trailing slash), `GET /api/jobs/`,
 * `GET /api/jobs/{id}`, `GET /api/jobs/{id}/logs` (the whole driver log so far),
 * `GET /api/jobs/{id}/logs/tail` (a websocket: the whole log, then what follows),
 * `POST /api/jobs/{id}/stop`.
 *
 * Credentials: RAY_JOB_HEADERS (a JSON object, as `ray job --headers` takes) and Ray's token auth
 * (RAY_AUTH_MODE=token: RAY_AUTH_TOKEN, else the file RAY_AUTH_TOKEN_PATH, else ~/.ray/auth_token),
 * which, as in Ray's client, yields to an Authorization header the user gave. They are sent with
 * every request to the configured dashboard only and never appear in a message.
 */
import {readFileSync} from 'node:fs'
import dns from 'node:dns/promises'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import {setTimeout as delay} from 'node:timers/promises'
import WebSocket from 'ws'

import {codeOf, ExitCode, GymError, messageOf} from '../errors.js'
import {boundedRequest, HttpFailure} from './http.js'

export type JobStatus = 'PENDING' | 'RUNNING' | 'STOPPED' | 'SUCCEEDED' | 'FAILED'

export interface JobDetails {
  submission_id: string
  status: JobStatus
  message: string | null
  entrypoint: string
  start_time: number | null
  end_time: number | null
  driver_exit_code: number | null
  error_type: string | null
  [k: string]: unknown
}

export interface SubmitRequest {
  entrypoint: string
  submission_id?: string
  runtime_env?: Record<string, unknown>
  metadata?: Record<string, string>
}

export interface TailResult {
  /** The dashboard closed the stream normally: the job ended and its log was read to the end. */
  complete: boolean
  /** Why the stream ended early (a dropped socket, a proxy cutting it). */
  reason?: string
}

export interface TailOptions {
  /** Each piece of log text, in order. */
  onText: (text: string) => void
  /** Characters of the log already delivered: the stream restarts at the log's start, so they are skipped. */
  skipChars?: number
  signal?: AbortSignal
}

export interface RayJobsClient {
  version(): Promise<Record<string, unknown>>
  submit(req: SubmitRequest): Promise<string>
  status(id: string): Promise<JobDetails>
  /** The whole driver log, read once (capped): use tail() to follow a running job. */
  logs(id: string): Promise<string>
  /** Follow the driver log over the dashboard's websocket, in flat memory. */
  tail(id: string, options: TailOptions): Promise<TailResult>
  stop(id: string): Promise<boolean>
  list(): Promise<JobDetails[]>
}

export interface RayJobsClientOptions {
  headers?: Record<string, string>
  /** How the credentials were found, for the hint of a 401/403 (never the values). */
  auth?: RayAuth
  signal?: AbortSignal
  /** Deadline of each request in ms (default 30 s). */
  timeoutMs?: number
}

export const TERMINAL_STATUSES: ReadonlySet<JobStatus> = new Set<JobStatus>(['STOPPED', 'SUCCEEDED', 'FAILED'])

/** Caps on what the dashboard may send: JSON answers, a one-shot log, one websocket message. */
const MAX_JSON_BYTES = 16 * 1024 * 1024
const MAX_LOG_BYTES = 64 * 1024 * 1024
const MAX_TAIL_MESSAGE_BYTES = 16 * 1024 * 1024

export function isTerminal(status: string | undefined | null): boolean {
  return status !== undefined && status !== null && TERMINAL_STATUSES.has(status as JobStatus)
}

/** A URL for display: any user:password@ part is replaced (as Ray's CLI redacts it), the query dropped. */
export function redactUrl(address: string): string {
  // Up to the last @: a password may hold /, @ or quotes, which end no userinfo for the user.
  return address.replace(/^([a-z][a-z0-9+.-]*:\/\/)\S*@/i, '$1<redacted>@').replace(/\?[^#\s]*/, '?<redacted>')
}

/** `http://host:8265` form of a dashboard address (adds http:// when no scheme is given, drops a trailing slash). */
export function normalizeDashboardAddress(address: string): string {
  const trimmed = address.trim().replace(/\/+$/, '')
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed) ? trimmed : `http://${trimmed}`
}

export interface JobsEndpoint {
  /** The dashboard URL the Jobs API is reached at. */
  address: string
  /** Which variable it came from, in words. */
  source: string
  /** What differs from what Ray's own CLI would do alone, when something does. */
  note?: string
}

/**
 * The Ray Jobs endpoint, resolved once and the same way by gymrecipe and the generated training
 * script (which hands it to `ray job submit` as RAY_API_SERVER_ADDRESS, the CLI's first choice):
 *
 * 1. RAY_API_SERVER_ADDRESS — Ray's CLI takes it before anything else;
 * 2. RAY_DASHBOARD_ADDRESS — Relax's launchers' explicit dashboard;
 * 3. an http(s):// RAY_ADDRESS, as Ray's CLI takes it;
 * 4. a `host:port` RAY_ADDRESS (the GCS) → `http://host:${RAY_DASHBOARD_PORT:-8265}`, as Relax's
 *    launchers derive it (Ray's CLI alone would ask the GCS for the dashboard);
 * 5. otherwise `http://127.0.0.1:${RAY_DASHBOARD_PORT:-8265}`.
 *
 * A Ray Client address (ray://) cannot be turned into a dashboard without a Ray Client: refused.
 */
export function resolveJobsEndpoint(env: NodeJS.ProcessEnv): JobsEndpoint {
  const port = env.RAY_DASHBOARD_PORT || '8265'
  if (!/^\d{1,5}$/.test(port)) {
    throw new GymError(`RAY_DASHBOARD_PORT must be a port number, got ${JSON.stringify(port)}`, {
      code: 'E_RAY_ADDRESS',
      exit: ExitCode.usage,
      hint: 'Set RAY_DASHBOARD_PORT to the Relax cluster dashboard port (8265 unless changed), or unset it.',
    })
  }
  if (env.RAY_API_SERVER_ADDRESS) return {address: env.RAY_API_SERVER_ADDRESS, source: 'RAY_API_SERVER_ADDRESS'}
  if (env.RAY_DASHBOARD_ADDRESS) return {address: env.RAY_DASHBOARD_ADDRESS, source: 'RAY_DASHBOARD_ADDRESS'}
  const rayAddress = env.RAY_ADDRESS ?? ''
  if (/^https?:\/\//i.test(rayAddress)) return {address: rayAddress, source: 'RAY_ADDRESS'}
  if (/^ray:\/\//i.test(rayAddress)) {
    throw new GymError('RAY_ADDRESS is a Ray Client address (ray://...), which does not name the Jobs API', {
      code: 'E_RAY_ADDRESS',
      exit: ExitCode.usage,
      hint: 'Set RAY_DASHBOARD_ADDRESS=http://<head>:8265 (the Relax cluster dashboard) in env.sh.',
    })
  }
  const match = /^([^:/]+):[0-9]+$/.exec(rayAddress || 'auto')
  if (match) {
    return {
      address: `http://${match[1]}:${port}`,
      source: `RAY_ADDRESS host + RAY_DASHBOARD_PORT (${port})`,
      note: 'Ray\'s CLI alone would ask the GCS at RAY_ADDRESS for the dashboard; the training script passes this address as RAY_API_SERVER_ADDRESS so both reach the same one',
    }
  }
  return {
    address: `http://127.0.0.1:${port}`,
    source: rayAddress ? `the default, since RAY_ADDRESS "${rayAddress}" is not host:port` : 'the default: none of RAY_API_SERVER_ADDRESS, RAY_DASHBOARD_ADDRESS, RAY_ADDRESS is set',
  }
}

export interface RayAuth {
  /** Where the credentials came from, in words (never the values). */
  how: string
  /** Token auth was asked for (RAY_AUTH_MODE=token). */
  tokenMode: boolean
  /** Token auth is on but no token was found. */
  missing?: string
}

export interface RayCredentials {
  headers: Record<string, string>
  auth: RayAuth
}

/** Request headers from RAY_JOB_HEADERS (a JSON object). Values are secrets: only names may be shown. */
function headersFromEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const raw = env.RAY_JOB_HEADERS
  if (!raw || !raw.trim()) return {}
  let parsed: unknown
  try {
    parsed = JSON.parse(raw)
  } catch {
    throw new GymError('RAY_JOB_HEADERS is not a JSON object', {
      code: 'E_RAY_HEADERS',
      exit: ExitCode.usage,
      hint: 'Set RAY_JOB_HEADERS to a JSON object such as {"x-ray-authorization": "Bearer <token>"} (its values are never printed).',
    })
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new GymError('RAY_JOB_HEADERS is not a JSON object', {code: 'E_RAY_HEADERS', exit: ExitCode.usage})
  }
  const headers: Record<string, string> = {}
  for (const [key, value] of Object.entries(parsed as Record<string, unknown>)) {
    // A line break would end the header and start another (request splitting); never sent.
    if (/[\r\n]/.test(key) || /[\r\n]/.test(String(value))) {
      throw new GymError(`RAY_JOB_HEADERS: the value of ${/[\r\n]/.test(key) ? 'a header name' : `header ${key}`} contains a line break`, {
        code: 'E_RAY_HEADERS',
        exit: ExitCode.usage,
        hint: 'Give each header on one line; its value is never printed.',
      })
    }
    // Ray's client sends what it is given; an object would go out as "[object Object]".
    if (typeof value !== 'string' && typeof value !== 'number') {
      throw new GymError(`RAY_JOB_HEADERS: header ${JSON.stringify(key)} has a ${value === null ? 'null' : Array.isArray(value) ? 'list' : typeof value} value; header values are strings`, {
        code: 'E_RAY_HEADERS',
        exit: ExitCode.usage,
        hint: 'Give each header a string value, e.g. {"x-ray-authorization": "Bearer <token>"}.',
      })
    }
    headers[key] = String(value)
  }
  return headers
}

/** A token file's token: its first line, trimmed, as Ray's token loader reads it (capped at 64 KiB). */
function tokenFromFile(file: string): string | undefined {
  try {
    const text = readFileSync(file, {encoding: 'utf8', flag: 'r'}).slice(0, 65_536)
    const token = text.split(/\r?\n/)[0].trim()
    return token || undefined
  } catch {
    return undefined
  }
}

/**
 * The headers every Ray Jobs request carries: RAY_JOB_HEADERS, plus Ray's token auth when
 * RAY_AUTH_MODE=token, found where Ray's client finds it. A user's own Authorization header wins,
 * as in Ray's `get_auth_headers_if_auth_enabled`.
 */
export function rayCredentials(env: NodeJS.ProcessEnv): RayCredentials {
  const headers = headersFromEnv(env)
  const named = Object.keys(headers)
  const fromHeaders = named.length > 0 ? `RAY_JOB_HEADERS (${named.join(', ')})` : undefined
  const tokenMode = (env.RAY_AUTH_MODE ?? '').trim().toLowerCase() === 'token'
  if (!tokenMode) return {headers, auth: {how: fromHeaders ?? 'none', tokenMode}}
  if (named.some((k) => k.toLowerCase() === 'authorization')) return {headers, auth: {how: `${fromHeaders}, its Authorization header in place of Ray's token`, tokenMode}}
  const both = (how: string) => (fromHeaders ? `${fromHeaders} and ${how}` : how)
  const direct = env.RAY_AUTH_TOKEN?.trim()
  if (direct) return {headers: {...headers, authorization: `Bearer ${direct}`}, auth: {how: both('the token in RAY_AUTH_TOKEN'), tokenMode}}
  if (env.RAY_AUTH_TOKEN_PATH) {
    const token = tokenFromFile(env.RAY_AUTH_TOKEN_PATH)
    if (!token) {
      throw new GymError(`RAY_AUTH_MODE=token and RAY_AUTH_TOKEN_PATH is set, but ${env.RAY_AUTH_TOKEN_PATH} cannot be read or is empty`, {
        code: 'E_RAY_AUTH',
        exit: ExitCode.precondition,
        hint: "Put the cluster's token in that file (or in RAY_AUTH_TOKEN), as Ray's own client requires.",
      })
    }
    return {headers: {...headers, authorization: `Bearer ${token}`}, auth: {how: both(`the token in RAY_AUTH_TOKEN_PATH (${env.RAY_AUTH_TOKEN_PATH})`), tokenMode}}
  }
  const home = env.HOME || os.homedir()
  const file = path.join(home, '.ray', 'auth_token')
  const token = tokenFromFile(file)
  if (token) return {headers: {...headers, authorization: `Bearer ${token}`}, auth: {how: both(`the token in ${file}`), tokenMode}}
  return {headers, auth: {how: fromHeaders ?? 'none', tokenMode, missing: `RAY_AUTH_MODE=token but no token was found in RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ${file}`}}
}

/** Resolve the dashboard host name (no traffic): undefined when it resolves, else the reason. */
export async function dashboardResolveProblem(address: string): Promise<string | undefined> {
  let host: string
  try {
    host = new URL(normalizeDashboardAddress(address)).hostname.replace(/^\[|\]$/g, '')
  } catch {
    return `"${redactUrl(address)}" is not a URL`
  }
  if (net.isIP(host)) return undefined
  try {
    await dns.lookup(host)
    return undefined
  } catch (error) {
    return `host ${host} does not resolve (${codeOf(error) ?? messageOf(error) ?? 'lookup failed'})`
  }
}

function firstLines(text: string, count = 3): string {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
  // Ray answers errors with a Python traceback; its last line carries the reason.
  const last = lines.filter((l) => !l.startsWith('File ') && !l.startsWith('Traceback')).slice(-count)
  return last.join(' | ').slice(0, 600)
}

/** A Ray Jobs REST client bound to one dashboard address. */
export function rayJobsClient(dashboardAddress: string, options: RayJobsClientOptions = {}): RayJobsClient {
  return new DashboardJobsClient(dashboardAddress, options)
}

const enc = encodeURIComponent

/** The Ray Jobs REST API of one dashboard: every answer checked, every failure worded for the user (credentials never shown). */
class DashboardJobsClient implements RayJobsClient {
  private readonly base: string
  private readonly shown: string
  private readonly headers: Record<string, string>
  private readonly timeoutMs: number

  constructor(
    dashboardAddress: string,
    private readonly options: RayJobsClientOptions,
  ) {
    this.base = normalizeDashboardAddress(dashboardAddress)
    this.shown = redactUrl(this.base)
    this.headers = options.headers ?? {}
    this.timeoutMs = options.timeoutMs ?? 30_000
  }

  private unreachable(method: string, route: string, error: unknown): GymError {
    if (error instanceof HttpFailure && error.kind === 'redirect') {
      return new GymError(`Ray dashboard ${this.shown} answered ${method} ${route} with a redirect to ${redactUrl(error.details.location ?? '?')}, which gymrecipe does not follow`, {
        code: 'E_RAY_REDIRECT',
        exit: ExitCode.precondition,
        hint: 'Point RAY_DASHBOARD_ADDRESS (or RAY_API_SERVER_ADDRESS) at the address the dashboard answers on itself; credentials are only ever sent to the address configured.',
        details: {dashboard: this.shown, status: error.details.status ?? null},
      })
    }
    if (error instanceof HttpFailure && error.kind === 'too-large') {
      return new GymError(`Ray dashboard ${this.shown} answered ${method} ${route} with more than gymrecipe reads (${error.reason})`, {
        code: 'E_RAY_PROTOCOL',
        details: {dashboard: this.shown},
      })
    }
    const reason = error instanceof HttpFailure ? error.reason : messageOf(error)
    return new GymError(`Ray dashboard ${this.shown} did not answer ${method} ${route}: ${reason}`, {
      code: 'E_RAY_UNREACHABLE',
      exit: ExitCode.precondition,
      hint: 'Check RAY_DASHBOARD_ADDRESS / RAY_API_SERVER_ADDRESS / RAY_ADDRESS (the Relax cluster dashboard, usually http://<head>:8265) and that this machine can reach it.',
      details: {dashboard: this.shown},
    })
  }

  private async request(method: string, route: string, body?: unknown, maxBodyBytes = MAX_JSON_BYTES): Promise<{status: number; text: string}> {
    try {
      const answer = await boundedRequest(method, `${this.base}${route}`, {
        headers: this.headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        timeoutMs: this.timeoutMs,
        maxBodyBytes,
        signal: this.options.signal,
      })
      return {status: answer.status, text: answer.text}
    } catch (error) {
      if (this.options.signal?.aborted) throw this.options.signal.reason ?? error
      throw this.unreachable(method, route, error)
    }
  }

  private parseJson<T>(text: string, route: string): T {
    try {
      return JSON.parse(text) as T
    } catch {
      throw new GymError(`Ray dashboard ${this.shown}${route} answered with something that is not JSON: ${text.slice(0, 200)}`, {
        code: 'E_RAY_PROTOCOL',
        details: {dashboard: this.shown},
      })
    }
  }

  private notFound(id: string, text: string): GymError {
    return new GymError(`Ray job ${id} does not exist on ${this.shown}`, {
      code: 'E_RAY_JOB_NOT_FOUND',
      hint: firstLines(text) || undefined,
      details: {dashboard: this.shown, submissionId: id},
    })
  }

  private authHint(status: number): string {
    const auth = this.options.auth
    if (auth?.missing) return `${auth.missing}. Put the cluster's token there, as for Ray's own CLI.`
    if (status === 401) {
      return auth?.tokenMode
        ? `Sent ${auth.how}, and the dashboard asked for credentials: check the token.`
        : 'The dashboard asks for credentials: with Ray token auth set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN (or ~/.ray/auth_token); behind a proxy, set RAY_JOB_HEADERS to the JSON headers it requires.'
    }
    return `Sent ${auth?.how ?? 'no credentials'}, and the dashboard refused them: check the token (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH, ~/.ray/auth_token) or RAY_JOB_HEADERS.`
  }

  private httpError(what: string, status: number, text: string, id?: string): GymError {
    if (status === 401 || status === 403) {
      return new GymError(`Ray dashboard ${this.shown} refused ${what} (HTTP ${status}${text.trim() ? `: ${firstLines(text, 1)}` : ''})`, {
        code: 'E_RAY_AUTH',
        exit: ExitCode.precondition,
        hint: this.authHint(status),
        details: {dashboard: this.shown, status},
      })
    }
    return new GymError(`Ray dashboard ${this.shown} failed ${what} (HTTP ${status}): ${firstLines(text)}`, {
      code: 'E_RAY_HTTP',
      details: {dashboard: this.shown, status, ...(id ? {submissionId: id} : {})},
    })
  }

  tail(id: string, tailOptions: TailOptions): Promise<TailResult> {
    const route = `/api/jobs/${enc(id)}/logs/tail`
    const url = `${this.base.replace(/^http/i, 'ws')}${route}`
    let skip = tailOptions.skipChars ?? 0
    return new Promise<TailResult>((resolve, reject) => {
      let opened = false
      let settled = false
      const socket = new WebSocket(url, {
        headers: this.headers,
        perMessageDeflate: false,
        followRedirects: false,
        maxPayload: MAX_TAIL_MESSAGE_BYTES,
        handshakeTimeout: this.timeoutMs,
      })
      const signal = tailOptions.signal ?? this.options.signal
      const settle = (fn: () => void) => {
        if (settled) return
        settled = true
        signal?.removeEventListener('abort', onAbort)
        fn()
      }
      const onAbort = () => {
        socket.terminate()
        settle(() => reject(signal?.reason))
      }
      if (signal?.aborted) {
        onAbort()
        return
      }
      signal?.addEventListener('abort', onAbort, {once: true})
      socket.on('unexpected-response', (_request, response) => {
        const status = response.statusCode ?? 0
        const chunks: Buffer[] = []
        let size = 0
        response.on('data', (chunk: Buffer) => {
          size += chunk.length
          if (size <= 65_536) chunks.push(chunk)
        })
        response.on('end', () => {
          socket.terminate()
          const text = Buffer.concat(chunks).toString('utf8')
          settle(() => {
            if (status >= 300 && status < 400) reject(this.unreachable('GET', route, new HttpFailure('redirect', 'redirect', '', {status, location: String(response.headers.location ?? '?')})))
            else if (status === 404 && /does not exist/.test(text)) reject(this.notFound(id, text))
            else reject(this.httpError(`GET ${route}`, status, text, id))
          })
        })
      })
      socket.on('open', () => {
        opened = true
      })
      socket.on('message', (data: Buffer, isBinary: boolean) => {
        let text = isBinary ? '' : data.toString('utf8')
        if (skip > 0) {
          const dropped = Math.min(skip, text.length)
          text = text.slice(dropped)
          skip -= dropped
        }
        if (text) tailOptions.onText(text)
      })
      socket.on('close', (code: number) => {
        // 1000 (and 1005, no status) is the dashboard ending the stream after the job's last line.
        settle(() => resolve(code === 1000 || code === 1005 ? {complete: true} : {complete: false, reason: `the log stream closed with code ${code}`}))
      })
      socket.on('error', (error: Error) => {
        if (opened) {
          settle(() => resolve({complete: false, reason: `the log stream failed: ${messageOf(error)}`}))
        } else {
          settle(() => reject(this.unreachable('GET', route, new HttpFailure(messageOf(error), 'transport', ''))))
        }
      })
    })
  }

  async version(): Promise<Record<string, unknown>> {
    const {status, text} = await this.request('GET', '/api/version')
    if (status === 404) {
      throw new GymError(`${this.shown} has no /api/version: not a Ray dashboard, or Ray older than 1.9`, {
        code: 'E_RAY_PROTOCOL',
        exit: ExitCode.precondition,
        hint: 'Point RAY_DASHBOARD_ADDRESS at the Relax cluster dashboard (http://<head>:8265).',
        details: {dashboard: this.shown},
      })
    }
    if (status !== 200) throw this.httpError('GET /api/version', status, text)
    const parsed = this.parseJson<unknown>(text, '/api/version')
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed) || typeof (parsed as Record<string, unknown>).ray_version !== 'string') {
      throw new GymError(`${this.shown} answered /api/version without a ray_version: not a Ray dashboard`, {
        code: 'E_RAY_PROTOCOL',
        exit: ExitCode.precondition,
        hint: 'Point RAY_DASHBOARD_ADDRESS at the Relax cluster dashboard (http://<head>:8265).',
        details: {dashboard: this.shown},
      })
    }
    return parsed as Record<string, unknown>
  }


  async submit(req: SubmitRequest): Promise<string> {
    // Omit unset fields: older servers reject unknown non-null keys.
    const body: Record<string, unknown> = {entrypoint: req.entrypoint}
    if (req.submission_id !== undefined) body.submission_id = req.submission_id
    if (req.runtime_env !== undefined) body.runtime_env = req.runtime_env
    if (req.metadata !== undefined) body.metadata = req.metadata
    const {status, text} = await this.request('POST', '/api/jobs/', body)
    if (status === 200) {
      const parsed = this.parseJson<{submission_id?: string; job_id?: string}>(text, '/api/jobs/')
      const id = parsed.submission_id ?? parsed.job_id
      if (!id) throw new GymError(`Ray accepted the job but returned no submission_id: ${text.slice(0, 200)}`, {code: 'E_RAY_PROTOCOL'})
      return id
    }
    if ((status === 500 || status === 400) && text.includes('Please use a different submission_id')) {
      throw new GymError(`Ray refused submission id ${req.submission_id}: a job with this id already exists`, {
        code: 'E_RAY_DUPLICATE_SUBMISSION',
        hint: 'Ray never reuses a submission id, even for a finished job; submit with a new unique id.',
        details: {dashboard: this.shown, submissionId: req.submission_id ?? null, status},
      })
    }
    throw this.httpError('the submission', status, text, req.submission_id)
  }


  async status(id: string): Promise<JobDetails> {
    const route = `/api/jobs/${enc(id)}`
    const {status, text} = await this.request('GET', route)
    if (status === 404) throw this.notFound(id, text)
    if (status !== 200) throw this.httpError(`GET ${route}`, status, text, id)
    const parsed = this.parseJson<unknown>(text, route)
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed) || typeof (parsed as Record<string, unknown>).status !== 'string') {
      throw new GymError(`Ray dashboard ${this.shown} answered ${route} with something that is not a job (no status): ${text.slice(0, 200)}`, {code: 'E_RAY_PROTOCOL', details: {dashboard: this.shown}})
    }
    return parsed as JobDetails
  }


  async logs(id: string): Promise<string> {
    const route = `/api/jobs/${enc(id)}/logs`
    const {status, text} = await this.request('GET', route, undefined, MAX_LOG_BYTES)
    if (status === 404) throw this.notFound(id, text)
    if (status !== 200) throw this.httpError(`GET ${route}`, status, text, id)
    const parsed = this.parseJson<{logs?: unknown}>(text, route)
    return typeof parsed.logs === 'string' ? parsed.logs : ''
  }



  async stop(id: string): Promise<boolean> {
    const route = `/api/jobs/${enc(id)}/stop`
    const {status, text} = await this.request('POST', route)
    if (status === 404) throw this.notFound(id, text)
    if (status !== 200) throw this.httpError(`POST ${route}`, status, text, id)
    return this.parseJson<{stopped?: unknown}>(text, route).stopped === true
  }


  async list(): Promise<JobDetails[]> {
    const {status, text} = await this.request('GET', '/api/jobs/')
    if (status !== 200) throw this.httpError('GET /api/jobs/', status, text)
    const parsed = this.parseJson<unknown>(text, '/api/jobs/')
    // Current Ray returns a JSON array; very old servers returned {id: details}.
    if (Array.isArray(parsed)) return parsed as JobDetails[]
    if (parsed && typeof parsed === 'object') return Object.values(parsed as Record<string, JobDetails>)
    return []
  }

}

/** A client for the endpoint and credentials an environment names (the one way every step builds it). */
export function rayJobsClientFromEnv(env: NodeJS.ProcessEnv, options: Omit<RayJobsClientOptions, 'headers' | 'auth'> & {address?: string} = {}): {client: RayJobsClient; endpoint: JobsEndpoint; auth: RayAuth} {
  const endpoint = options.address ? {address: options.address, source: 'the recorded submission'} : resolveJobsEndpoint(env)
  const {headers, auth} = rayCredentials(env)
  return {client: rayJobsClient(endpoint.address, {...options, headers, auth}), endpoint, auth}
}

/** Wait, or reject with the signal's reason when it aborts first. */
async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  try {
    await delay(ms, undefined, {signal})
  } catch (error) {
    throw signal?.aborted ? signal.reason : error
  }
}

/** The last lines of a log, kept in bounded memory while the log streams past. */
export class LogTail {
  private lines: string[] = []
  private partial = ''
  chars = 0

  constructor(private readonly keep = 200) {}

  push(text: string): void {
    this.chars += text.length
    const pieces = (this.partial + text).split('\n')
    this.partial = pieces.pop() ?? ''
    // A line longer than 64 KiB is kept cut: one line must not undo the bound.
    if (this.partial.length > 65_536) this.partial = this.partial.slice(-65_536)
    for (const piece of pieces) {
      const line = piece.replace(/\r$/, '')
      if (!line.trim()) continue
      this.lines.push(line.length > 65_536 ? line.slice(0, 65_536) : line)
    }
    if (this.lines.length > this.keep * 2) this.lines = this.lines.slice(-this.keep)
  }

  last(count = 40): string[] {
    const all = this.partial.trim() ? [...this.lines, this.partial] : this.lines
    return all.slice(-Math.min(count, this.keep))
  }
}

export interface FollowOptions {
  /** New driver-log text, in order, as it arrives. */
  onLogs?: (chunk: string) => void
  /** Every status read. */
  onStatus?: (job: JobDetails) => void
  /** Said once when the log cannot be streamed and is read by polling instead. */
  onNotice?: (line: string) => void
  intervalMs?: number
  signal?: AbortSignal
  /** Give up after this long (ms); undefined = no limit. */
  timeoutMs?: number
  /** Log characters already delivered (the script's own `ray job submit` streamed them). */
  logOffset?: number
  /** Consecutive failed polls (dashboard unreachable, HTTP errors) tolerated before giving up (default 5). */
  maxConsecutiveErrors?: number
}

export interface FollowResult {
  job: JobDetails
  /** The last lines of the driver log. */
  tail: LogTail
  timedOut: boolean
}

/**
 * Follow a job to its end: its status by polling, its log over the dashboard's websocket (one
 * stream; a dropped stream is reopened and skips what was delivered). Memory stays flat: only the
 * last lines are kept. Where the websocket is refused (an old dashboard, a proxy without
 * upgrades), the log is read by polling `/logs` instead, said once through onNotice.
 */
export async function followJob(client: RayJobsClient, id: string, options: FollowOptions = {}): Promise<FollowResult> {
  const interval = options.intervalMs ?? 2000
  const deadline = options.timeoutMs === undefined ? undefined : Date.now() + options.timeoutMs
  const tailed = new LogTail()
  let delivered = options.logOffset ?? 0
  const deliver = (text: string) => {
    tailed.push(text)
    options.onLogs?.(text)
  }
  const stopTail = new AbortController()
  const stop = options.signal ? AbortSignal.any([options.signal, stopTail.signal]) : stopTail.signal
  let polling = false
  let streamEnded = false
  const stream = async () => {
    for (let attempt = 0; attempt < 5 && !stop.aborted; attempt++) {
      try {
        const skip = delivered
        let seen = 0
        const result = await client.tail(id, {
          skipChars: skip,
          signal: stop,
          onText: (text) => {
            seen += text.length
            delivered = skip + seen
            deliver(text)
          },
        })
        if (result.complete) {
          streamEnded = true
          return
        }
      } catch (error) {
        if (stop.aborted) return
        if (codeOf(error) === 'E_RAY_JOB_NOT_FOUND') throw error
        // The websocket is refused: poll /logs instead.
        polling = true
        options.onNotice?.(`the dashboard does not stream the log (${messageOf(error)}); reading it by polling instead`)
        return
      }
      await sleep(Math.min(interval, 1000), stop).catch(() => undefined)
    }
    polling = true
  }
  // Ray's /logs has no offset: each poll reads the whole log (capped). A long log is read less
  // often, one second per MiB already delivered (at most a minute), so polling stays cheap.
  let lastPoll = 0
  const pollLogs = async (force = false) => {
    const spacing = Math.min(60_000, (delivered / (1 << 20)) * 1000)
    if (!force && Date.now() - lastPoll < spacing) return
    lastPoll = Date.now()
    const text = await client.logs(id)
    if (text.length > delivered) {
      deliver(text.slice(delivered))
      delivered = text.length
    }
  }
  const streaming = stream().catch(() => {
    polling = true
  })
  const tolerated = options.maxConsecutiveErrors ?? 5
  let failures = 0
  try {
    for (;;) {
      let job: JobDetails
      try {
        job = await client.status(id)
        if (polling) await pollLogs()
        failures = 0
      } catch (error) {
        // A missing job or an abort is final; a dashboard hiccup is retried a few times.
        if (options.signal?.aborted || codeOf(error) === 'E_RAY_JOB_NOT_FOUND' || ++failures > tolerated) throw error
        await sleep(interval, options.signal)
        continue
      }
      options.onStatus?.(job)
      if (isTerminal(job.status)) {
        // The stream ends by itself once the last line is sent; give it a moment, then read what is left.
        if (!polling) {
          await Promise.race([streaming, sleep(5000, options.signal).catch(() => undefined)])
          if (!streamEnded) {
            stopTail.abort()
            await pollLogs(true).catch(() => undefined)
          }
        } else {
          await pollLogs(true).catch(() => undefined)
        }
        return {job, tail: tailed, timedOut: false}
      }
      if (deadline !== undefined && Date.now() >= deadline) return {job, tail: tailed, timedOut: true}
      await sleep(interval, options.signal)
    }
  } finally {
    stopTail.abort()
    await streaming
  }
}

/** The last `count` non-empty lines of a log. */
export function logTail(text: string, count = 40): string[] {
  return text
    .split('\n')
    .map((l) => l.replace(/\r$/, ''))
    .filter((l) => l.trim().length > 0)
    .slice(-count)
}

