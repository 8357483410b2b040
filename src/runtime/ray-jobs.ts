/**
 * Ray Jobs REST client (the dashboard's Job Submission API, `http://<head>:8265`).
 *
 * Follows the documented API: `GET /api/version`,
 * `POST /api/jobs/` (trailing slash), `GET /api/jobs/`, `GET /api/jobs/{id}`,
 * `GET /api/jobs/{id}/logs` (the whole driver log so far), `POST /api/jobs/{id}/stop`.
 * Request headers (e.g. `x-ray-authorization: Bearer ...` from RAY_JOB_HEADERS) are sent
 * with every request and never appear in an error message.
 */
import {setTimeout as delay} from 'node:timers/promises'
import dns from 'node:dns/promises'
import net from 'node:net'

import {codeOf, ExitCode, GymError, messageOf} from '../errors.js'

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

export interface RayJobsClient {
  version(): Promise<Record<string, unknown>>
  submit(req: SubmitRequest): Promise<string>
  status(id: string): Promise<JobDetails>
  logs(id: string): Promise<string>
  stop(id: string): Promise<boolean>
  list(): Promise<JobDetails[]>
}

export interface RayJobsClientOptions {
  headers?: Record<string, string>
  signal?: AbortSignal
  /** Per-request timeout in ms (default 30 s). */
  timeoutMs?: number
}

export const TERMINAL_STATUSES: ReadonlySet<JobStatus> = new Set<JobStatus>(['STOPPED', 'SUCCEEDED', 'FAILED'])

export function isTerminal(status: string | undefined | null): boolean {
  return status !== undefined && status !== null && TERMINAL_STATUSES.has(status as JobStatus)
}

/** A URL for display: any user:password@ part is replaced (as Ray's CLI redacts it). */
export function redactUrl(address: string): string {
  return address.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/i, '$1<redacted>@')
}

/** `http://host:8265` form of a dashboard address (adds http:// when no scheme is given, drops a trailing slash). */
export function normalizeDashboardAddress(address: string): string {
  const trimmed = address.trim().replace(/\/+$/, '')
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed) ? trimmed : `http://${trimmed}`
}

/**
 * The dashboard address exactly as the generated training script derives it:
 * RAY_DASHBOARD_ADDRESS as is; else an http(s) RAY_ADDRESS as is; else `host:port` RAY_ADDRESS
 * → `http://host:${RAY_DASHBOARD_PORT:-8265}`; else `http://127.0.0.1:${RAY_DASHBOARD_PORT:-8265}`.
 */
export function dashboardAddressFromEnv(env: NodeJS.ProcessEnv): {address: string; source: string} {
  const port = env.RAY_DASHBOARD_PORT || '8265'
  if (env.RAY_DASHBOARD_ADDRESS) return {address: env.RAY_DASHBOARD_ADDRESS, source: 'RAY_DASHBOARD_ADDRESS'}
  const rayAddress = env.RAY_ADDRESS || 'auto'
  if (/^https?:\/\//.test(rayAddress)) return {address: rayAddress, source: 'RAY_ADDRESS'}
  const match = /^([^:/]+):[0-9]+$/.exec(rayAddress)
  if (match) return {address: `http://${match[1]}:${port}`, source: `RAY_ADDRESS host + RAY_DASHBOARD_PORT (${port})`}
  return {address: `http://127.0.0.1:${port}`, source: env.RAY_ADDRESS ? `the default, since RAY_ADDRESS "${env.RAY_ADDRESS}" is not host:port` : 'the default: neither RAY_DASHBOARD_ADDRESS nor RAY_ADDRESS is set'}
}

/**
 * Request headers from RAY_JOB_HEADERS (a JSON object, as `ray job --headers` takes). Values are
 * secrets: callers may show the header names, never the values.
 */
export function rayJobHeadersFromEnv(env: NodeJS.ProcessEnv): Record<string, string> {
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
    headers[key] = String(value)
  }
  return headers
}

/** Resolve the dashboard host name (no traffic): undefined when it resolves, else the reason. */
export async function dashboardResolveProblem(address: string): Promise<string | undefined> {
  let host: string
  try {
    host = new URL(normalizeDashboardAddress(address)).hostname.replace(/^\[|\]$/g, '')
  } catch {
    return `"${address}" is not a URL`
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

function describeFetchError(error: unknown): string {
  const name = error instanceof Error ? error.name : undefined
  if (name === 'TimeoutError') return 'timed out'
  if (name === 'AbortError') return 'aborted'
  const cause = error instanceof Error ? error.cause : undefined
  const code = codeOf(cause) ?? codeOf(error)
  const message = cause instanceof Error ? cause.message : messageOf(error)
  // fetch's "connect ECONNREFUSED 127.0.0.1:8265" already names the code: say it once.
  return [code && !message.includes(code) ? code : undefined, message].filter(Boolean).join(': ') || 'request failed'
}

/** A Ray Jobs REST client bound to one dashboard address. */
export function rayJobsClient(dashboardAddress: string, options: RayJobsClientOptions = {}): RayJobsClient {
  const base = normalizeDashboardAddress(dashboardAddress)
  const shown = redactUrl(base)
  const headers = options.headers ?? {}
  const timeoutMs = options.timeoutMs ?? 30_000

  async function request(method: string, route: string, body?: unknown): Promise<{status: number; text: string}> {
    const signals = [AbortSignal.timeout(timeoutMs)]
    if (options.signal) signals.push(options.signal)
    let response: Response
    try {
      response = await fetch(`${base}${route}`, {
        method,
        headers: {...(body === undefined ? {} : {'content-type': 'application/json'}), ...headers},
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.any(signals),
      })
    } catch (error) {
      if (options.signal?.aborted) throw error
      throw new GymError(`Ray dashboard ${shown} did not answer ${method} ${route}: ${describeFetchError(error)}`, {
        code: 'E_RAY_UNREACHABLE',
        exit: ExitCode.precondition,
        hint: 'Check RAY_ADDRESS / RAY_DASHBOARD_ADDRESS (the Relax cluster dashboard, usually http://<head>:8265) and that this machine can reach it.',
        details: {dashboard: shown},
      })
    }
    return {status: response.status, text: await response.text()}
  }

  function parseJson<T>(text: string, route: string): T {
    try {
      return JSON.parse(text) as T
    } catch {
      throw new GymError(`Ray dashboard ${shown}${route} answered with something that is not JSON: ${text.slice(0, 200)}`, {
        code: 'E_RAY_PROTOCOL',
        details: {dashboard: shown},
      })
    }
  }

  function notFound(id: string, text: string): GymError {
    return new GymError(`Ray job ${id} does not exist on ${shown}`, {
      code: 'E_RAY_JOB_NOT_FOUND',
      hint: firstLines(text) || undefined,
      details: {dashboard: shown, submissionId: id},
    })
  }

  function httpError(what: string, status: number, text: string, id?: string): GymError {
    if (status === 401 || status === 403) {
      return new GymError(`Ray dashboard ${shown} refused ${what} (HTTP ${status})`, {
        code: 'E_RAY_AUTH',
        exit: ExitCode.precondition,
        hint: 'Set RAY_JOB_HEADERS to the JSON headers the cluster requires (e.g. an x-ray-authorization bearer token).',
        details: {dashboard: shown, status},
      })
    }
    return new GymError(`Ray dashboard ${shown} failed ${what} (HTTP ${status}): ${firstLines(text)}`, {
      code: 'E_RAY_HTTP',
      details: {dashboard: shown, status, ...(id ? {submissionId: id} : {})},
    })
  }

  const enc = encodeURIComponent

  return {
    async version() {
      const {status, text} = await request('GET', '/api/version')
      if (status === 404) {
        throw new GymError(`${shown} has no /api/version: not a Ray dashboard, or Ray older than 1.9`, {
          code: 'E_RAY_PROTOCOL',
          exit: ExitCode.precondition,
          hint: 'Point RAY_DASHBOARD_ADDRESS at the Relax cluster dashboard (http://<head>:8265).',
          details: {dashboard: shown},
        })
      }
      if (status !== 200) throw httpError('GET /api/version', status, text)
      return parseJson<Record<string, unknown>>(text, '/api/version')
    },

    async submit(req) {
      // Omit unset fields: older servers reject unknown non-null keys.
      const body: Record<string, unknown> = {entrypoint: req.entrypoint}
      if (req.submission_id !== undefined) body.submission_id = req.submission_id
      if (req.runtime_env !== undefined) body.runtime_env = req.runtime_env
      if (req.metadata !== undefined) body.metadata = req.metadata
      const {status, text} = await request('POST', '/api/jobs/', body)
      if (status === 200) {
        const parsed = parseJson<{submission_id?: string; job_id?: string}>(text, '/api/jobs/')
        const id = parsed.submission_id ?? parsed.job_id
        if (!id) throw new GymError(`Ray accepted the job but returned no submission_id: ${text.slice(0, 200)}`, {code: 'E_RAY_PROTOCOL'})
        return id
      }
      if ((status === 500 || status === 400) && text.includes('Please use a different submission_id')) {
        throw new GymError(`Ray refused submission id ${req.submission_id}: a job with this id already exists`, {
          code: 'E_RAY_DUPLICATE_SUBMISSION',
          hint: 'Ray never reuses a submission id, even for a finished job; submit with a new unique id.',
          details: {dashboard: shown, submissionId: req.submission_id ?? null, status},
        })
      }
      throw httpError('the submission', status, text, req.submission_id)
    },

    async status(id) {
      const route = `/api/jobs/${enc(id)}`
      const {status, text} = await request('GET', route)
      if (status === 404) throw notFound(id, text)
      if (status !== 200) throw httpError(`GET ${route}`, status, text, id)
      return parseJson<JobDetails>(text, route)
    },

    async logs(id) {
      const route = `/api/jobs/${enc(id)}/logs`
      const {status, text} = await request('GET', route)
      if (status === 404) throw notFound(id, text)
      if (status !== 200) throw httpError(`GET ${route}`, status, text, id)
      const parsed = parseJson<{logs?: unknown}>(text, route)
      return typeof parsed.logs === 'string' ? parsed.logs : ''
    },

    async stop(id) {
      const route = `/api/jobs/${enc(id)}/stop`
      const {status, text} = await request('POST', route)
      if (status === 404) throw notFound(id, text)
      if (status !== 200) throw httpError(`POST ${route}`, status, text, id)
      return parseJson<{stopped?: unknown}>(text, route).stopped === true
    },

    async list() {
      const {status, text} = await request('GET', '/api/jobs/')
      if (status !== 200) throw httpError('GET /api/jobs/', status, text)
      const parsed = parseJson<unknown>(text, '/api/jobs/')
      // Current Ray returns a JSON array; very old servers returned {id: details}.
      if (Array.isArray(parsed)) return parsed as JobDetails[]
      if (parsed && typeof parsed === 'object') return Object.values(parsed as Record<string, JobDetails>)
      return []
    },
  }
}

/** Wait, or reject with the signal's reason when it aborts first. */
async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  try {
    await delay(ms, undefined, {signal})
  } catch (error) {
    throw signal?.aborted ? signal.reason : error
  }
}

export interface FollowOptions {
  /** New driver-log text since the previous call (incremental over the full `/logs` text). */
  onLogs?: (chunk: string) => void
  /** Every status read. */
  onStatus?: (job: JobDetails) => void
  intervalMs?: number
  signal?: AbortSignal
  /** Give up after this long (ms); undefined = no limit. */
  timeoutMs?: number
  /** Log text already delivered (offset into the full log). */
  logOffset?: number
  /** Consecutive failed polls (dashboard unreachable, HTTP errors) tolerated before giving up (default 5). */
  maxConsecutiveErrors?: number
}

export interface FollowResult {
  job: JobDetails
  /** The whole driver log at the end. */
  logs: string
  timedOut: boolean
}

/**
 * Poll status and `/logs` until the job is terminal. `/logs` returns the whole driver log every time,
 * so only the new suffix is handed to onLogs. Logs are read once more after the terminal status so
 * the last lines are never lost.
 */
export async function followJob(client: RayJobsClient, id: string, options: FollowOptions = {}): Promise<FollowResult> {
  const interval = options.intervalMs ?? 2000
  const deadline = options.timeoutMs === undefined ? undefined : Date.now() + options.timeoutMs
  let offset = options.logOffset ?? 0
  let logs = ''
  const readLogs = async () => {
    logs = await client.logs(id)
    if (logs.length > offset) {
      options.onLogs?.(logs.slice(offset))
      offset = logs.length
    }
  }
  const tolerated = options.maxConsecutiveErrors ?? 5
  let failures = 0
  for (;;) {
    let job: JobDetails
    try {
      job = await client.status(id)
      await readLogs()
      failures = 0
    } catch (error) {
      // A missing job or an abort is final; a dashboard hiccup is retried a few times.
      if (options.signal?.aborted || codeOf(error) === 'E_RAY_JOB_NOT_FOUND' || ++failures > tolerated) throw error
      await sleep(interval, options.signal)
      continue
    }
    options.onStatus?.(job)
    if (isTerminal(job.status)) return {job, logs, timedOut: false}
    if (deadline !== undefined && Date.now() >= deadline) return {job, logs, timedOut: true}
    await sleep(interval, options.signal)
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
