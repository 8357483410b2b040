/**
 * What the trial and training rungs need to know about the running service: the Gateway URL
 * the training script targets, the callback host, and allowlist facts for hints. (The recipe
 * environment is shared by every rung: see ../scratch.ts.)
 */
import net from 'node:net'

import {servicePorts, type RecipeContract} from '../../contract/types.js'

export interface ServiceAddress {
  gymHost: string
  gatewayPort: number
  gatewayUrl: string
  agentUrl: string
  resourceUrl: string
}

/** Gateway URL as the training script builds it: http://${GYM_HOST}:${NEMO_GYM_GATEWAY_PORT}. */
export function serviceAddress(contract: RecipeContract, env: Record<string, string | undefined>): ServiceAddress | {error: string} {
  const gymHost = (env.GYM_HOST ?? '').trim()
  if (!gymHost) return {error: 'GYM_HOST is empty: set it in env.sh (the bare IP of the Gym host)'}
  const rawPort = (env.NEMO_GYM_GATEWAY_PORT ?? '').trim()
  const gatewayPort = rawPort ? Number(rawPort) : servicePorts(contract).gateway
  if (!Number.isInteger(gatewayPort) || gatewayPort < 1 || gatewayPort > 65532) return {error: `NEMO_GYM_GATEWAY_PORT is not a port: ${rawPort}`}
  const host = gymHost.includes(':') ? `[${gymHost}]` : gymHost
  return {
    gymHost,
    gatewayPort,
    gatewayUrl: `http://${host}:${gatewayPort}`,
    agentUrl: `http://${host}:${gatewayPort + 1}`,
    resourceUrl: `http://${host}:${gatewayPort + 2}`,
  }
}

/**
 * Whether env.sh's callback allowlist covers a host (used for hints only: the running
 * Gateway's own allowlist is what decides, and a 400 at creation is the proof).
 */
export function allowlistCovers(env: Record<string, string | undefined>, host: string): {configured: string; covered: boolean | null} {
  const networks = (env.NEMO_GYM_CALLBACK_ALLOWED_NETWORKS ?? '').split(',').map((s) => s.trim()).filter(Boolean)
  const hosts = (env.NEMO_GYM_CALLBACK_ALLOWED_HOSTS ?? '').split(',').map((s) => s.trim().toLowerCase()).filter(Boolean)
  const configured = [
    networks.length > 0 ? `NEMO_GYM_CALLBACK_ALLOWED_NETWORKS=${networks.join(',')}` : '',
    hosts.length > 0 ? `NEMO_GYM_CALLBACK_ALLOWED_HOSTS=${hosts.join(',')}` : '',
  ].filter(Boolean).join(' ') || 'no callback allowlist in env.sh'
  if (hosts.includes(host.toLowerCase())) return {configured, covered: true}
  const family = net.isIP(host)
  if (family === 0) return {configured, covered: hosts.length > 0 || networks.length > 0 ? false : null}
  const list = new net.BlockList()
  let parsed = 0
  for (const cidr of networks) {
    const [address, prefix] = cidr.split('/')
    const type = net.isIP(address) === 6 ? 'ipv6' : 'ipv4'
    try {
      list.addSubnet(address, Number(prefix ?? (type === 'ipv6' ? 128 : 32)), type)
      parsed++
    } catch {
      // not a CIDR: the start script refuses it anyway
    }
  }
  if (parsed === 0 && hosts.length === 0) return {configured, covered: null}
  return {configured, covered: list.check(host, family === 6 ? 'ipv6' : 'ipv4')}
}
