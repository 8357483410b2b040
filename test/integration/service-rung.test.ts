/**
 * The service rung against a real container of the fixture image that is wrong in several
 * ways at once (one image build): /readyz reports another Gym commit and trials from a stale
 * requester, and the recipe's verifier cannot tell right from wrong. `start` must report each
 * as its own failing check (exit 4), the same for a hand-written recipe without recipe.yaml,
 * and a stopped container fails the container check with its exit code and logs.
 */
import {execa} from 'execa'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {resolveRecipe} from '../../src/recipe/target.js'
import {serviceRung} from '../../src/ladder/service/index.js'
import type {CheckResult} from '../../src/ladder/types.js'
import {runCli, snapshotRoot} from '../helpers/cli.js'
import {dockerOk, dockerUnavailableReason, ensureBaseImage} from '../helpers/docker.js'
import {editFile} from '../helpers/recipes.js'
import {type StartFixture, startFixture} from '../helpers/start-env.js'
import {Scratch} from '../../src/ladder/scratch-store.js'

const unavailable = await dockerUnavailableReason()
if (unavailable) console.error(`\n!! SKIPPING service rung tests: ${unavailable}\n`)

const OTHER_COMMIT = '0123456789abcdef0123456789abcdef01234567'

async function serviceChecks(fx: StartFixture, gymRoot?: string): Promise<Map<string, CheckResult>> {
  const target = await resolveRecipe(fx.relaxRoot, fx.id)
  const ctx = {target, options: {env: {...process.env, ...fx.env}, smoke: false, gymRoot}, scratch: new Scratch()}
  const out = new Map<string, CheckResult>()
  for (const check of serviceRung.checks(ctx)) {
    const outcome = await check.run(ctx)
    const list = Array.isArray(outcome) ? outcome : [{id: check.id, title: check.title, ...outcome}]
    for (const r of list) out.set(r.id, {...r, rung: 'service'} as CheckResult)
  }
  return out
}

describe.skipIf(unavailable !== undefined)('service rung on a faulty service', () => {
  let fx: StartFixture
  beforeAll(async () => {
    await ensureBaseImage()
    // Built without Relax's traceback patch: stock Gym, as an image built from an old Dockerfile.
    fx = await startFixture({purpose: 'svcrung', portBase: 24300, faults: {stale_trials: 2, gym_commit: OTHER_COMMIT}, tracebackPatch: false})
    // A verifier whose known-wrong output is the known-correct one: it can no longer tell them apart.
    const verify = `verify_${fx.id.replaceAll('-', '_')}.py`
    await editFile(fx.dir, verify, (t) => t.replace('\n# Proxy variables are ignored', '\nWRONG_OUTPUT = CORRECT_OUTPUT\n\n# Proxy variables are ignored'))
    // A start script from before Ray token auth: its private Ray answers anyone.
    await editFile(fx.dir, `start_${fx.id.replaceAll('-', '_')}_gym.sh`, (t) => t.replace(/\n {2}export RAY_AUTH_MODE=token\n.*\n {2}export RAY_AUTH_TOKEN\n/, '\n'))
  })
  afterAll(async () => {
    await fx?.cleanup()
  })

  it('[calendar#13] [gsm8k#7] [r2e-gym#22] start reaches ready, then the service rung fails on the commit, the stale trials, the verifier and the missing traceback (exit 4)', async () => {
    const r = await runCli(['start', fx.id, '--relax-root', fx.relaxRoot, '--json'], {env: fx.env, timeout: 600_000})
    expect(r.exitCode, r.stderr.slice(-3000)).toBe(4)
    expect(r.json.readiness.ready).toBe(true)
    expect(r.json.ladder.stopped_at).toBe('service')
    const service = r.json.ladder.rungs.find((x: any) => x.rung === 'service')
    const byId = new Map<string, any>(service.checks.map((c: any) => [c.id, c]))
    const failing = service.checks.filter((c: any) => c.status !== 'pass').map((c: any) => c.id).sort()
    expect(failing).toEqual(['service.gym-commit', 'service.private-ray', 'service.traceback', 'service.trials', 'service.verifier'])
    expect(byId.get('service.private-ray').message).toMatch(/^the private Ray accepts connections from the network without authentication: 0\.0\.0\.0 \(every interface\):\d+ \(private Ray GCS\); anyone who reaches this host can run work inside the Gym container$/)
    expect(byId.get('service.traceback').status).toBe('fail')
    // Stock Gym still prints a traceback for the text/plain probe: only the file in the image tells.
    expect(byId.get('service.traceback').message).toBe("/opt/nemo-gym/nemo_gym/server_utils.py in the image lacks 1 of the 1 line(s) Relax's traceback patch adds (print(format_exc(), flush=True)): the image was built without nemo_gym_http_error_traceback.patch, so a failed inner-server call is a silent 500")
    expect(byId.get('service.gym-commit').message).toBe(`/readyz reports gym_commit=${OTHER_COMMIT}, recipe.yaml gym.commit pins a85670eb167ba9b48cc53a36a070eed815e6c40d`)
    expect(byId.get('service.trials').message).toMatch(/^trials=2 active_trials=2 on service_epoch [0-9a-f]{32} .*a stale requester is still submitting/)
    expect(byId.get('service.trials').hint).toContain("grep 'POST /v1/trials'")
    expect(byId.get('service.verifier').message).toContain('the known-wrong response also got the success reward 1')
    expect(byId.get('service.verifier').evidence.exit_code).not.toBe(0)
    // What is right is still reported as right.
    for (const id of ['service.container-exists', 'service.container-owned', 'service.container-running', 'service.container-fresh', 'service.image-files', 'service.readyz', 'service.janitor']) {
      expect(byId.get(id)?.status, id).toBe('pass')
    }
  }, 600_000)

  it('a hand-written recipe (no recipe.yaml): container, commit and verifier Python are read from its files', async () => {
    const contract = path.join(fx.dir, 'recipe.yaml')
    await fs.rename(contract, `${contract}.aside`)
    try {
      const results = await serviceChecks(fx)
      expect(results.get('service.container-exists')?.message).toContain(`(name from start_${fx.id.replaceAll('-', '_')}_gym.sh)`)
      expect(results.get('service.container-owned')?.status).toBe('pass')
      expect(results.get('service.container-fresh')?.status).toBe('pass')
      expect(results.get('service.gym-commit')?.status).toBe('fail')
      expect(results.get('service.gym-commit')?.message).toContain(`start_${fx.id.replaceAll('-', '_')}_gym.sh pins a85670eb`)
      expect(results.get('service.trials')?.status).toBe('fail')
      const verifier = results.get('service.verifier')!
      expect(verifier.status).toBe('fail')
      expect((verifier.evidence as any).command).toMatch(/^\/opt\/nemo-gym\/resources_servers\/calendar\/\.venv\/bin\/python \/opt\/relax-integration\/.*\.py$/)
      expect(results.get('service.traceback')?.status).toBe('fail')
    } finally {
      await fs.rename(`${contract}.aside`, contract)
    }
  }, 300_000)

  it('the Gym tree in the image is compared with a checkout: its files, or the pinned commit\'s own from .git', async () => {
    const work = await fs.mkdtemp(path.join(os.tmpdir(), 'gymrecipe-gym-tree-'))
    try {
      // A checkout whose calendar config is not the one baked into the image.
      const changed = path.join(work, 'changed')
      await fs.cp(snapshotRoot, changed, {recursive: true})
      await fs.chmod(path.join(changed, 'environments/calendar/config.yaml'), 0o644)
      await fs.appendFile(path.join(changed, 'environments/calendar/config.yaml'), '# edited\n')
      const differ = (await serviceChecks(fx, changed)).get('service.gym-tree')!
      expect(differ.status).toBe('fail')
      expect(differ.message).toContain('environments/calendar/config.yaml differ (compared with the files of')
      // A git checkout holding the pinned commit: its files at that commit are compared.
      const repo = path.join(work, 'repo')
      await fs.cp(snapshotRoot, repo, {recursive: true})
      const git = (...args: string[]) => execa('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args])
      await git('init', '-q')
      await git('add', '-A')
      await git('commit', '-q', '-m', 'snapshot')
      const head = String((await git('rev-parse', 'HEAD')).stdout).trim()
      const notThere = (await serviceChecks(fx, repo)).get('service.gym-tree')!
      expect(notThere).toMatchObject({status: 'fail', message: `the pinned commit a85670eb167ba9b48cc53a36a070eed815e6c40d is not in the history of ${repo}`})
      const contract = path.join(fx.dir, 'recipe.yaml')
      const original = await fs.readFile(contract, 'utf8')
      await fs.writeFile(contract, original.replace('a85670eb167ba9b48cc53a36a070eed815e6c40d', head))
      try {
        // Files edited after the commit do not count: the commit's own are read.
        await fs.appendFile(path.join(repo, 'environments/calendar/config.yaml'), '# after the commit\n')
        const proven = (await serviceChecks(fx, repo)).get('service.gym-tree')!
        expect(proven.status).toBe('pass')
        expect(proven.message).toContain(`match the pinned commit's files, read from ${repo}/.git`)
        // This deployment was built without the traceback patch: nothing is left out.
        expect(proven.evidence).toMatchObject({method: 'git', patched_left_out: []})
      } finally {
        await fs.writeFile(contract, original)
      }
      const without = (await serviceChecks(fx)).get('service.gym-tree')!
      expect(without.status).toBe('skip')
      expect(without.hint).toContain('--gym-root')
    } finally {
      await fs.rm(work, {recursive: true, force: true})
    }
  }, 300_000)

  it('a stopped container fails the container check with its exit code and last log lines', async () => {
    await dockerOk(['stop', '-t', '10', fx.container])
    const results = await serviceChecks(fx)
    const running = results.get('service.container-running')!
    expect(running.status).toBe('fail')
    expect(running.message).toMatch(/is exited \(exit code 0, finished .*\)/)
    expect((running.evidence as any).last_log_lines.length).toBeGreaterThan(0)
    expect(results.get('service.readyz')?.message).toBe(`container ${fx.container} is not running`)
  }, 300_000)
})
