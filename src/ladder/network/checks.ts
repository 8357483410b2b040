/**
 * Network rung checks (traffic must flow both ways):
 * every Ray node reaches the Gateway; the Gym container reaches Relax's /agentic_api; the callback
 * allowlist admits the callback host; NO_PROXY lists the Gym and Relax hosts; the callback base URL
 * carries /agentic_api. An unreachable endpoint is reported as unreachable, never as "not checked".
 */
import {randomBytes} from 'node:crypto'

import {execInContainer} from '../../runtime/container.js'
import {followJob, isTerminal, rayJobsClientFromEnv, type RayJobsClient, redactUrl} from '../../runtime/ray-jobs.js'
import {callbackResource, callbackUpstream} from '../../contract/endpoints.js'
import type {Check, CheckContext, CheckOutcome, CheckResult} from '../types.js'
import {allowlistCovers, noProxyCovers} from './allowlist.js'
import {shellWord} from '../../shell-words.js'
import {scriptEnv} from '../scratch.js'
import {gatewayFor, gymContainer, relaxFor} from './context.js'
import {markedLines, MarkedLines, NODE_PROBE_DONE, NODE_PROBE_MARKER, NODE_PROBE_PY, pythonInline, RELAX_PROBE_MARKER, RELAX_PROBE_PY} from './probe-script.js'
import {hintOf, messageOf} from '../../errors.js'

const PROTOCOL = 'relax-nemo-gym/v1'

function seconds(env: Record<string, string | undefined>, key: string, fallback: number): number {
  const value = Number(env[key])
  return Number.isFinite(value) && value > 0 ? value : fallback
}

async function stopOwnProbe(client: RayJobsClient, id: string): Promise<string> {
  try {
    const job = await client.status(id)
    if (isTerminal(job.status)) return `probe job ${id} already ${job.status}`
    await client.stop(id)
    return `stopped probe job ${id}`
  } catch (error) {
    return `could not stop probe job ${id}: ${messageOf(error)}`
  }
}

function nodeLabel(result: Record<string, unknown>): string {
  const id = String(result.node_id ?? '')
  return `${result.node_ip ?? '?'} (${id.slice(0, 8) || 'unknown node'})`
}

/** One probe job through the Ray Jobs API; one result per Ray node. */
export const nodesReachGateway: Check = {
  id: 'network.nodes-reach-gateway',
  title: 'Every Ray node reaches the Gateway',
  async run(ctx: CheckContext): Promise<CheckOutcome | Array<Omit<CheckResult, 'rung'>>> {
    const env = await scriptEnv(ctx)
    const gateway = await gatewayFor(ctx)
    if ('problem' in gateway) return {status: 'fail', message: gateway.problem, hint: 'Set GYM_HOST (and NEMO_GYM_GATEWAY_PORT) in env.sh.'}
    let client: RayJobsClient
    let dashboard: {address: string; source: string} = {address: '(unresolved)', source: 'none'}
    try {
      const resolved = rayJobsClientFromEnv(env, {signal: ctx.options.signal, timeoutMs: 15_000})
      client = resolved.client
      dashboard = resolved.endpoint
      await client.version()
    } catch (error) {
      return {
        status: 'fail',
        message: `cannot submit the probe job: ${messageOf(error)}`,
        hint: hintOf(error) ?? 'Set RAY_ADDRESS or RAY_DASHBOARD_ADDRESS to the Relax cluster (dashboard http://<head>:8265).',
        evidence: {dashboard: redactUrl(dashboard.address), dashboardSource: dashboard.source},
      }
    }
    const timeoutS = seconds(env, 'GYMRECIPE_NETWORK_PROBE_TIMEOUT_S', 5)
    const jobTimeoutMs = seconds(env, 'GYMRECIPE_NETWORK_JOB_TIMEOUT_S', 180) * 1000
    const python = env.GYMRECIPE_PROBE_PYTHON || 'python3'
    const recipe = ctx.target.id
    const submissionId = `gymrecipe-network-probe-${recipe}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`
    const entrypoint = `${pythonInline(NODE_PROBE_PY, python)} ${shellWord(gateway.url)} ${timeoutS}`
    try {
      await client.submit({entrypoint, submission_id: submissionId, metadata: {'gymrecipe.recipe': recipe, 'gymrecipe.purpose': 'network-probe'}})
    } catch (error) {
      return {status: 'fail', message: `the probe job was refused: ${messageOf(error)}`, hint: hintOf(error), evidence: {dashboard: redactUrl(dashboard.address)}}
    }
    let result
    // Only the probe's own result lines are kept from its log, whatever else the driver prints.
    const marked = new MarkedLines([NODE_PROBE_MARKER, NODE_PROBE_DONE])
    try {
      result = await followJob(client, submissionId, {intervalMs: 500, timeoutMs: jobTimeoutMs, signal: ctx.options.signal, onLogs: (text) => marked.push(text)})
    } catch (error) {
      const stopped = await stopOwnProbe(rayJobsClientFromEnv(env, {address: dashboard.address}).client, submissionId)
      return {status: 'fail', message: `following the probe job failed: ${messageOf(error)}; ${stopped}`, evidence: {submissionId}}
    }
    const evidence = {submissionId, dashboard: redactUrl(dashboard.address), gateway: gateway.url, jobStatus: result.job.status}
    if (result.timedOut) {
      const stopped = await stopOwnProbe(client, submissionId)
      return {status: 'fail', message: `the probe job did not finish within ${jobTimeoutMs / 1000}s (${result.job.status}); ${stopped}`, evidence}
    }
    const nodes = markedLines(marked.text(), NODE_PROBE_MARKER)
    const done = markedLines(marked.text(), NODE_PROBE_DONE)[0]
    if (result.job.status !== 'SUCCEEDED' || !done) {
      return {
        status: 'fail',
        message: `the probe job ended ${result.job.status} without reporting every node: ${result.job.message ?? ''}`.trim(),
        hint: 'The probe driver needs python3 with `ray` on the head node (set GYMRECIPE_PROBE_PYTHON to another interpreter).',
        evidence: {...evidence, logTail: result.tail.last(20)},
      }
    }
    const expected = Number(done.nodes)
    if (nodes.length === 0) return {status: 'fail', message: 'the Ray cluster reported no alive node', evidence}
    const results: Array<Omit<CheckResult, 'rung'>> = nodes.map((node) => {
      const label = nodeLabel(node)
      const base = {id: `network.node-reaches-gateway:${String(node.node_ip ?? node.node_id)}`, title: `Ray node ${label} reaches the Gateway`}
      if (node.reachable !== true) {
        return {
          ...base,
          status: 'fail' as const,
          message: `unreachable: ${gateway.url}/readyz from node ${label}: ${String(node.error ?? 'no answer')}`,
          hint: 'GYM_HOST must be an address bound on the Gym host and routable from every Relax node; check firewalls and that the Gateway port is open.',
          evidence: {...node, gateway: gateway.url, submissionId},
        }
      }
      if (node.protocol_version !== PROTOCOL) {
        return {
          ...base,
          status: 'fail' as const,
          message: `${gateway.url}/readyz answered HTTP ${String(node.http_status)} from node ${label} but it is not a Relax Gateway (protocol_version ${JSON.stringify(node.protocol_version ?? null)})`,
          hint: 'Another service holds this port, or NEMO_GYM_GATEWAY_PORT differs from the running service port.',
          evidence: {...node, gateway: gateway.url, submissionId},
        }
      }
      return {
        ...base,
        status: 'pass' as const,
        message: `reachable: HTTP ${String(node.http_status)} from ${label} in ${String(node.elapsed_s)}s (ready=${String(node.ready)}, active_trials=${String(node.active_trials)})`,
        evidence: {...node, gateway: gateway.url, submissionId},
      }
    })
    if (Number.isFinite(expected) && expected > nodes.length) {
      results.push({
        id: 'network.nodes-reach-gateway',
        title: 'Every Ray node reaches the Gateway',
        status: 'fail',
        message: `${expected} alive nodes but only ${nodes.length} reported`,
        evidence,
      })
    }
    return results
  },
}

/** The Gym container reaches the active Relax /agentic_api route (Docker exec API). */
export const containerReachesRelax: Check = {
  id: 'network.container-reaches-relax',
  title: 'The Gym container reaches Relax /agentic_api',
  async run(ctx: CheckContext): Promise<CheckOutcome> {
    const relax = await relaxFor(ctx)
    if ('problem' in relax) return {status: 'fail', message: relax.problem, hint: 'Set RELAX_HOST in env.sh (the Relax Serve IP the Gym host can reach), or RELAX_BASE_URL.'}
    const lookup = await gymContainer(ctx)
    if (!lookup.ok) return {status: lookup.status, message: lookup.message, hint: lookup.hint}
    const upstream = callbackUpstream(relax.baseUrl, callbackResource(ctx.target.contract!))
    const env = await scriptEnv(ctx)
    const timeoutS = seconds(env, 'GYMRECIPE_NETWORK_PROBE_TIMEOUT_S', 5)
    const script = 'for p in /opt/nemo-gym/.venv/bin/python python3; do if command -v "$p" >/dev/null 2>&1; then exec "$p" -c "$1" "$2" "$3"; fi; done; echo "no python in the container" >&2; exit 127'
    const exec = await execInContainer(lookup.docker, lookup.container.id, ['sh', '-c', script, 'gymrecipe-probe', RELAX_PROBE_PY, upstream, String(timeoutS)], {
      timeoutMs: (timeoutS + 30) * 1000,
    })
    const result = markedLines(exec.stdout, RELAX_PROBE_MARKER)[0]
    const evidence = {container: lookup.container.name, upstream, baseUrlSource: relax.source, exitCode: exec.exitCode}
    if (!result) {
      return {status: 'fail', message: `the probe did not run inside ${lookup.container.name}: ${(exec.stderr || exec.stdout).trim().split('\n').at(-1) ?? `exit ${exec.exitCode}`}`, evidence}
    }
    if (result.reachable !== true) {
      return {
        status: 'fail',
        message: `unreachable: ${upstream} from inside ${lookup.container.name}: ${String(result.error)}`,
        hint: 'The Gym host must reach the Relax Agentic API (port 8000 by default): check RELAX_HOST, routes and firewalls.',
        evidence: {...evidence, ...result},
      }
    }
    if (result.http_status === 404) {
      return {
        status: 'fail',
        message: `${upstream} answered 404 from inside ${lookup.container.name}: Relax is reachable but the /agentic_api route is not active`,
        hint: 'Start Relax Serve with the Agentic API, and keep /agentic_api in the callback base URL.',
        evidence: {...evidence, ...result},
      }
    }
    return {status: 'pass', message: `reachable: ${upstream} answered HTTP ${String(result.http_status)} inside ${lookup.container.name}`, evidence: {...evidence, ...result}}
  },
}

/** The callback allowlist the running service uses admits the callback host. */
export const callbackAllowlist: Check = {
  id: 'network.callback-allowlist',
  title: 'The callback allowlist covers the Relax callback host',
  async run(ctx: CheckContext): Promise<CheckOutcome> {
    const relax = await relaxFor(ctx)
    if ('problem' in relax) return {status: 'fail', message: relax.problem, hint: 'Set RELAX_HOST in env.sh.'}
    const lookup = await gymContainer(ctx)
    if (!lookup.ok) return {status: lookup.status, message: lookup.message, hint: lookup.hint}
    const env = lookup.container.env
    const verdict = allowlistCovers(env, relax.host)
    const evidence = {
      container: lookup.container.name,
      callbackHost: relax.host,
      NEMO_GYM_CALLBACK_ALLOWED_HOSTS: env.NEMO_GYM_CALLBACK_ALLOWED_HOSTS ?? null,
      NEMO_GYM_CALLBACK_ALLOWED_NETWORKS: env.NEMO_GYM_CALLBACK_ALLOWED_NETWORKS ?? null,
    }
    if (!verdict.covered) {
      return {
        status: 'fail',
        message: [verdict.reason, ...verdict.problems].join('; '),
        hint: `Every trial would get 400 "model_endpoint.base_url host is not in the callback allowlist". Add ${relax.host} to NEMO_GYM_CALLBACK_ALLOWED_HOSTS, or a strict CIDR containing it to NEMO_GYM_CALLBACK_ALLOWED_NETWORKS, in env.sh; then restart the service.`,
        evidence,
      }
    }
    return {status: 'pass', message: verdict.reason, evidence}
  },
}

/** NO_PROXY (and no_proxy) inside the container list the Gym and Relax hosts. */
export const noProxyHosts: Check = {
  id: 'network.no-proxy',
  title: 'NO_PROXY lists the Gym and Relax hosts',
  async run(ctx: CheckContext): Promise<CheckOutcome> {
    const env = await scriptEnv(ctx)
    const relax = await relaxFor(ctx)
    if ('problem' in relax) return {status: 'fail', message: relax.problem, hint: 'Set RELAX_HOST in env.sh.'}
    const gymHost = env.GYM_HOST
    if (!gymHost) return {status: 'fail', message: 'GYM_HOST is not set', hint: 'Set GYM_HOST in env.sh.'}
    const lookup = await gymContainer(ctx)
    if (!lookup.ok) return {status: lookup.status, message: lookup.message, hint: lookup.hint}
    const cenv = lookup.container.env
    const variables = (['NO_PROXY', 'no_proxy'] as const).filter((key) => cenv[key] !== undefined)
    const evidence = {container: lookup.container.name, NO_PROXY: cenv.NO_PROXY ?? null, no_proxy: cenv.no_proxy ?? null, gymHost, relaxHost: relax.host}
    if (variables.length === 0) {
      return {status: 'fail', message: `neither NO_PROXY nor no_proxy is set in ${lookup.container.name}`, hint: 'The start script sets NO_PROXY=127.0.0.1,localhost,${GYM_HOST},${RELAX_HOST}; restart the service with RELAX_HOST set.', evidence}
    }
    const missing: string[] = []
    for (const key of variables) {
      for (const [role, host] of [['Gym', gymHost], ['Relax', relax.host]] as const) {
        if (!noProxyCovers(cenv[key]!, host)) missing.push(`${key} lacks the ${role} host ${host}`)
      }
    }
    if (missing.length > 0) {
      return {
        status: 'fail',
        message: missing.join('; '),
        hint: 'Set RELAX_HOST (and GYM_HOST) in env.sh and restart the service: the start script puts both into NO_PROXY so no proxy sits between Gym and Relax.',
        evidence,
      }
    }
    return {status: 'pass', message: `${variables.join(' and ')} list ${gymHost} and ${relax.host}`, evidence}
  },
}

/** The callback base URL carries /agentic_api (Relax bases do). */
export const callbackBaseUrl: Check = {
  id: 'network.callback-base-url',
  title: 'The callback base URL includes /agentic_api',
  async run(ctx: CheckContext): Promise<CheckOutcome> {
    const relax = await relaxFor(ctx)
    if ('problem' in relax) return {status: 'fail', message: relax.problem, hint: 'Set RELAX_HOST in env.sh, or RELAX_BASE_URL.'}
    const path = new URL(relax.baseUrl).pathname.replace(/\/+$/, '')
    const evidence = {baseUrl: relax.baseUrl, source: relax.source, upstream: callbackUpstream(relax.baseUrl, callbackResource(ctx.target.contract!))}
    if (!/(^|\/)agentic_api(\/v1)?$/.test(path)) {
      return {
        status: 'fail',
        message: `${relax.baseUrl} (${relax.source}) does not end in /agentic_api: callbacks would reach ${evidence.upstream} and get 404/410`,
        hint: 'Use http://<RELAX_HOST>:8000/agentic_api as the callback base URL.',
        evidence,
      }
    }
    return {status: 'pass', message: `${relax.baseUrl} → ${evidence.upstream}`, evidence}
  },
}
