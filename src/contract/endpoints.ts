/**
 * Where a recipe's moving parts are, derived exactly as the generated scripts derive them:
 * the Gateway URL the training script passes to the job, the Relax callback base URL, and the
 * dashboard address. Pure functions of the contract and the environment (env.sh applied).
 */
import net from 'node:net'

import type {RecipeContract} from './types.js'

export interface GatewayEndpoint {
  host: string
  port: number
  url: string
  /** Where the port came from: NEMO_GYM_GATEWAY_PORT or the contract default. */
  portSource: string
}

/**
 * The Gateway URL of the training script: `http://${GYM_HOST}:${NEMO_GYM_GATEWAY_PORT:-<contract port>}`.
 * Returns a reason when it cannot be formed.
 */
export function trainingGateway(contract: Pick<RecipeContract, 'service'>, env: Record<string, string | undefined>): GatewayEndpoint | {problem: string} {
  const host = env.GYM_HOST ?? ''
  if (!host) return {problem: 'GYM_HOST is not set (env.sh or the environment): the training script cannot form the Gateway URL'}
  if (/[/:]/.test(host) && !net.isIPv6(host)) return {problem: `GYM_HOST must be a bare host (no scheme, port or path), got "${host}"`}
  const raw = env.NEMO_GYM_GATEWAY_PORT
  const port = raw ? Number(raw) : contract.service.gateway_port
  if (!Number.isInteger(port) || port < 1 || port > 65535) return {problem: `NEMO_GYM_GATEWAY_PORT is not a port: "${raw}"`}
  const hostPart = net.isIPv6(host) ? `[${host}]` : host
  return {host, port, url: `http://${hostPart}:${port}`, portSource: raw ? 'NEMO_GYM_GATEWAY_PORT' : 'recipe.yaml service.gateway_port'}
}

export const DEFAULT_RELAX_PORT = 8000

export interface RelaxEndpoint {
  /** The callback base URL Relax hands the Gateway (model_endpoint.base_url). */
  baseUrl: string
  host: string
  source: string
}

/**
 * The Relax Agentic API base URL: RELAX_BASE_URL when set, else
 * `http://${RELAX_HOST}:${RELAX_PORT:-8000}/agentic_api`.
 */
export function relaxEndpoint(env: Record<string, string | undefined>): RelaxEndpoint | {problem: string} {
  if (env.RELAX_BASE_URL) {
    let url: URL
    try {
      url = new URL(env.RELAX_BASE_URL)
    } catch {
      return {problem: `RELAX_BASE_URL is not a URL: "${env.RELAX_BASE_URL}"`}
    }
    return {baseUrl: env.RELAX_BASE_URL.replace(/\/+$/, ''), host: url.hostname.replace(/^\[|\]$/g, ''), source: 'RELAX_BASE_URL'}
  }
  const host = env.RELAX_HOST ?? ''
  if (!host) return {problem: 'RELAX_HOST is not set (env.sh or the environment), nor RELAX_BASE_URL: the Relax callback host is unknown'}
  const port = env.RELAX_PORT || String(DEFAULT_RELAX_PORT)
  const hostPart = net.isIPv6(host) ? `[${host}]` : host
  return {baseUrl: `http://${hostPart}:${port}/agentic_api`, host, source: `RELAX_HOST + port ${port}`}
}

/** The upstream URL the Gateway calls for a callback resource. */
export function callbackUpstream(baseUrl: string, resource: 'responses' | 'chat/completions' | 'messages'): string {
  const base = baseUrl.replace(/\/+$/, '')
  return base.endsWith('/v1') ? `${base}/${resource}` : `${base}/v1/${resource}`
}

export function callbackResource(contract: Pick<RecipeContract, 'gateway'>): 'responses' | 'chat/completions' | 'messages' {
  const protocol = contract.gateway.callback_protocol
  return protocol === 'chat_completions' ? 'chat/completions' : protocol
}

/** Submission ids of gymrecipe runs: the script's prefix, a UTC stamp and 6 random hex. */
export function submissionIdFor(contract: Pick<RecipeContract, 'id'>, now: Date, random: string): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, '').replace('T', '-')
  return `relax-nemo-gym-${contract.id}-${stamp}-${random}`
}

/** The script's log name prefix (`log/<name>-<time>.log`). */
export function trainingLogName(contract: Pick<RecipeContract, 'id' | 'training'>): string {
  return `${contract.training.model.slug}-${contract.training.gpus}xgpu-nemo-gym-${contract.id}`
}
