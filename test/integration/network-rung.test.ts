/**
 * The network rung against real local services: the fixture Gateway (host run), the fake Ray Jobs
 * server (probe jobs run their per-node tasks locally, a node may live in a network namespace this
 * test creates), a labelled Gym container on the real Docker Engine (host networking; the probe
 * runs inside it through the exec API) and a stand-in Relax Agentic API on 127.0.0.1.
 * Only 127.0.0.1 is ever contacted.
 */
import {execa} from 'execa'
import {randomBytes} from 'node:crypto'
import fs from 'node:fs/promises'
import http from 'node:http'
import type {AddressInfo} from 'node:net'
import os from 'node:os'
import path from 'node:path'
import {afterAll, afterEach, beforeAll, describe, expect, it} from 'vitest'

import {networkRung} from '../../src/ladder/network/index.js'
import {allowlistCovers, noProxyCovers, parseStrictCidr} from '../../src/ladder/network/allowlist.js'
import {resolveRecipe} from '../../src/recipe/target.js'
import type {CheckResult, RungReport} from '../../src/ladder/types.js'
import {runRung} from '../../src/ladder/runner.js'
import {BASE_IMAGE, dockerOk, dockerUnavailableReason, removeByLabel, uniqueTestLabel} from '../helpers/docker.js'
import {type FakeRay, randomNodeId, startFakeRay} from '../helpers/ray-fixture.js'
import {generatedRecipe} from '../helpers/recipes.js'
import {CALENDAR_GRAPH, freePortBlock, type HostGym, makeRelaxCheckout, startHostGym, waitForReadyz} from '../helpers/relax-fixture.js'
import {Scratch} from '../../src/ladder/scratch-store.js'

const HOST = '127.0.0.1'
const dockerReason = await dockerUnavailableReason()

let tmp: string
let relaxRoot: string
let recipeId: string
let containerName: string
let gym: HostGym
let gatewayPort: number
let ray: FakeRay
let relax: http.Server
let relaxPort: number
let nothing: http.Server
let nothingPort: number
const label = uniqueTestLabel('network-rung')

/** A loopback port nobody listens on (bound, then closed). */
async function deadPort(): Promise<number> {
  const server = http.createServer()
  await new Promise<void>((resolve) => server.listen(0, HOST, resolve))
  const port = (server.address() as AddressInfo).port
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

async function listen(handler: http.RequestListener): Promise<{server: http.Server; port: number}> {
  const server = http.createServer(handler)
  await new Promise<void>((resolve) => server.listen(0, HOST, resolve))
  return {server, port: (server.address() as AddressInfo).port}
}

beforeAll(async () => {
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'gr-network-'))
  relaxRoot = path.join(tmp, 'relax')
  const checkout = await makeRelaxCheckout(relaxRoot)
  recipeId = `calnet-${randomBytes(3).toString('hex')}`
  await generatedRecipe('calendar', recipeId, relaxRoot)
  containerName = `nemo-gym-${recipeId}`
  const base = await freePortBlock(6, 23000)
  gatewayPort = base
  gym = await startHostGym(checkout, {
    layout: {host: HOST, bindHost: HOST, gateway: base, agent: base + 1, resource: base + 2, head: base + 3, rayPort: base + 4, rayDashboardPort: base + 5},
    graph: CALENDAR_GRAPH,
    registration: {environment: 'calendar', config: 'calendar-v1', agentName: 'calendar_simple_agent'},
  })
  await waitForReadyz(`http://${HOST}:${base}`)
  ray = await startFakeRay({nodes: [{node_id: randomNodeId(), node_ip: HOST, is_head: true}]})
  // Stand-in for Relax Serve: the agentic API answers (401 without a session key); anything else 404.
  ;({server: relax, port: relaxPort} = await listen((req, res) => {
    req.resume()
    res.statusCode = req.url?.startsWith('/agentic_api/v1/') ? 401 : 404
    res.end(JSON.stringify({detail: res.statusCode === 401 ? 'missing session key' : 'Not Found'}))
  }))
  // A server with no agentic route at all.
  ;({server: nothing, port: nothingPort} = await listen((req, res) => {
    req.resume()
    res.statusCode = 404
    res.end('{"detail":"Not Found"}')
  }))
}, 180_000)

afterAll(async () => {
  await gym?.stop()
  await ray?.stop()
  await new Promise((resolve) => relax?.close(resolve))
  await new Promise((resolve) => nothing?.close(resolve))
  if (!dockerReason) await removeByLabel(label)
  if (tmp) await fs.rm(tmp, {recursive: true, force: true})
})

afterEach(async () => {
  if (!dockerReason) await removeByLabel(label)
})

/** A running container that stands for the recipe's Gym service (owned label, host network, given env). */
async function gymContainer(env: Record<string, string>, owner = recipeId): Promise<void> {
  const args = ['run', '-d', '--network', 'host', '--name', containerName, '--label', `ai.relax.recipe=${owner}`, '--label', label]
  for (const [key, value] of Object.entries(env)) args.push('-e', `${key}=${value}`)
  await dockerOk([...args, BASE_IMAGE, 'sleep', 'infinity'])
}

function baseEnv(overrides: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    GYM_HOST: HOST,
    NEMO_GYM_GATEWAY_PORT: String(gatewayPort),
    RAY_DASHBOARD_ADDRESS: ray.url,
    RELAX_HOST: HOST,
    RELAX_PORT: String(relaxPort),
    GYMRECIPE_NETWORK_PROBE_TIMEOUT_S: '3',
    ...overrides,
  }
}

const goodContainerEnv = () => ({
  NEMO_GYM_CALLBACK_ALLOWED_NETWORKS: '127.0.0.0/8',
  NEMO_GYM_CALLBACK_ALLOWED_HOSTS: '',
  NO_PROXY: `127.0.0.1,localhost,${HOST}`,
  no_proxy: `127.0.0.1,localhost,${HOST}`,
  NEMO_GYM_GATEWAY_PORT: String(gatewayPort),
})

async function climbNetwork(env: NodeJS.ProcessEnv): Promise<RungReport> {
  const target = await resolveRecipe(relaxRoot, recipeId)
  return runRung(networkRung, {target, options: {env, smoke: false}, scratch: new Scratch()}, {render: false})
}

function byId(report: RungReport, id: string): CheckResult[] {
  return report.checks.filter((c) => c.id === id || c.id.startsWith(`${id}:`))
}

function nodeResults(report: RungReport): CheckResult[] {
  return byId(report, 'network.node-reaches-gateway')
}

describe.skipIf(Boolean(dockerReason))('network rung', () => {
  it('passes when every node reaches the Gateway and the container reaches /agentic_api', async () => {
    await gymContainer(goodContainerEnv())
    const report = await climbNetwork(baseEnv())
    expect(report.checks.filter((c) => c.status !== 'pass')).toEqual([])
    expect(report.status).toBe('pass')
    const nodes = nodeResults(report)
    expect(nodes).toHaveLength(1)
    expect(nodes[0].message).toMatch(/^reachable: HTTP 200/)
    expect(nodes[0].evidence?.protocol_version).toBe('relax-nemo-gym/v1')
    const relaxCheck = byId(report, 'network.container-reaches-relax')[0]
    expect(relaxCheck.message).toContain(`http://${HOST}:${relaxPort}/agentic_api/v1/responses answered HTTP 401`)
    // The probe went through the Ray Jobs API as a job of its own.
    const submitted = (await ray.requests()).filter((r) => r.method === 'POST' && r.path === '/api/jobs/')
    expect(submitted.at(-1)?.submission_id).toMatch(new RegExp(`^gymrecipe-network-probe-${recipeId}-`))
  })

  it('reports an unreachable Gateway (a loopback port nobody listens on) per node', async () => {
    await gymContainer(goodContainerEnv())
    const port = await deadPort()
    const report = await climbNetwork(baseEnv({NEMO_GYM_GATEWAY_PORT: String(port)}))
    expect(report.status).toBe('fail')
    const nodes = nodeResults(report)
    expect(nodes).toHaveLength(1)
    expect(nodes[0].status).toBe('fail')
    expect(nodes[0].message).toMatch(new RegExp(`^unreachable: http://127\\.0\\.0\\.1:${port}/readyz from node 127\\.0\\.0\\.1`))
    expect(String(nodes[0].evidence?.error)).toMatch(/refused/i)
  })

  it('reports a node that cannot reach the Gateway (its own network namespace) while the head node can', async () => {
    const netns = `grtest-${randomBytes(3).toString('hex')}`
    const created = await execa('ip', ['netns', 'add', netns], {reject: false})
    if (created.exitCode !== 0) {
      // CI as root (GYMRECIPE_REQUIRE_DOCKER=1, iproute2 installed) must run this case, never skip it.
      if (process.env.GYMRECIPE_REQUIRE_DOCKER === '1' && process.getuid?.() === 0) throw new Error(`ip netns add failed: ${String(created.stderr)}`)
      console.error(`skipping the netns case: ip netns add failed: ${String(created.stderr)}`)
      return
    }
    const isolated = await startFakeRay({
      nodes: [
        {node_id: randomNodeId(), node_ip: HOST, is_head: true},
        {node_id: randomNodeId(), node_ip: '127.0.0.1', netns},
      ],
    })
    try {
      await gymContainer(goodContainerEnv())
      const report = await climbNetwork(baseEnv({RAY_DASHBOARD_ADDRESS: isolated.url}))
      const nodes = nodeResults(report)
      expect(nodes.map((n) => n.status).sort()).toEqual(['fail', 'pass'])
      const failed = nodes.find((n) => n.status === 'fail')!
      expect(failed.message).toMatch(/^unreachable: /)
      expect(failed.evidence?.node_id).not.toBe(nodes.find((n) => n.status === 'pass')!.evidence?.node_id)
      expect(report.status).toBe('fail')
    } finally {
      await isolated.stop()
      await execa('ip', ['netns', 'delete', netns], {reject: false})
    }
  })

  it('fails when the container cannot reach Relax, and when Relax answers without the /agentic_api route', async () => {
    await gymContainer(goodContainerEnv())
    const unreachable = await climbNetwork(baseEnv({RELAX_PORT: String(await deadPort())}))
    const check = byId(unreachable, 'network.container-reaches-relax')[0]
    expect(check.status).toBe('fail')
    expect(check.message).toMatch(/^unreachable: http:\/\/127\.0\.0\.1:\d+\/agentic_api\/v1\/responses from inside nemo-gym-/)
    const inactive = await climbNetwork(baseEnv({RELAX_PORT: String(nothingPort)}))
    const route = byId(inactive, 'network.container-reaches-relax')[0]
    expect(route.status).toBe('fail')
    expect(route.message).toContain('the /agentic_api route is not active')
  })

  it('[workplace-assistant#10] [gsm8k#9] fails when the callback allowlist does not cover the callback host', async () => {
    await gymContainer({...goodContainerEnv(), NEMO_GYM_CALLBACK_ALLOWED_NETWORKS: '10.0.0.0/8'})
    const report = await climbNetwork(baseEnv())
    const check = byId(report, 'network.callback-allowlist')[0]
    expect(check.status).toBe('fail')
    expect(check.message).toContain('127.0.0.1 is neither in NEMO_GYM_CALLBACK_ALLOWED_HOSTS')
    expect(check.message).toContain('10.0.0.0/8')
    expect(report.status).toBe('fail')
  })

  it('[workplace-assistant#10] fails when NO_PROXY misses the Relax host', async () => {
    // Relax reached by name (localhost): the allowlist lists it, NO_PROXY does not.
    await gymContainer({...goodContainerEnv(), NEMO_GYM_CALLBACK_ALLOWED_HOSTS: 'localhost', NO_PROXY: '127.0.0.1', no_proxy: '127.0.0.1'})
    const report = await climbNetwork(baseEnv({RELAX_HOST: 'localhost'}))
    const check = byId(report, 'network.no-proxy')[0]
    expect(check.status).toBe('fail')
    expect(check.message).toBe('NO_PROXY lacks the Relax host localhost; no_proxy lacks the Relax host localhost')
    expect(byId(report, 'network.callback-allowlist')[0].status).toBe('pass')
  })

  it('fails when the callback base URL lacks /agentic_api', async () => {
    await gymContainer(goodContainerEnv())
    const report = await climbNetwork(baseEnv({RELAX_BASE_URL: `http://${HOST}:${relaxPort}`}))
    const check = byId(report, 'network.callback-base-url')[0]
    expect(check.status).toBe('fail')
    expect(check.message).toContain('does not end in /agentic_api')
    // …and that base really does not reach the active route.
    expect(byId(report, 'network.container-reaches-relax')[0].message).toContain('the /agentic_api route is not active')
  })

  it('refuses a container without this recipe\'s ownership label', async () => {
    await gymContainer(goodContainerEnv(), 'someone-else')
    const report = await climbNetwork(baseEnv())
    expect(byId(report, 'network.container-reaches-relax')[0].message).toContain('is not this recipe\'s (ai.relax.recipe=someone-else)')
  })
})

describe('allowlist and NO_PROXY rules', () => {
  it('matches strict CIDRs and exact names like the Gateway', () => {
    expect(allowlistCovers({NEMO_GYM_CALLBACK_ALLOWED_NETWORKS: '10.0.0.0/8'}, '10.1.2.3').covered).toBe(true)
    expect(allowlistCovers({NEMO_GYM_CALLBACK_ALLOWED_NETWORKS: '10.0.0.0/8'}, '11.1.2.3').covered).toBe(false)
    expect(allowlistCovers({NEMO_GYM_CALLBACK_ALLOWED_NETWORKS: '10.0.0.1/8'}, '10.0.0.1').covered).toBe(false)
    expect(allowlistCovers({NEMO_GYM_CALLBACK_ALLOWED_NETWORKS: '0.0.0.0/0'}, '10.0.0.1').covered).toBe(false)
    expect(allowlistCovers({NEMO_GYM_CALLBACK_ALLOWED_NETWORKS: 'fd00::/8'}, 'fd12::1').covered).toBe(true)
    expect(allowlistCovers({NEMO_GYM_CALLBACK_ALLOWED_HOSTS: 'relax.internal'}, 'Relax.Internal').covered).toBe(true)
    expect(allowlistCovers({NEMO_GYM_CALLBACK_ALLOWED_NETWORKS: '127.0.0.0/8'}, 'localhost').covered).toBe(false)
    expect(allowlistCovers({}, '10.0.0.1')).toMatchObject({covered: false, configured: false})
    expect('problem' in parseStrictCidr('10.0.0.0/33')).toBe(true)
    expect(noProxyCovers('127.0.0.1,.example.com', 'relax.example.com')).toBe(true)
    expect(noProxyCovers('127.0.0.1,example.com', 'relax.example.com')).toBe(true)
    expect(noProxyCovers('127.0.0.1', '10.0.0.1')).toBe(false)
    expect(noProxyCovers('*', '10.0.0.1')).toBe(true)
  })
})
