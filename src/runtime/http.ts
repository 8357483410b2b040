/**
 * Small HTTP client for the Gym service (Gateway /readyz, resources server routes). Node's
 * fetch never reads HTTP(S)_PROXY, so the Gym host is always reached directly, as NO_PROXY
 * requires for the scripts.
 */
import {causeOf, messageOf} from '../errors.js'

export interface HttpAnswer {
  status: number
  /** Parsed JSON body, or undefined when the body is not JSON. */
  json: unknown
  text: string
}

export async function httpRequest(
  method: 'GET' | 'POST',
  url: string,
  options: {body?: string; timeoutMs?: number; headers?: Record<string, string>} = {},
): Promise<HttpAnswer> {
  const response = await fetch(url, {
    method,
    body: options.body,
    headers: {...(options.body === undefined ? {} : {'content-type': 'application/json'}), ...options.headers},
    signal: AbortSignal.timeout(options.timeoutMs ?? 5000),
  })
  const text = await response.text()
  let json: unknown
  try {
    json = text ? JSON.parse(text) : undefined
  } catch {
    json = undefined
  }
  return {status: response.status, json, text}
}

/** The fields of a JSON object answer (`{}` for anything else), each to be checked before use. */
export function objectFields(json: unknown): Record<string, unknown> {
  return json && typeof json === 'object' && !Array.isArray(json) ? (json as Record<string, unknown>) : {}
}

/** One GET /readyz; transport errors become `{error}` instead of throwing. */
export async function readyz(gatewayUrl: string, timeoutMs = 2000): Promise<{answer?: HttpAnswer; error?: string}> {
  try {
    return {answer: await httpRequest('GET', `${gatewayUrl.replace(/\/$/, '')}/readyz`, {timeoutMs})}
  } catch (error) {
    const cause = causeOf(error) ?? messageOf(error)
    return {error: String(cause ?? error)}
  }
}
