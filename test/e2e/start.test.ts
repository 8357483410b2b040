/**
 * `gymrecipe start`, `verify --level service` and `logs` on the real Docker Engine with the
 * fixture Gym image: preconditions (Docker unreachable, foreign containers, a busy port, dry
 * run), then the happy path, the logs command, and a stale container under a reused tag.
 * Everything is created under a unique recipe id and removed by its ai.relax.recipe label.
 */
import fs from 'node:fs/promises'
import net from 'node:net'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {runCli, snapshotRoot} from '../helpers/cli.js'
import {docker, dockerOk, dockerUnavailableReason, ensureBaseImage, inspectContainer, removeByLabel, uniqueTestLabel} from '../helpers/docker.js'
import {editFile} from '../helpers/recipes.js'
import {type StartFixture, spawnCli, startFixture} from '../helpers/start-env.js'

const unavailable = await dockerUnavailableReason()
if (unavailable) console.error(`\n!! SKIPPING start e2e tests: ${unavailable}\n`)

describe('gymrecipe start: preconditions (no image is built)', () => {
  let fx: StartFixture
  const foreignLabel = uniqueTestLabel('start-foreign')
  beforeAll(async () => {
    fx = await startFixture({purpose: 'startpre', portBase: 24150})
  })
  afterAll(async () => {
    if (!unavailable) await removeByLabel(foreignLabel)
    await fx?.cleanup()
  })

  it('Docker daemon unreachable: exit 3 with a hint, no stack trace', async () => {
    const r = await runCli(['start', fx.id, '--relax-root', fx.relaxRoot], {env: {...fx.env, DOCKER_HOST: `unix://${fx.tmp}/no-docker.sock`}})
    expect(r.exitCode).toBe(3)
    expect(r.stderr).toContain('Docker daemon is not reachable')
    expect(r.stderr).toContain('Try this: Start the Docker daemon')
    expect(r.stderr).not.toMatch(/\n\s+at .+\.js:\d+/)
    const j = await runCli(['start', fx.id, '--relax-root', fx.relaxRoot, '--json'], {env: {...fx.env, DOCKER_HOST: `unix://${fx.tmp}/no-docker.sock`}})
    expect(j.exitCode).toBe(3)
    expect(j.json.error.code).toBe('E_DOCKER_UNREACHABLE')
    expect(j.json.error.hint).toContain('gymrecipe doctor')
  })

  it('--dry-run shows the script, image, container and action, and creates nothing', async () => {
    const r = await runCli(['start', fx.id, '--relax-root', fx.relaxRoot, '--dry-run'], {env: fx.env})
    expect(r.exitCode, r.stderr).toBe(0)
    expect(r.stdout).toContain(`NEMO_GYM_START_NO_WAIT=1 bash ${fx.dir}/start_${fx.id.replaceAll('-', '_')}_gym.sh`)
    expect(r.stdout).toContain(`image ${fx.image}, container ${fx.container} (now: absent)`)
    expect(r.stdout).toContain(`${fx.gatewayPort + 2} resource`)
    if (!unavailable) {
      expect(await inspectContainer(fx.container)).toBeUndefined()
      expect((await docker(['image', 'inspect', fx.image])).exitCode).not.toBe(0)
    }
  })

  it.skipIf(unavailable !== undefined).each([
    ['without the ownership label', [] as string[], '<unset>'],
    ['labelled for another recipe', ['--label', 'ai.relax.recipe=someone-elses-recipe'], 'someone-elses-recipe'],
  ])('a same-named container %s: exit 3, and it keeps running untouched', async (_what, labels, owner) => {
    await ensureBaseImage()
    const id = (await dockerOk(['run', '-d', '--name', fx.container, '--network', 'none', '--label', foreignLabel, ...labels, 'gymrecipe-test-base:bookworm', 'sleep', 'infinity'])).trim()
    try {
      // The dry run already knows: it exits 3 as the real run does.
      const dry = await runCli(['start', fx.id, '--relax-root', fx.relaxRoot, '--dry-run', '--json'], {env: fx.env})
      expect(dry.exitCode).toBe(3)
      expect(dry.json.plan).toMatchObject({would_exit: 3, action: expect.stringMatching(/^refuse: /)})
      const r = await runCli(['start', fx.id, '--relax-root', fx.relaxRoot], {env: fx.env})
      expect(r.exitCode, r.stdout + r.stderr).toBe(3)
      expect(r.stderr).toContain(`Refusing to replace ${fx.container}`)
      expect(r.stderr).toContain(`ai.relax.recipe=${owner}`)
      const after = await inspectContainer(fx.container)
      expect(after.Id).toBe(id)
      expect(after.State.Running).toBe(true)
      expect(after.RestartCount).toBe(0)
      // logs refuses it too, and verify reports it as not this recipe's.
      const logs = await runCli(['logs', fx.id, '--relax-root', fx.relaxRoot], {env: fx.env})
      expect(logs.exitCode).toBe(3)
      expect(logs.stderr).toContain('is not this recipe\'s container')
      expect((await inspectContainer(fx.container)).Id).toBe(id)
    } finally {
      await docker(['rm', '-f', id])
    }
  })

  it.skipIf(unavailable !== undefined)('[workplace-assistant#9] [r2e-gym#8] a port of the recipe already in use: exit 3 naming the port, nothing created', async () => {
    const server = net.createServer()
    await new Promise<void>((resolve) => server.listen(fx.resourcePort, '127.0.0.1', resolve))
    try {
      const r = await runCli(['start', fx.id, '--relax-root', fx.relaxRoot, '--json'], {env: fx.env})
      expect(r.exitCode).toBe(3)
      expect(r.json.error.code).toBe('E_PORT_IN_USE')
      expect(r.json.error.message).toBe(`Port ${fx.resourcePort} (resource) is already in use on 127.0.0.1`)
      expect(r.json.error.details.port).toBe(fx.resourcePort)
      expect(await inspectContainer(fx.container)).toBeUndefined()
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
  })
})

describe.skipIf(unavailable !== undefined)('gymrecipe start on the fixture image: ready, verified, logs, stale tag', () => {
  let fx: StartFixture
  let started: any
  beforeAll(async () => {
    await ensureBaseImage()
    fx = await startFixture({purpose: 'starthappy', portBase: 24100})
  })
  afterAll(async () => {
    await fx?.cleanup()
  })

  it('builds, replaces nothing foreign, reports ready and climbs static → data → service', async () => {
    const r = await runCli(['start', fx.id, '--relax-root', fx.relaxRoot, '--json'], {env: fx.env, timeout: 600_000})
    expect(r.exitCode, `${r.stderr}\n${r.stdout}`).toBe(0)
    started = r.json
    expect(started.container).toMatchObject({name: fx.container, state: 'running', image: fx.image})
    expect(started.readiness.ready).toBe(true)
    expect(started.readiness.readyz).toMatchObject({ready: true, trials: 0, active_trials: 0, janitor_healthy: true})
    expect(started.ladder.status).toBe('pass')
    expect(started.ladder.rungs.map((x: any) => [x.rung, x.status])).toEqual([['static', 'pass'], ['data', 'pass'], ['service', 'pass']])
    const ids = started.ladder.rungs[2].checks.map((c: any) => c.id)
    expect(ids).toEqual(expect.arrayContaining(['service.container-fresh', 'service.gym-commit', 'service.trials', 'service.verifier', 'service.traceback']))
    // Script output went to stderr under --json; stdout is the JSON report alone.
    expect(r.stderr).toContain(`Building ${fx.image}`)
    const inspected = await inspectContainer(fx.container)
    expect(inspected.Id).toBe(started.container.id)
    expect(inspected.Config.Labels['ai.relax.recipe']).toBe(fx.id)
  }, 600_000)

  it('verify --level service passes against the running service', async () => {
    const r = await runCli(['verify', fx.id, '--level', 'service', '--relax-root', fx.relaxRoot, '--json'], {env: fx.env, timeout: 300_000})
    expect(r.exitCode, r.stdout.slice(-3000)).toBe(0)
    const service = r.json.rungs.find((x: any) => x.rung === 'service')
    const verifier = service.checks.find((c: any) => c.id === 'service.verifier')
    expect(verifier.message).toContain('correct_reward=1 incorrect_reward=0')
    expect(verifier.evidence.exit_code).toBe(0)
    // The image holds this checkout's service: Dockerfile, patches and Gateway code, not only the scripts.
    const files = service.checks.find((c: any) => c.id === 'service.image-files')
    expect(files.status).toBe('pass')
    expect(files.evidence.compared).toEqual(expect.arrayContaining(['service/Dockerfile', 'service/patches/nemo_gym_http_error_traceback.patch', 'service/fixture_gym/gateway.py']))
    // The Gym tree in the image, compared with the Gym checkout (GYMRECIPE_GYM_ROOT); the patched file left out.
    const tree = service.checks.find((c: any) => c.id === 'service.gym-tree')
    expect(tree.status).toBe('pass')
    expect(tree.message).toContain('environments/calendar/config.yaml')
    expect(tree.message).toContain('nemo_gym/server_utils.py left out')
    // A Dockerfile edited since the build: the image no longer matches the checkout.
    const dockerfile = path.join(fx.relaxRoot, 'examples/nemo_gym_agentic/service/Dockerfile')
    const original = await fs.readFile(dockerfile, 'utf8')
    await fs.writeFile(dockerfile, `${original}\n# edited after the build\n`)
    try {
      const stale = await runCli(['verify', fx.id, '--level', 'service', '--relax-root', fx.relaxRoot, '--json'], {env: fx.env, timeout: 300_000})
      const staleFiles = stale.json.rungs.find((x: any) => x.rung === 'service').checks.find((c: any) => c.id === 'service.image-files')
      expect(staleFiles.status).toBe('fail')
      expect(staleFiles.message).toBe('service/Dockerfile changed since the image was built (or the image lacks them)')
    } finally {
      await fs.writeFile(dockerfile, original)
    }
    const privateRay = service.checks.find((c: any) => c.id === 'service.private-ray')
    // Ray listens on every interface; the token the start script made is what keeps others out.
    expect(privateRay).toMatchObject({status: 'pass', evidence: {token_auth: true}})
    expect(privateRay.message).toMatch(/^listening for the network: 0\.0\.0\.0 \(every interface\):\d+ \(private Ray GCS\); every connection needs the token/)
    const traceback = service.checks.find((c: any) => c.id === 'service.traceback')
    expect(traceback.status).toBe('pass')
    // The patch itself, read in the image; then tracebacks reach the logs.
    expect(traceback.message).toMatch(/^Relax's traceback patch is in the image \(verified in the image, not provoked: the 1 line\(s\) it adds are in \/opt\/nemo-gym\/nemo_gym\/server_utils\.py\); HTTP 500 from POST /)
    expect(traceback.evidence.from).toBe('examples/nemo_gym_agentic/service/patches/nemo_gym_http_error_traceback.patch')
    expect(traceback.message).toContain('(Content-Type: text/plain)')
    expect(traceback.evidence.traceback[0]).toContain('Traceback (most recent call last)')
  }, 300_000)

  it('an error probe that real Gym answers 422 is reported as a validation error, not a pass', async () => {
    const contractFile = path.join(fx.dir, 'recipe.yaml')
    const original = await fs.readFile(contractFile, 'utf8')
    await fs.writeFile(contractFile, original.replace('    content_type: text/plain\n', '    content_type: application/json\n'))
    try {
      const r = await runCli(['verify', fx.id, '--level', 'service', '--relax-root', fx.relaxRoot, '--json'], {env: fx.env, timeout: 300_000})
      expect(r.exitCode).toBe(4)
      const service = r.json.rungs.find((x: any) => x.rung === 'service')
      expect(service.status).toBe('incomplete')
      const traceback = service.checks.find((c: any) => c.id === 'service.traceback')
      expect(traceback.status).toBe('skip')
      expect(traceback.message).toContain('was answered 422, a request validation error')
      expect(traceback.hint).toContain('service.error_probe')
    } finally {
      await fs.writeFile(contractFile, original)
    }
  }, 300_000)

  it('logs: the container\'s logs through the Engine API, --tail, --json, --follow', async () => {
    const all = await runCli(['logs', fx.id, '--relax-root', fx.relaxRoot], {env: fx.env})
    expect(all.exitCode, all.stderr).toBe(0)
    expect(all.stdout + all.stderr).toContain('All 3 / 3 servers ready!')
    const cli = await docker(['logs', fx.container])
    // Same bytes as `docker logs`, each stream on its own side (the container may log more meanwhile).
    expect(cli.stdout.startsWith(all.stdout)).toBe(true)
    expect(cli.stderr.startsWith(all.stderr)).toBe(true)
    const tail = await runCli(['logs', fx.id, '--relax-root', fx.relaxRoot, '--tail', '3'], {env: fx.env})
    expect((tail.stdout + tail.stderr).trim().split('\n')).toHaveLength(3)
    const json = await runCli(['logs', fx.id, '--relax-root', fx.relaxRoot, '--json', '--tail', '5'], {env: fx.env})
    expect(json.json.container.id).toBe(started.container.id)
    expect(json.json.chunks.length).toBeGreaterThan(0)
    expect(json.json.chunks[0]).toHaveProperty('stream')
    const follow = spawnCli(['logs', fx.id, '--relax-root', fx.relaxRoot, '--follow', '--tail', '0'], fx.env)
    // New lines arrive while following (the CLI needs a moment to attach: keep poking /healthz).
    const poke = setInterval(() => void fetch(`http://127.0.0.1:${fx.gatewayPort}/healthz`).catch(() => undefined), 500)
    try {
      await follow.waitFor(/GET \/healthz/, 30_000)
    } finally {
      clearInterval(poke)
    }
    process.kill(follow.pid, 'SIGINT')
    expect((await follow.exited).exitCode).toBe(0)
  }, 120_000)

  it('[calendar#10] after another image is tagged onto the reused tag, verify reports the container as stale', async () => {
    // A distinct image under the recipe's label (so cleanup finds it), moved onto the tag.
    const stale = `${fx.image}-other`
    await dockerOk(['build', '-t', stale, '--label', `ai.relax.recipe=${fx.id}`, '-'], {input: 'FROM gymrecipe-test-base:bookworm\nLABEL io.gymrecipe.test=stale-tag\n'})
    await dockerOk(['tag', stale, fx.image])
    const r = await runCli(['verify', fx.id, '--level', 'service', '--relax-root', fx.relaxRoot, '--json'], {env: fx.env, timeout: 300_000})
    expect(r.exitCode).toBe(4)
    const service = r.json.rungs.find((x: any) => x.rung === 'service')
    const fresh = service.checks.find((c: any) => c.id === 'service.container-fresh')
    expect(fresh.status).toBe('fail')
    expect(fresh.message).toMatch(/^stale container: it runs image [0-9a-f]{12}, but .* now points to [0-9a-f]{12}/)
    expect(fresh.hint).toContain(`gymrecipe start ${fx.id}`)
    // The container itself is untouched by verify.
    expect((await inspectContainer(fx.container)).Id).toBe(started.container.id)
  }, 300_000)

  it('a hand-written recipe (no recipe.yaml) whose script keeps its own readiness loop: start still watches it natively', async () => {
    const contract = path.join(fx.dir, 'recipe.yaml')
    await fs.rename(contract, `${contract}.aside`)
    const script = `start_${fx.id.replaceAll('-', '_')}_gym.sh`
    const original = await fs.readFile(path.join(fx.dir, script), 'utf8')
    try {
      await editFile(fx.dir, script, (t) => t.replace('if [[ "${NEMO_GYM_START_NO_WAIT:-0}" == "1" ]]; then', 'if [[ -n "${NEVER_SET_BY_ANYONE:-}" ]]; then'))
      const r = await runCli(['start', fx.id, '--relax-root', fx.relaxRoot, '--gym-root', snapshotRoot, '--json'], {env: fx.env, timeout: 600_000})
      expect([0, 4], r.stderr.slice(-3000)).toContain(r.exitCode)
      expect(r.json.readiness.ready).toBe(true)
      expect(r.json.script.exit_code).toBe(0)
      // The script ran its own loop to the end (it printed its ready line), yet start replaced the stale container.
      expect(r.stderr).toContain(`Gym service is ready at http://127.0.0.1:${fx.gatewayPort}`)
      expect(r.json.container.id).not.toBe(started.container.id)
      expect(r.json.container.replaced).toBe(started.container.id)
      const service = r.json.ladder.rungs.find((x: any) => x.rung === 'service')
      if (service.status !== 'not-run') expect(service.checks.find((c: any) => c.id === 'service.container-owned').status).toBe('pass')
    } finally {
      await fs.rename(`${contract}.aside`, contract)
      await fs.writeFile(path.join(fx.dir, script), original)
    }
  }, 600_000)
})
