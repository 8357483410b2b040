/**
 * `gymrecipe start` under faults, on the real Docker Engine with the fixture image's fault
 * injection: the container dies during start-up (reported within 2 s of its exit, with its
 * last log lines), readiness never comes (bounded wait, last 200 lines, hint), and Ctrl+C
 * (the script's process group and the container this run created are stopped; the report
 * says the container's state).
 */
import {execa} from 'execa'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {dockerUnavailableReason, ensureBaseImage, inspectContainer} from '../helpers/docker.js'
import {writeFaults} from '../helpers/relax-fixture.js'
import {type StartFixture, spawnCli, startFixture} from '../helpers/start-env.js'

const unavailable = await dockerUnavailableReason()
if (unavailable) console.error(`\n!! SKIPPING start fault tests: ${unavailable}\n`)

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0)
    return true
  } catch {
    return false
  }
}

describe.skipIf(unavailable !== undefined)('gymrecipe start under faults', () => {
  let fx: StartFixture
  beforeAll(async () => {
    await ensureBaseImage()
    fx = await startFixture({purpose: 'startfault', portBase: 24200, faults: {exit_after_s: 3, exit_code: 3}})
  })
  afterAll(async () => {
    await fx?.cleanup()
  })

  it('the container dies during start-up: reported within 2 s of its exit, with its last log lines', async () => {
    const cli = spawnCli(['start', fx.id, '--relax-root', fx.relaxRoot, '--json'], {...fx.env, NEMO_GYM_START_TIMEOUT_S: '600'})
    const noticedAt = await cli.waitFor(/exited during start-up/, 600_000)
    const {exitCode, at: exitedAt} = await cli.exited
    expect(exitCode, cli.stderr()).toBe(1)
    const error = JSON.parse(cli.stdout()).error
    expect(error.code).toBe('E_CONTAINER_DIED')
    expect(error.message).toContain('exit code 3')
    expect(error.details.last_log_lines.join('\n')).toContain('finished unexpectedly!')
    expect(cli.stderr()).toContain('finished unexpectedly!')
    // Measured against Docker's own record of the exit, not the CLI's.
    const container = await inspectContainer(fx.container)
    expect(container.State.Running).toBe(false)
    expect(container.State.ExitCode).toBe(3)
    const finishedAt = Date.parse(container.State.FinishedAt)
    expect(noticedAt - finishedAt).toBeLessThan(2000)
    expect(exitedAt - finishedAt).toBeLessThan(2000)
    expect(error.details.reported_after_ms).toBeLessThan(2000)
    // The dead container is kept for inspection and the report says so.
    expect(error.details.container).toMatchObject({name: fx.container, id: container.Id, state: 'exited (exit code 3)'})
  }, 600_000)

  it('the generated script on its own (no gymrecipe) also reports the death at once, with the last 200 log lines', async () => {
    const script = path.join(fx.dir, `start_${fx.id.replaceAll('-', '_')}_gym.sh`)
    const run = execa('bash', [script], {reject: false, env: fx.env, buffer: false, stdin: 'ignore'})
    let err = ''
    let reportedAt: number | undefined
    run.stderr?.on('data', (chunk: Buffer) => {
      err += chunk.toString()
      if (reportedAt === undefined && /exited during start-up/.test(err)) reportedAt = Date.now()
    })
    run.stdout?.resume()
    const result = await run
    expect(result.exitCode, err).toBe(1)
    expect(err).toMatch(/exited during start-up \(exit code 3\); last 200 log lines:/)
    expect(err).toContain('finished unexpectedly!')
    const finishedAt = Date.parse((await inspectContainer(fx.container)).State.FinishedAt)
    // `timeout 2 docker wait` wakes the loop when the container exits instead of sleeping 2 s.
    expect(reportedAt! - finishedAt).toBeLessThan(1000)
  }, 600_000)

  it('readiness never comes: bounded wait, then the last 200 log lines and a hint; the container is left running', async () => {
    await writeFaults(fx.checkout, {never_ready: true})
    const cli = spawnCli(['start', fx.id, '--relax-root', fx.relaxRoot, '--json', '--timeout', '6'], fx.env)
    const startedAt = await cli.waitFor(/Started .*NEMO_GYM_START_NO_WAIT=1/, 600_000)
    const {exitCode, at} = await cli.exited
    expect(exitCode, cli.stderr()).toBe(1)
    const error = JSON.parse(cli.stdout()).error
    expect(error.code).toBe('E_NOT_READY')
    expect(error.message).toMatch(/did not become ready within 6s \(last \/readyz: HTTP 503 .*"ready":\s*false/)
    expect(error.hint).toContain('/readyz stays 503 until the agent and resources servers answer')
    expect(error.details.last_log_lines.length).toBeGreaterThan(3)
    expect(error.details.last_log_lines.length).toBeLessThanOrEqual(200)
    expect(error.details.last_log_lines.join('\n')).toContain('Gateway environments:')
    expect(cli.stderr()).toContain('Last ')
    // Bounded: about the timeout after the container started, not the 600 s default.
    expect(at - startedAt).toBeGreaterThan(5000)
    expect(at - startedAt).toBeLessThan(15_000)
    const container = await inspectContainer(fx.container)
    expect(container.State.Running).toBe(true)
    expect(error.details.container.state).toBe('running')
  }, 600_000)

  it('Ctrl+C while waiting for readiness: the script group is gone and the container this run created is removed', async () => {
    const before = await inspectContainer(fx.container)
    const cli = spawnCli(['start', fx.id, '--relax-root', fx.relaxRoot, '--json'], fx.env)
    await cli.waitFor(/Started .*NEMO_GYM_START_NO_WAIT=1/, 600_000)
    const created = await inspectContainer(fx.container)
    expect(created.Id).not.toBe(before.Id) // the previous (owned) container was replaced
    const interruptedAt = Date.now()
    process.kill(cli.pid, 'SIGINT')
    const {exitCode, at} = await cli.exited
    expect(exitCode, cli.stderr()).toBe(130)
    expect(at - interruptedAt).toBeLessThan(10_000)
    const error = JSON.parse(cli.stdout()).error
    expect(error.code).toBe('E_INTERRUPTED')
    expect(error.details.container.id).toBe(created.Id)
    expect(error.details.container.state).toBe('removed (it was running)')
    expect(error.message).toContain('removed (it was running)')
    expect(await inspectContainer(fx.container)).toBeUndefined()
    expect(groupAlive(error.details.script_pid)).toBe(false)
  }, 600_000)

  it('Ctrl+C while the script is still building: its process group is stopped and no container is left', async () => {
    const cli = spawnCli(['start', fx.id, '--relax-root', fx.relaxRoot, '--json'], fx.env)
    await cli.waitFor(/Building /, 600_000)
    const interruptedAt = Date.now()
    process.kill(cli.pid, 'SIGINT')
    const {exitCode, at} = await cli.exited
    expect(at - interruptedAt).toBeLessThan(10_000)
    expect(exitCode, cli.stderr()).toBe(130)
    const error = JSON.parse(cli.stdout()).error
    expect(error.code).toBe('E_INTERRUPTED')
    expect(error.details.container.state).toMatch(/^not created|^removed/)
    expect(groupAlive(error.details.script_pid)).toBe(false)
    expect(await inspectContainer(fx.container)).toBeUndefined()
  }, 600_000)
})
