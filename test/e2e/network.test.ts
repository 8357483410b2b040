/**
 * `gymrecipe verify <recipe> --level network` as a user runs it: the recipe's service started by
 * `gymrecipe start` (fixture Gym image on the real Docker Engine, host networking on 127.0.0.1),
 * the Ray emulators for the per-node probe job, and a stand-in Relax Agentic API on 127.0.0.1.
 * static → data → service must pass first; the network rung then proves both directions.
 */
import http from 'node:http'
import type {AddressInfo} from 'node:net'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {runCli} from '../helpers/cli.js'
import {BASE_IMAGE, dockerUnavailableReason, ensureBaseImage} from '../helpers/docker.js'
import {type FakeRay, randomNodeId, startFakeRay} from '../helpers/ray-fixture.js'
import {freePortBlock} from '../helpers/relax-fixture.js'
import {type StartFixture, startFixture} from '../helpers/start-env.js'

const HOST = '127.0.0.1'
const unavailable = await dockerUnavailableReason()
if (unavailable) console.error(`\n!! SKIPPING network e2e tests: ${unavailable}\n`)

describe.skipIf(Boolean(unavailable))('verify --level network (after gymrecipe start)', () => {
  let fx: StartFixture
  let ray: FakeRay
  let relax: http.Server
  let relaxPort: number
  let env: Record<string, string | undefined>

  beforeAll(async () => {
    await ensureBaseImage()
    fx = await startFixture({purpose: 'netverify', portBase: await freePortBlock(100, 26000, 3000)})
    ray = await startFakeRay({nodes: [{node_id: randomNodeId(), node_ip: HOST, is_head: true}]})
    relax = http.createServer((req, res) => {
      req.resume()
      res.statusCode = req.url?.startsWith('/agentic_api/v1/') ? 401 : 404
      res.end('{}')
    })
    await new Promise<void>((resolve) => relax.listen(0, HOST, resolve))
    relaxPort = (relax.address() as AddressInfo).port
    env = {
      ...fx.env,
      ...ray.env(),
      RELAX_HOST: HOST,
      RELAX_PORT: String(relaxPort),
      RAY_DASHBOARD_ADDRESS: ray.url,
      GYMRECIPE_PROBE_IMAGE: BASE_IMAGE,
      GYMRECIPE_NETWORK_PROBE_TIMEOUT_S: '3',
    }
    const started = await runCli(['start', fx.id, '--relax-root', fx.relaxRoot], {env, timeout: 600_000})
    if (started.exitCode !== 0) throw new Error(`gymrecipe start failed (${started.exitCode}):\n${started.stdout}\n${started.stderr}`)
  }, 900_000)

  afterAll(async () => {
    await ray?.stop()
    await new Promise((resolve) => relax?.close(resolve))
    await fx?.cleanup()
  })

  it('climbs static → data → service → network, with one result per Ray node', async () => {
    const r = await runCli(['verify', fx.id, '--level', 'network', '--relax-root', fx.relaxRoot, '--json'], {env, timeout: 600_000})
    const network = r.json?.rungs?.find((x: any) => x.rung === 'network')
    expect(r.exitCode, JSON.stringify(r.json?.rungs?.map((x: any) => [x.rung, x.status, x.checks.filter((c: any) => c.status !== 'pass')]), null, 1)).toBe(0)
    expect(r.json.rungs.map((x: any) => x.status)).toEqual(['pass', 'pass', 'pass', 'pass'])
    const ids = network.checks.map((c: any) => c.id)
    expect(ids).toEqual(expect.arrayContaining(['network.callback-base-url', 'network.callback-allowlist', 'network.no-proxy', `network.node-reaches-gateway:${HOST}`, 'network.container-reaches-relax']))
    const relaxCheck = network.checks.find((c: any) => c.id === 'network.container-reaches-relax')
    expect(relaxCheck.message).toBe(`reachable: http://${HOST}:${relaxPort}/agentic_api/v1/responses answered HTTP 401 inside ${fx.container}`)
  }, 600_000)

  it('a Relax host the running container\'s allowlist does not cover stops the climb at network', async () => {
    // The service was started with NEMO_GYM_CALLBACK_ALLOWED_NETWORKS=127.0.0.0/8: a name is never matched by a CIDR.
    const r = await runCli(['verify', fx.id, '--level', 'network', '--relax-root', fx.relaxRoot, '--json'], {env: {...env, RELAX_HOST: 'localhost'}, timeout: 600_000})
    expect(r.exitCode).toBe(4)
    expect(r.json.stopped_at).toBe('network')
    const allowlist = r.json.rungs.find((x: any) => x.rung === 'network').checks.find((c: any) => c.id === 'network.callback-allowlist')
    expect(allowlist.status).toBe('fail')
    expect(allowlist.message).toContain('localhost is a name')
    const human = await runCli(['verify', fx.id, '--level', 'network', '--relax-root', fx.relaxRoot], {env: {...env, RELAX_HOST: 'localhost'}, timeout: 600_000})
    expect(human.stdout).toContain('stopped at the network rung')
  }, 600_000)
})
