import type {RungDefinition} from '../types.js'
import {callbackAllowlist, callbackBaseUrl, containerReachesRelax, nodesReachGateway, noProxyHosts} from './checks.js'

/**
 * The network rung: traffic flows both ways. Ray nodes → Gateway (a probe job through the Ray Jobs
 * API, one result per node) and Gym container → Relax /agentic_api (Docker exec), plus the
 * configuration that decides whether callbacks get through (allowlist, NO_PROXY, base URL).
 * Relax endpoints come from RELAX_BASE_URL, or RELAX_HOST (+ RELAX_PORT, default 8000), in the
 * environment or env.sh.
 */
export const networkRung: RungDefinition = {
  rung: 'network',
  summary: "Relax reaches the Gateway and the Gym container reaches Relax's callback, both ways",
  inputs: ['files', 'imageId', 'serviceEpoch'],
  next: (recipe, relaxRoot) => `gymrecipe verify ${recipe} --level trial --relax-root ${relaxRoot}`,
  checks: () => [callbackBaseUrl, callbackAllowlist, noProxyHosts, nodesReachGateway, containerReachesRelax],
}
