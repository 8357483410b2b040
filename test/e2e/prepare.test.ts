/**
 * `gymrecipe prepare` end to end, as a user runs it: the built CLI runs the generated
 * prepare_<recipe>.sh inside the fixture Relax checkout. On the real Docker Engine the script
 * builds the fixture Gym image offline (from the checkout's Dockerfile, labelled with the
 * recipe id), materializes the `example` split onto a host directory mounted at the same
 * absolute path, validates, converts and publishes it; then the data rung runs, including a
 * real shared-storage probe container. Everything created is removed by its labels.
 */
import {execa} from 'execa'
import {randomBytes} from 'node:crypto'
import {existsSync} from 'node:fs'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {PROBE_LABEL} from '../../src/runtime/storage-probe.js'
import {repoRoot, runCli, snapshotRoot} from '../helpers/cli.js'
import {docker, dockerUnavailableReason, ensureBaseImage, removeByLabel} from '../helpers/docker.js'
import {makeRelaxCheckout, type RelaxCheckout} from '../helpers/relax-fixture.js'

const unavailable = await dockerUnavailableReason()
if (unavailable) {
  const banner = '!'.repeat(78)
  console.error(`\n${banner}\n!! SKIPPING prepare e2e tests on Docker: ${unavailable}\n!! CI always has a Docker daemon; these tests must run there.\n${banner}\n`)
}

const CALENDAR_CONFIG = 'environments/calendar/config.yaml'
const EXAMPLE_ROWS = path.join(snapshotRoot, 'environments/calendar/data/example.jsonl')

async function newRecipe(root: string, id: string, extra: string[] = []): Promise<string> {
  const r = await runCli(['new', id, '--gym-root', snapshotRoot, '--gym-config', CALENDAR_CONFIG, '--from', 'calendar', '--relax-root', root, ...extra])
  if (r.exitCode !== 0) throw new Error(`gymrecipe new failed: ${r.stderr}${r.stdout}`)
  return path.join(root, 'examples/nemo_gym_agentic/recipes', id)
}

/**
 * Whether a process still runs after up to `ms`. A zombie counts as ended: killed orphans are
 * re-parented to PID 1, which may never reap them (it does not in some sandboxes).
 */
async function runningAfter(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  for (;;) {
    const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '')
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
    if (!stat || state === 'Z' || state === 'X') return false
    if (Date.now() > deadline) return true
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

const dataCheck = (report: any, id: string) => report.rungs.find((r: any) => r.rung === 'data').checks.find((c: any) => c.id === id)

describe.skipIf(unavailable !== undefined)('gymrecipe prepare on the Docker Engine', () => {
  const id = `cal-e2e-${randomBytes(3).toString('hex')}`
  const snake = id.replaceAll('-', '_')
  const image = `relax-nemo-gym:${id}`
  let tmp: string
  let checkout: RelaxCheckout
  let shared: string
  let source: string

  beforeAll(async () => {
    await ensureBaseImage()
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'gymrecipe-prepare-e2e-'))
    checkout = await makeRelaxCheckout(path.join(tmp, 'relax'), {hostGym: false})
    await newRecipe(checkout.root, id, ['--dataset', 'example', '--smoke'])
    shared = path.join(tmp, 'shared', 'nemo-gym')
    source = path.join(shared, `${snake}_example.jsonl`)
  }, 900_000)

  afterAll(async () => {
    // The script labels the image it builds and its containers with the recipe id.
    await removeByLabel(`ai.relax.recipe=${id}`)
    await removeByLabel(`${PROBE_LABEL}=${id}`)
    if (tmp) await fs.rm(tmp, {recursive: true, force: true})
  }, 300_000)

  it('--dry-run shows the command and the paths, and runs nothing', async () => {
    const r = await runCli(['prepare', id, '--relax-root', checkout.root, '--dry-run'], {env: {NEMO_GYM_SOURCE_DATA: source}})
    expect(r.exitCode).toBe(0)
    expect(r.stdout).toContain(`would run: (cd ${checkout.root} && `)
    expect(r.stdout).toContain(`examples/nemo_gym_agentic/recipes/${id}/prepare_${snake}.sh`)
    expect(r.stdout).toContain(`it writes: ${source} and the preview ${source.replace('.jsonl', '_relax.jsonl')}`)
    expect(r.stdout).toContain('(SMOKE run)')
    // A dry run still sources env.sh, and says so: a command in it would have run.
    expect(r.stdout).toContain(`read ${path.join(checkout.root, 'examples/nemo_gym_agentic/recipes', id)}/env.sh by sourcing it with bash (any command in it ran)`)
    expect(existsSync(source)).toBe(false)
    expect((await docker(['image', 'inspect', image])).exitCode).not.toBe(0)
  })

  it('--dry-run exits as the real run would: an env.sh that bash cannot parse is bad input (exit 2)', async () => {
    const envSh = path.join(checkout.root, 'examples/nemo_gym_agentic/recipes', id, 'env.sh')
    const original = await fs.readFile(envSh, 'utf8')
    await fs.writeFile(envSh, `${original}\nif then\n`)
    try {
      const r = await runCli(['prepare', id, '--relax-root', checkout.root, '--dry-run', '--json'], {env: {NEMO_GYM_SOURCE_DATA: source}})
      expect(r.exitCode).toBe(2)
      expect(r.json.error).toMatchObject({code: 'E_ENV_SH', location: {file: envSh}})
      expect(r.json.error.message).toContain('syntax error')
    } finally {
      await fs.writeFile(envSh, original)
    }
  })

  it('builds the image, materializes the example split at the same absolute path, and passes static → data', async () => {
    const r = await runCli(['prepare', id, '--relax-root', checkout.root, '--json'], {env: {NEMO_GYM_SOURCE_DATA: source}, timeout: 900_000})
    // Script output goes to stderr under --json; stdout is the report alone.
    expect(r.json, r.stderr.slice(-3000)).toBeDefined()
    expect(r.stderr).toContain(`Image ${image} not found; building it`)
    expect(r.stderr).toContain('published 5 row(s)')
    expect({exit: r.exitCode, status: r.json.status}).toEqual({exit: 0, status: 'pass'})
    expect(r.json.smoke).toBe(true)
    expect(r.json.ladder.rungs.map((rung: any) => [rung.rung, rung.status])).toEqual([['static', 'pass'], ['data', 'pass']])
    expect(dataCheck(r.json.ladder, 'data.split').message).toMatch(/^SMOKE RUN: the example split is accepted only because recipe.yaml sets data.smoke/)

    // The data really is the snapshot's example split, published on the host.
    const expected = (await fs.readFile(EXAMPLE_ROWS, 'utf8')).split('\n').filter((l) => l.trim())
    const written = (await fs.readFile(source, 'utf8')).split('\n').filter((l) => l.trim())
    expect(written.map((l) => JSON.parse(l))).toEqual(expected.map((l) => JSON.parse(l)))
    expect(dataCheck(r.json.ladder, 'data.row-count').message).toBe(`5 raw rows = 5 rows in ${snake}_example_relax.jsonl`)

    // The shared-storage probe ran in a real container from the recipe's own image, and is gone.
    const storage = dataCheck(r.json.ladder, 'data.shared-storage')
    expect(storage).toMatchObject({status: 'pass', evidence: {image, status: 'seen', network: 'none', size: (await fs.stat(source)).size}})
    expect((await docker(['ps', '-a', '-q', '--filter', `label=${PROBE_LABEL}=${id}`])).stdout.trim()).toBe('')
    expect((await docker(['image', 'inspect', '--format', '{{ index .Config.Labels "ai.relax.recipe" }}', image])).stdout.trim()).toBe(id)
  }, 900_000)

  it('verify --level data then passes on its own, and says SMOKE', async () => {
    const r = await runCli(['verify', id, '--level', 'data', '--relax-root', checkout.root, '--json'], {env: {NEMO_GYM_SOURCE_DATA: source}, timeout: 300_000})
    expect({exit: r.exitCode, status: r.json?.status}).toEqual({exit: 0, status: 'pass'})
    expect(r.json.smoke).toBe(true)
    expect(dataCheck(r.json, 'data.shared-storage').status).toBe('pass')
    const human = await runCli(['verify', id, '--level', 'data', '--relax-root', checkout.root], {env: {NEMO_GYM_SOURCE_DATA: source}, timeout: 300_000})
    expect(human.stdout).toContain('SMOKE RUN')
  }, 600_000)

  it('a broken published file fails the data rung with the line and field (exit 4 from verify)', async () => {
    const lines = (await fs.readFile(source, 'utf8')).split('\n').filter((l) => l.trim())
    const row = JSON.parse(lines[3])
    delete row.exp_cal_state
    lines[3] = JSON.stringify(row)
    const broken = path.join(tmp, 'broken', `${snake}_example.jsonl`)
    await fs.mkdir(path.dirname(broken), {recursive: true})
    await fs.writeFile(broken, lines.join('\n') + '\n')
    const r = await runCli(['verify', id, '--level', 'data', '--relax-root', checkout.root, '--json'], {env: {NEMO_GYM_SOURCE_DATA: broken}, timeout: 300_000})
    expect(r.exitCode).toBe(4)
    expect(dataCheck(r.json, 'data.fields')).toMatchObject({status: 'fail', file: broken, line: 4, message: '1 of 5 rows miss exp_cal_state (absent or null): line 4'})
  }, 600_000)
})

describe('gymrecipe prepare without Docker: failures and Ctrl+C', () => {
  let root: string
  let dir: string
  const id = 'calendar'
  beforeAll(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'gymrecipe-prepare-'))
    dir = await newRecipe(root, id)
  })
  afterAll(async () => {
    await fs.rm(root, {recursive: true, force: true})
  })

  it('reports a failing script with its exit code, last lines and a hint (exit 1), and never retries', async () => {
    const r = await runCli(['prepare', id, '--relax-root', root, '--json'], {env: {NEMO_GYM_SOURCE_DATA: 'data/calendar_train.jsonl'}})
    expect(r.exitCode).toBe(1)
    expect(r.json).toMatchObject({status: 'script-failed', script: {exit_code: 2}})
    expect(r.json.script.stderr_tail.join('\n')).toContain('NEMO_GYM_SOURCE_DATA must be an absolute path on shared storage, got: data/calendar_train.jsonl')
    expect(r.json.hint).toContain(`Set NEMO_GYM_SOURCE_DATA in ${path.join(dir, 'env.sh')}`)
    expect(r.json.ladder).toBeUndefined()
    // The envelope says why, as for every failure.
    expect(r.envelope.status).toBe('failed')
    expect(r.envelope.error).toMatchObject({code: 'E_SCRIPT_FAILED', message: expect.stringMatching(/^prepare_calendar\.sh exited with 2: .*NEMO_GYM_SOURCE_DATA must be an absolute path/), hint: expect.stringContaining('Set NEMO_GYM_SOURCE_DATA')})
    // The same for people, with the script's own words.
    const human = await runCli(['prepare', id, '--relax-root', root], {env: {NEMO_GYM_SOURCE_DATA: 'data/calendar_train.jsonl'}})
    expect(human.exitCode).toBe(1)
    expect(human.stdout).toContain('✖ prepare_calendar.sh exited with 2 after')
    expect(human.stdout).toContain('    NEMO_GYM_SOURCE_DATA must be an absolute path on shared storage')
    // The script's output is one progress line while it runs, not a stream...
    expect(human.stderr).not.toContain('NEMO_GYM_SOURCE_DATA must be an absolute path')
    // ...unless asked for.
    const verbose = await runCli(['prepare', id, '--relax-root', root, '--verbose'], {env: {NEMO_GYM_SOURCE_DATA: 'data/calendar_train.jsonl'}})
    expect(verbose.exitCode).toBe(1)
    expect(verbose.stderr).toContain('NEMO_GYM_SOURCE_DATA must be an absolute path')
  })

  it('usage errors: unknown recipe (exit 2), missing prepare script (exit 2)', async () => {
    const unknown = await runCli(['prepare', 'nope', '--relax-root', root, '--json'])
    expect(unknown.exitCode).toBe(2)
    expect(unknown.json.error.code).toBe('E_RECIPE_NOT_FOUND')
    const other = await newRecipe(root, 'calendar-two')
    await fs.rename(path.join(other, 'prepare_calendar_two.sh'), path.join(other, 'prepare_calendar_two.sh.off'))
    const missing = await runCli(['prepare', 'calendar-two', '--relax-root', root, '--json'])
    expect(missing.exitCode).toBe(2)
    expect(missing.json.error).toMatchObject({code: 'E_NO_PREPARE_SCRIPT'})
  })

  it('Ctrl+C stops the script and everything it started (its process group), exit 130', async () => {
    const pids = path.join(root, 'pids')
    const script = path.join(dir, 'prepare_calendar.sh')
    const original = await fs.readFile(script, 'utf8')
    await fs.writeFile(script, `#!/usr/bin/env bash\nsleep 300 &\necho "$$ $!" > ${pids}\necho started\nwait\n`)
    try {
      const child = execa(process.execPath, [path.join(repoRoot, 'bin/run.js'), 'prepare', id, '--relax-root', root, '--verbose'], {reject: false, env: {NO_COLOR: '1'}})
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('the script never started')), 30_000)
        child.stdout?.on('data', (chunk: Buffer) => {
          if (chunk.toString().includes('started')) {
            clearTimeout(timer)
            resolve()
          }
        })
      })
      const [bash, sleep] = (await fs.readFile(pids, 'utf8')).trim().split(' ').map(Number)
      child.kill('SIGINT')
      const result = await child
      expect(result.exitCode).toBe(130)
      expect(String(result.stderr)).toContain('SIGINT: stopping the prepare script')
      expect(String(result.stdout)).toContain('was stopped after')
      for (const pid of [bash, sleep]) expect(await runningAfter(pid, 5000), `pid ${pid} still running`).toBe(false)
    } finally {
      await fs.writeFile(script, original)
    }
  }, 60_000)
})

describe.skipIf(unavailable !== undefined)('a recipe that trains on the tasks gymrecipe exported', () => {
  const id = `wa-data-${randomBytes(3).toString('hex')}`
  const snake = id.replaceAll('-', '_')
  let tmp: string
  let checkout: RelaxCheckout
  let tasks: string

  beforeAll(async () => {
    await ensureBaseImage()
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'gymrecipe-data-e2e-'))
    checkout = await makeRelaxCheckout(path.join(tmp, 'relax'), {hostGym: false})
    // The user's own pipeline: seed rows and a task spec naming the fields their environment grades with.
    const spec = path.join(tmp, 'spec.yaml')
    const original = await fs.readFile(path.join(repoRoot, 'test/fixtures/tasks/workplace-declarative.yaml'), 'utf8')
    await fs.writeFile(spec, original.replace('  environment_name: example_environment', '  environment_name: workplace_assistant\n  category: email'))
    const bundles = path.join(tmp, 'bundles.jsonl')
    tasks = path.join(tmp, 'my-tasks.jsonl')
    // Enough rows for one rollout step (8 prompts): the seed row, asked of 12 different people.
    const seed = (await fs.readFile(path.join(repoRoot, 'test/fixtures/tasks/seed-rows.jsonl'), 'utf8')).split('\n').map((l) => (l.trim() ? JSON.parse(l) : undefined)).find((row) => row?.reference_plan?.is_valid)
    const seeds = path.join(tmp, 'seeds.jsonl')
    await fs.writeFile(seeds, Array.from({length: 12}, (_, i) => `${JSON.stringify({...seed, seed_id: 100 + i, user_query: `Send an email to person ${i}.`})}\n`).join(''))
    for (const args of [
      ['tasks', 'build', seeds, '--spec', spec, '-o', bundles],
      ['tasks', 'export', bundles, '-o', tasks],
    ]) {
      const r = await runCli(args)
      if (r.exitCode !== 0) throw new Error(`${args.join(' ')}: ${r.stderr}`)
    }
  }, 900_000)

  afterAll(async () => {
    await removeByLabel(`ai.relax.recipe=${id}`)
    await removeByLabel(`${PROBE_LABEL}=${id}`)
    if (tmp) await fs.rm(tmp, {recursive: true, force: true})
  }, 300_000)

  const newWith = (data: string, extra: string[] = []) =>
    runCli(['new', id, '--gym-root', snapshotRoot, '--gym-config', 'resources_servers/workplace_assistant/configs/workplace_assistant.yaml', '--from', 'workplace-assistant', '--data', data, '--relax-root', checkout.root, ...extra])

  it('new refuses rows the verifier cannot grade, naming the row and the field', async () => {
    const lacking = path.join(tmp, 'lacking.jsonl')
    await fs.writeFile(lacking, (await fs.readFile(tasks, 'utf8')).replace('"category":"email",', ''))
    const r = await newWith(lacking)
    expect(r.exitCode).toBe(2)
    expect(r.stderr).toMatch(/--data \S+lacking\.jsonl: row 1 has no category, which the workplace_assistant verifier reads from every row/)
    const notTasks = path.join(tmp, 'not-tasks.jsonl')
    await fs.writeFile(notTasks, '{"seed_id": 1}\n')
    expect((await newWith(notTasks)).stderr).toMatch(/holds no Gym task rows/)
  })

  it('new records the file as the data source; prepare publishes it; static and data rungs pass, not as a smoke run', async () => {
    const made = await newWith(tasks)
    expect(made.exitCode, made.stderr).toBe(0)
    expect(made.stdout).toContain(`note: trains on ${tasks} (NEMO_GYM_TASK_DATA in env.sh)`)
    const dir = path.join(checkout.root, 'examples/nemo_gym_agentic/recipes', id)
    expect(await fs.readFile(path.join(dir, 'env.sh'), 'utf8')).toContain(`export NEMO_GYM_TASK_DATA="\${NEMO_GYM_TASK_DATA:-${tasks}}"`)
    expect(await fs.readFile(path.join(dir, 'recipe.yaml'), 'utf8')).toMatch(new RegExp(`source:\\n\\s+type: file\\n\\s+path: ${tasks.replaceAll('/', '\\/')}`))

    const source = path.join(tmp, 'shared', `${snake}_train.jsonl`)
    const r = await runCli(['prepare', id, '--relax-root', checkout.root, '--json'], {env: {NEMO_GYM_SOURCE_DATA: source}, timeout: 900_000})
    expect(r.json, r.stderr.slice(-3000)).toBeDefined()
    expect(r.stderr).toContain('published 12 row(s)')
    expect(r.json.smoke).toBe(false)
    expect(r.json.ladder.rungs.map((rung: any) => [rung.rung, rung.status]), JSON.stringify(r.json.ladder.rungs.flatMap((rung: any) => rung.checks.filter((c: any) => c.status !== 'pass')), null, 1)).toEqual([['static', 'pass'], ['data', 'pass']])
    // What is published is the exported tasks, row for row.
    const exported = (await fs.readFile(tasks, 'utf8')).split('\n').filter((l) => l.trim())
    const written = (await fs.readFile(source, 'utf8')).split('\n').filter((l) => l.trim())
    expect(written.map((l) => JSON.parse(l))).toEqual(exported.map((l) => JSON.parse(l)))
  }, 900_000)
})
