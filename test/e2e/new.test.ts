import {cp, mkdir, mkdtemp, readFile, rm, stat, writeFile} from 'node:fs/promises'
import http from 'node:http'
import type {AddressInfo} from 'node:net'
import os from 'node:os'
import path from 'node:path'
import {execa} from 'execa'
import {parse} from 'yaml'
import {describe, expect, it} from 'vitest'

import {runCli, snapshotRoot} from '../helpers/cli.js'
import {addModelConfigs} from '../helpers/recipes.js'

const CALENDAR = 'environments/calendar/config.yaml'
const WORKPLACE = 'resources_servers/workplace_assistant/configs/workplace_assistant.yaml'

/** A Relax root with the model configs a generated training script sources. */
async function relaxRoot(): Promise<string> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'gr-new-'))
  await addModelConfigs(root)
  return root
}

/** A copy of the snapshot Gym checkout with one config edited (the snapshot itself is never changed). */
async function editedGym(config: string, edit: (text: string) => string): Promise<string> {
  const gymRoot = await mkdtemp(path.join(os.tmpdir(), 'gr-gym-'))
  await cp(snapshotRoot, gymRoot, {recursive: true})
  const file = path.join(gymRoot, config)
  const before = await readFile(file, 'utf8')
  const after = edit(before)
  if (after === before) throw new Error(`the edit of ${config} changed nothing`)
  await writeFile(file, after)
  return gymRoot
}

function newArgs(id: string, relax: string, config = CALENDAR, extra: string[] = [], gymRoot = snapshotRoot): string[] {
  return ['new', id, '--gym-root', gymRoot, '--gym-config', config, '--relax-root', relax, '--json', ...extra]
}

/** A docker that only says it was called, in a directory of its own to put first on PATH. */
async function dockerThatOnlySaysItWasCalled(): Promise<string> {
  const bin = await mkdtemp(path.join(os.tmpdir(), 'gr-judge-bin-'))
  await writeFile(path.join(bin, 'docker'), '#!/bin/sh\necho "docker was called" >&2\nexit 97\n', {mode: 0o755})
  return bin
}

/** Runs a generated start script with `bin` first on PATH and only the environment given. */
function startScriptRunner(script: string, bin: string) {
  return (env: Record<string, string>) => execa('bash', [script], {reject: false, extendEnv: false,
    env: {PATH: `${bin}:${process.env.PATH}`, GYM_HOST: '127.0.0.1', NEMO_GYM_IMAGE: 'x', NEMO_GYM_CALLBACK_ALLOWED_NETWORKS: '10.0.0.0/8', ...env}})
}

/** A docker that builds, finds no container and records the arguments of `docker create` (then stops the script with 97). */
async function recordingDocker(): Promise<{bin: string; createArgs: () => Promise<string[]>}> {
  const bin = await mkdtemp(path.join(os.tmpdir(), 'gr-docker-bin-'))
  const created = path.join(bin, 'create-args')
  await writeFile(path.join(bin, 'docker'), `#!/bin/sh
case "$1 $2" in
  "image inspect") echo sha256:0123456789abcdef0123; exit 0 ;;
  "container inspect") exit 1 ;;
esac
case "$1" in
  build|run) exit 0 ;;
  create) shift; printf '%s\\n' "$@" > '${created}'; exit 97 ;;
esac
exit 96
`, {mode: 0o755})
  return {bin, createArgs: async () => (await readFile(created, 'utf8')).split('\n')}
}

/** A stand-in model endpoint on 127.0.0.1 that lists judge-8b at /v1/models and records each request. */
async function judgeModelsEndpoint(): Promise<{port: number; served: string[]; close: () => Promise<unknown>}> {
  const served: string[] = []
  const judge = http.createServer((req, res) => {
    served.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''}`)
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify({object: 'list', data: [{id: 'judge-8b', object: 'model'}]}))
  })
  await new Promise<void>((resolve) => judge.listen(0, '127.0.0.1', resolve))
  return {port: (judge.address() as AddressInfo).port, served, close: () => new Promise((resolve) => judge.close(resolve))}
}

describe('gymrecipe new', () => {
  it('generates the seven files and recipe.yaml from the calendar config, then verify --level static passes', async () => {
    const relax = await relaxRoot()
    const created = await runCli(newArgs('calendar-v2', relax))
    expect(created.exitCode).toBe(0)
    const dir = path.join(relax, 'examples/nemo_gym_agentic/recipes/calendar-v2')
    expect(created.json.dir).toBe(dir)
    expect(created.json.files.map((f: any) => f.name).sort()).toEqual(
      ['PITFAIL.md', 'README.md', 'env.sh', 'prepare_calendar_v2.sh', 'recipe.yaml', 'run-qwen3-4B-8xgpu-nemo-gym-calendar-v2.sh', 'start_calendar_v2_gym.sh', 'verify_calendar_v2.py'].sort(),
    )
    const contract = parse(await readFile(path.join(dir, 'recipe.yaml'), 'utf8'))
    // Graph names come from the YAML keys of the Gym config.
    expect(contract.gym.agent).toEqual({name: 'calendar_simple_agent', type: 'simple_agent', max_steps: null})
    expect(contract.gym.resources_server).toEqual({name: 'calendar', implementation: 'calendar'})
    expect(contract.data.source).toEqual({type: 'huggingface', repo_id: 'nvidia/Nemotron-RL-agent-calendar_scheduling', artifact: 'train.jsonl'})
    expect(contract.data.verifier_fields).toEqual(['responses_create_params.input', 'exp_cal_state'])
    expect(Object.keys(contract.generated.files)).toHaveLength(7)
    expect((await stat(path.join(dir, 'start_calendar_v2_gym.sh'))).mode & 0o111).toBeTruthy()

    const verified = await runCli(['verify', 'calendar-v2', '--level', 'static', '--relax-root', relax, '--gym-root', snapshotRoot, '--json'])
    expect(verified.exitCode).toBe(0)
    expect(verified.json.status).toBe('pass')
    expect(verified.json.rungs[0].checks.every((c: any) => c.status === 'pass')).toBe(true)
  })

  it('--from workplace-assistant keeps the stateful contract: max_steps 6, cleanup URLs, tools, a deterministic trial', async () => {
    const relax = await relaxRoot()
    const created = await runCli(newArgs('my-tools', relax, WORKPLACE, ['--from', 'workplace-assistant']))
    expect(created.exitCode).toBe(0)
    const c = created.json.contract
    expect(c.archetype).toBe('stateful-tools')
    expect(c.gym.agent).toEqual({name: 'workplace_assistant_simple_agent', type: 'simple_agent', max_steps: 6})
    expect(c.gateway.cleanup).toEqual({server: 'resource', path: '/cleanup/{rollout_id}'})
    expect(c.data.tools).toBe(true)
    expect(c.data.verifier_fields).toEqual(expect.arrayContaining(['responses_create_params.tools', 'ground_truth', 'category', 'environment_name', 'id']))
    expect(c.trial.expect.tool_result_history).toEqual([0, 1, 2])
    const start = await readFile(path.join(created.json.dir, 'start_my_tools_gym.sh'), 'utf8')
    expect(start).toContain('for key in ("abort_url", "force_cleanup_url", "cleanup_probe_url")')
    const verified = await runCli(['verify', 'my-tools', '--level', 'static', '--relax-root', relax, '--json'])
    expect(verified.exitCode).toBe(0)
  })

  it('regenerating a built-in reproduces its proven ports and names when the checkout has room', async () => {
    const relax = await relaxRoot()
    const r = await runCli(newArgs('workplace-assistant', relax, WORKPLACE, ['--from', 'workplace-assistant']))
    expect(r.exitCode).toBe(0)
    expect(r.json.contract.service).toMatchObject({gateway_port: 29000, container: 'nemo-gym-workplace', image: 'relax-nemo-gym:workplace-assistant'})
    expect(r.json.contract.ray).toMatchObject({gcs_port: 6382, dashboard_port: 28365})
  })

  it('picks a port block that no recipe in the checkout uses, and refuses a colliding --port-base', async () => {
    const relax = await relaxRoot()
    const first = await runCli(newArgs('first', relax))
    const second = await runCli(newArgs('second', relax))
    expect(first.exitCode).toBe(0)
    expect(second.exitCode).toBe(0)
    const a = first.json.contract
    const b = second.json.contract
    expect(b.service.gateway_port).not.toBe(a.service.gateway_port)
    expect(b.ray.gcs_port).not.toBe(a.ray.gcs_port)
    for (const c of [a, b]) {
      expect(c.service.gateway_port + 3).toBeLessThan(32768)
      expect(c.ray.max_worker_port).toBeLessThan(32768)
    }

    const clash = await runCli(newArgs('third', relax, CALENDAR, ['--port-base', String(a.service.gateway_port + 2)]))
    expect(clash.exitCode).toBe(2)
    expect(clash.json.error.code).toBe('E_CONTRACT_INVALID')
    expect(clash.json.error.message).toContain('collides with recipe "first"')

    const ephemeral = await runCli(newArgs('fourth', relax, CALENDAR, ['--port-base', '40000']))
    expect(ephemeral.exitCode).toBe(2)
    expect(ephemeral.json.error.message).toContain('overlaps the ephemeral range 32768-60999')
  })

  it('--gcs-port moves the private Ray; one another recipe holds is refused, and --update keeps the chosen one', async () => {
    const relax = await relaxRoot()
    const first = await runCli(newArgs('first', relax, CALENDAR, ['--gcs-port', '7421']))
    expect(first.exitCode, first.stderr).toBe(0)
    expect(first.json.contract.ray.gcs_port).toBe(7421)
    const env = await readFile(path.join(relax, 'examples/nemo_gym_agentic/recipes/first/start_first_gym.sh'), 'utf8')
    expect(env).toContain('7421')
    const clash = await runCli(newArgs('second', relax, CALENDAR, ['--gcs-port', '7421']))
    expect(clash.exitCode).toBe(2)
    expect(clash.json.error.message).toContain('collides with recipe "first"')
    const updated = await runCli(newArgs('first', relax, CALENDAR, ['--update', '--port-base', '21000']))
    expect(updated.exitCode, updated.stderr).toBe(0)
    expect(updated.json.contract.ray.gcs_port).toBe(7421)
  })

  it('never silently overwrites a file edited by hand: refuses with the list, --dry-run shows the diff, --force overwrites', async () => {
    const relax = await relaxRoot()
    const created = await runCli(newArgs('cal', relax))
    const env = path.join(created.json.dir, 'env.sh')
    const edited = `${await readFile(env, 'utf8')}\nexport GYM_HOST=10.1.2.3\n`
    await writeFile(env, edited)

    const again = await runCli(newArgs('cal', relax))
    expect(again.exitCode).toBe(3)
    expect(again.json.error.code).toBe('E_RECIPE_CONFLICT')
    expect(again.json.error.details.conflicts).toEqual(['env.sh'])
    expect(await readFile(env, 'utf8')).toBe(edited)

    const plan = await runCli(newArgs('cal', relax, CALENDAR, ['--dry-run']))
    expect(plan.exitCode).toBe(3)
    const envPlan = plan.json.files.find((f: any) => f.name === 'env.sh')
    expect(envPlan.action).toBe('conflict')
    expect(envPlan.diff).toContain('-export GYM_HOST=10.1.2.3')
    expect(await readFile(env, 'utf8')).toBe(edited)

    const forced = await runCli(newArgs('cal', relax, CALENDAR, ['--force']))
    expect(forced.exitCode).toBe(0)
    expect(await readFile(env, 'utf8')).not.toContain('10.1.2.3')
  })

  it('regenerates files nobody edited without asking', async () => {
    const relax = await relaxRoot()
    const created = await runCli(newArgs('cal', relax))
    const rerun = await runCli(newArgs('cal', relax))
    expect(rerun.exitCode).toBe(0)
    expect(rerun.json.files.every((f: any) => f.action === 'unchanged')).toBe(true)
    expect(created.json.contract.service.gateway_port).toBe(rerun.json.contract.service.gateway_port)
  })

  it.each([
    ['../escape', 'invalid recipe id'],
    ['Calendar', 'invalid recipe id'],
    ['a/b', 'invalid recipe id'],
    ["x';rm -rf /", 'invalid recipe id'],
  ])('rejects the recipe id %j', async (id, message) => {
    const relax = await relaxRoot()
    const r = await runCli(newArgs(id, relax))
    expect(r.exitCode).toBe(2)
    expect(r.json.error.message).toContain(message)
  })

  it('requires --agent when the config defines several agents, and lists the choices', async () => {
    const relax = await relaxRoot()
    const r = await runCli(['new', 'multi', '--gym-root', snapshotRoot, '--gym-config', CALENDAR, '--gym-config', WORKPLACE, '--relax-root', relax, '--json'])
    expect(r.exitCode).toBe(2)
    expect(r.json.error.message).toContain('choose one with --agent')
    expect(r.json.error.hint).toContain('calendar_simple_agent')
    expect(r.json.error.hint).toContain('workplace_assistant_simple_agent')
    const chosen = await runCli(['new', 'multi', '--gym-root', snapshotRoot, '--gym-config', CALENDAR, '--gym-config', WORKPLACE, '--relax-root', relax, '--agent', 'calendar_simple_agent', '--json'])
    expect(chosen.exitCode).toBe(0)
    expect(chosen.json.contract.gym.config_paths).toEqual([CALENDAR, WORKPLACE])
  })

  it('refuses a non-training split unless --smoke, and then records it', async () => {
    const relax = await relaxRoot()
    const refused = await runCli(newArgs('cal-example', relax, CALENDAR, ['--dataset', 'example']))
    expect(refused.exitCode).toBe(2)
    expect(refused.json.error.message).toContain('not training data')
    const smoke = await runCli(newArgs('cal-example', relax, CALENDAR, ['--dataset', 'example', '--smoke']))
    expect(smoke.exitCode).toBe(0)
    expect(smoke.json.contract.data).toMatchObject({split: 'example', smoke: true, source: {type: 'bundled', path: 'environments/calendar/data/example.jsonl'}, raw_filename: 'cal_example_example.jsonl'})
    expect(smoke.json.notes.join(' ')).toContain('SMOKE')
  })

  it('takes verifier examples from the example rollouts when no built-in knows the environment; when there are none, makes the recipe with the verifier pending', async () => {
    const relax = await relaxRoot()
    const fromRollouts = await runCli(newArgs('math-rollouts', relax, 'resources_servers/math_with_judge/configs/math_with_judge.yaml', ['--dry-run']))
    expect(fromRollouts.exitCode, fromRollouts.stderr).toBe(0)
    expect(fromRollouts.json.contract.verifier).toMatchObject({kind: 'direct', task: {file: 'resources_servers/math_with_judge/data/example.jsonl'}, payload: null, success_reward: 1})
    expect(fromRollouts.json.notes.join('\n')).toMatch(/verifier examples from the example rollouts: correct resources_servers\/math_with_judge\/data\/example_rollouts\.jsonl:\d+ \(reward 1\)/)
    const r = await runCli(newArgs('multi', relax, 'resources_servers/example_multi_step/configs/example_multi_step.yaml'))
    expect(r.exitCode, r.stderr).toBe(0)
    expect(r.json.contract.verifier).toMatchObject({kind: 'pending', correct: [], wrong: [], task: null, payload: null})
    expect(r.json.contract.verifier.pending).toMatch(/^no known-correct and known-wrong outputs for example_multi_step: no built-in knows this environment, and no example rollouts \(data\/\*rollout\*\.jsonl\)/)
    expect(r.json.contract.trial).toBeNull()
    expect(r.json.verifier_pending).toBe(r.json.contract.verifier.pending)
    expect(r.envelope.warnings.join('\n')).toContain('verifier pending: no known-correct and known-wrong outputs for example_multi_step')
    expect(r.envelope.warnings.join('\n')).toContain('gymrecipe new multi --update --verifier <file.yaml>')
    // The files and data do not wait for the examples: the static rung passes; the generated verifier says what is missing and exits 3.
    const staticRung = await runCli(['verify', 'multi', '--level', 'static', '--relax-root', relax, '--json'])
    expect(staticRung.exitCode, staticRung.stdout).toBe(0)
    const pendingRun = await execa('python3', [path.join(r.json.dir, 'verify_multi.py')], {reject: false})
    expect(pendingRun.exitCode).toBe(3)
    expect(pendingRun.stderr).toBe(`verifier pending: ${r.json.contract.verifier.pending}`)
    expect(await readFile(path.join(r.json.dir, 'README.md'), 'utf8')).toContain('> **Verifier pending.**')
    const verifier = path.join(relax, 'math-verifier.yaml')
    await writeFile(verifier, `verifier:
  kind: direct
  python: /opt/nemo-gym/resources_servers/math_with_judge/.venv/bin/python
  task: null
  payload:
    responses_create_params: {input: [{role: user, content: "What is 3 + 5? Put the answer in \\\\boxed{}."}]}
    question: What is 3 + 5?
    expected_answer: "8"
  correct: [{text: "\\\\boxed{8}"}]
  wrong: [{text: "\\\\boxed{9}"}]
  success_reward: 1.0
`)
    // Given, the examples replace the pending verifier.
    const given = await runCli(['new', 'multi', '--gym-root', snapshotRoot, '--relax-root', relax, '--update', '--verifier', verifier, '--json'])
    expect(given.exitCode, given.stderr).toBe(0)
    expect(given.json.contract.verifier).toMatchObject({kind: 'direct', correct: [{text: '\\boxed{8}'}], wrong: [{text: '\\boxed{9}'}]})
    expect(given.json.contract.verifier.pending).toBeUndefined()
    expect(given.json.verifier_pending).toBeNull()
    const ok = await runCli(newArgs('math', relax, 'resources_servers/math_with_judge/configs/math_with_judge.yaml', ['--verifier', verifier]))
    expect(ok.exitCode).toBe(0)
    expect(ok.json.contract.gym.resources_server).toEqual({name: 'math_with_judge', implementation: 'math_with_judge'})
    expect(ok.json.contract.data.verifier_fields).toEqual(['responses_create_params.input', 'question', 'expected_answer'])
    const script = await readFile(path.join(ok.json.dir, 'verify_math.py'), 'utf8')
    expect(script).toContain('boxed{8}')
  })

  it('a benchmark declares no train split: the refusal names its resources server\'s example rows, which make a smoke run unless --training-data', async () => {
    const relax = await relaxRoot()
    const gsm8k = 'benchmarks/gsm8k/config.yaml'
    const examples = path.join(snapshotRoot, 'resources_servers/math_with_judge/data/example.jsonl')
    const refused = await runCli(newArgs('gsm8k', relax, gsm8k, ['--dry-run']))
    expect(refused.exitCode).toBe(2)
    expect(refused.json.error.message).toBe('agent gsm8k_math_with_judge_simple_agent declares no train dataset')
    expect(refused.json.error.hint).toContain('--data <tasks.jsonl>')
    expect(refused.json.error.hint).toContain(`--data ${examples} (the checkout's example rows; a smoke run)`)
    expect(refused.json.error.details.example_rows).toBe(examples)

    const smoke = await runCli(newArgs('gsm8k', relax, gsm8k, ['--data', examples]))
    expect(smoke.exitCode, smoke.stderr).toBe(0)
    expect(smoke.json.contract.data).toMatchObject({split: 'example', smoke: true, source: {type: 'file', path: examples}, raw_filename: 'gsm8k_example.jsonl'})
    expect(smoke.json.contract.data.verifier_fields).toEqual(['responses_create_params.input', 'question', 'expected_answer'])
    expect(smoke.json.notes.join('\n')).toContain("SMOKE: it is the Gym checkout's own example data")
    // Verifier examples from the resources server's rollouts, matched to its example rows.
    expect(smoke.json.contract.verifier.task).toMatchObject({file: 'resources_servers/math_with_judge/data/example.jsonl'})
    // Both servers _inherit_from the generic ones: the pinned Gym merges a host and port into them only
    // through those sources (set on the instance itself, it stops with "Key 'port' is not in struct").
    expect(smoke.json.contract.gym.agent).toMatchObject({name: 'gsm8k_math_with_judge_simple_agent', placed_via: 'math_with_judge_simple_agent'})
    expect(smoke.json.contract.gym.resources_server).toEqual({name: 'gsm8k_math_with_judge_resources_server', implementation: 'math_with_judge', placed_via: 'math_with_judge'})
    const start = await readFile(path.join(smoke.json.dir, 'start_gsm8k_gym.sh'), 'utf8')
    expect(start).toContain('++math_with_judge_simple_agent.responses_api_agents.simple_agent.port="${agent_port}"')
    expect(start).toContain('++math_with_judge.resources_servers.math_with_judge.port="${resource_port}"')
    expect(start).not.toContain('++gsm8k_math_with_judge_resources_server.')
    const staticRung = await runCli(['verify', 'gsm8k', '--level', 'static', '--relax-root', relax, '--gym-root', snapshotRoot, '--json'])
    expect(staticRung.exitCode, staticRung.stdout).toBe(0)
    // Placed under its own name, the static rung names what recipe.yaml records instead.
    await writeFile(path.join(smoke.json.dir, 'start_gsm8k_gym.sh'), start.replaceAll('++math_with_judge.resources_servers.', '++gsm8k_math_with_judge_resources_server.resources_servers.'))
    const renamed = await runCli(['verify', 'gsm8k', '--level', 'static', '--relax-root', relax, '--gym-root', snapshotRoot, '--json'])
    const graphNames = renamed.json.rungs[0].checks.filter((c: {id: string}) => c.id === 'static.graph-names').map((c: {message: string}) => c.message)
    expect(graphNames).toContain('start script does not start resources_servers gsm8k_math_with_judge_resources_server (math_with_judge) recorded in recipe.yaml through math_with_judge, the instance it inherits from (Gym takes a host and port for it only there)')

    const told = await runCli(newArgs('gsm8k', relax, gsm8k, ['--data', examples, '--training-data', '--force']))
    expect(told.exitCode, told.stderr).toBe(0)
    expect(told.json.contract.data).toMatchObject({split: 'train', smoke: false, raw_filename: 'gsm8k_train.jsonl'})
    // --update keeps the user's word.
    const updated = await runCli(['new', 'gsm8k', '--gym-root', snapshotRoot, '--relax-root', relax, '--update', '--json'])
    expect(updated.exitCode, updated.stderr).toBe(0)
    expect(updated.json.contract.data).toMatchObject({split: 'train', smoke: false})

    // A file of the user's own, outside the checkout, is training data as they say.
    const own = path.join(relax, 'my-rows.jsonl')
    await writeFile(own, await readFile(examples))
    const mine = await runCli(newArgs('gsm8k-own', relax, gsm8k, ['--data', own, '--dry-run']))
    expect(mine.exitCode, mine.stderr).toBe(0)
    expect(mine.json.contract.data).toMatchObject({split: 'train', smoke: false})

    const orphan = await runCli(['new', 'x', '--gym-root', snapshotRoot, '--gym-config', gsm8k, '--relax-root', relax, '--training-data'])
    expect(orphan.exitCode).toBe(2)
    expect(orphan.stderr).toContain('--data')
  }, 180_000)

  it('a benchmark whose checkout has no example rows takes its verifier fields from the --verifier payload, never from calendar', async () => {
    const relax = await relaxRoot()
    const gsm8k = 'benchmarks/gsm8k/config.yaml'
    // A checkout without the resources server's example rows (and rollouts).
    const gymRoot = await mkdtemp(path.join(os.tmpdir(), 'gr-gym-'))
    await cp(snapshotRoot, gymRoot, {recursive: true})
    await rm(path.join(gymRoot, 'resources_servers/math_with_judge/data'), {recursive: true})
    const payloadFile = path.join(relax, 'gsm8k-verifier.yaml')
    await writeFile(payloadFile, `verifier:
  kind: direct
  python: /opt/nemo-gym/resources_servers/math_with_judge/.venv/bin/python
  task: null
  payload:
    responses_create_params: {input: [{role: user, content: "What is 3 + 5?"}]}
    question: What is 3 + 5?
    expected_answer: "8"
  correct: [{text: "\\\\boxed{8}"}]
  wrong: [{text: "\\\\boxed{9}"}]
  success_reward: 1.0
`)
    const ok = await runCli(newArgs('gsm8k', relax, gsm8k, ['--verifier', payloadFile, '--smoke', '--dry-run'], gymRoot))
    expect(ok.exitCode).toBe(0)
    expect(ok.json.contract.data.verifier_fields).toEqual(['responses_create_params.input', 'question', 'expected_answer'])
    expect(ok.json.contract.gym.gateway_config).toBe('gsm8k-math-with-judge-resources-server-v1')

    // A task-based verifier says nothing about the row fields: gymrecipe asks instead of guessing.
    const taskFile = path.join(relax, 'gsm8k-task.yaml')
    const taskVerifier = (await readFile(payloadFile, 'utf8')).replace(/ {2}task: null\n {2}payload:\n( {4}.*\n)+/, '  task: {file: benchmarks/gsm8k/data/gsm8k_benchmark.jsonl, row: 0}\n  payload: null\n')
    await writeFile(taskFile, taskVerifier)
    const asked = await runCli(newArgs('gsm8k', relax, gsm8k, ['--verifier', taskFile, '--smoke', '--dry-run'], gymRoot))
    expect(asked.exitCode).toBe(2)
    expect(asked.json.error.code).toBe('E_VERIFIER_FIELDS_REQUIRED')
    await writeFile(taskFile, `${taskVerifier}verifier_fields: [responses_create_params.input, question, expected_answer]\n`)
    const told = await runCli(newArgs('gsm8k', relax, gsm8k, ['--verifier', taskFile, '--smoke', '--dry-run'], gymRoot))
    expect(told.exitCode).toBe(0)
    expect(told.json.contract.data.verifier_fields).toEqual(['responses_create_params.input', 'question', 'expected_answer'])
  })

  it('a judge that is the policy model (the model being trained) is refused unless --policy-serves judge, then recorded', async () => {
    const relax = await relaxRoot()
    const config = 'resources_servers/math_with_judge/configs/math_with_judge.yaml'
    const gymRoot = await editedGym(config, (text) => text.replace('should_use_judge: false', 'should_use_judge: true'))

    const refused = await runCli(newArgs('judged', relax, config, [], gymRoot))
    expect(refused.exitCode).toBe(2)
    expect(refused.json.error).toMatchObject({code: 'E_POLICY_AS_SECOND_MODEL', message: 'math_with_judge.judge_model_server is the policy model: under Relax that is the model being trained, so it would serve as its own judge'})
    expect(refused.json.error.hint).toContain('--policy-serves judge')

    const accepted = await runCli(newArgs('judged', relax, config, ['--policy-serves', 'judge'], gymRoot))
    expect(accepted.exitCode, accepted.stderr).toBe(0)
    expect(accepted.json.contract.gym.models).toEqual([{role: 'judge', owner: 'math_with_judge', key: 'judge_model_server', server: 'policy_model', policy: true, enabled: true}])
    expect(accepted.json.notes.join('\n')).toContain('judge math_with_judge.judge_model_server is the policy model, i.e. the model being trained (accepted with --policy-serves judge)')
    const updated = await runCli(['new', 'judged', '--gym-root', gymRoot, '--relax-root', relax, '--update', '--json'])
    expect(updated.exitCode, updated.stderr).toBe(0)
    expect(updated.json.contract.gym.models).toHaveLength(1)

    // The pinned config switches the judge off: nothing to accept.
    const off = await runCli(newArgs('unjudged', relax, config, ['--dry-run']))
    expect(off.exitCode, off.stderr).toBe(0)
    expect(off.json.contract.gym.models).toEqual([{role: 'judge', owner: 'math_with_judge', key: 'judge_model_server', server: 'policy_model', policy: true, enabled: false}])
  })

  it('--schedule hybrid records Relax\'s hybrid-async layout; the static rung passes; --update keeps it', async () => {
    const relax = await relaxRoot()
    const made = await runCli(newArgs('workplace-hybrid', relax, WORKPLACE, ['--from', 'workplace-assistant', '--schedule', 'hybrid']))
    expect(made.exitCode, made.stderr).toBe(0)
    const training = made.json.contract.training
    expect(training.schedule).toEqual({mode: 'hybrid', actor_gpus: 4, rollout_gpus: 4, max_staleness: 2, num_iters_per_train_update: 1, num_data_storage_units: 1, use_health_check: true})
    expect({tp: training.perf.tensor_parallel, engine: training.sglang.num_gpus_per_engine, breaker: training.sglang.router_disable_circuit_breaker}).toEqual({tp: 4, engine: 4, breaker: true})
    const run = await readFile(path.join(made.json.dir, 'run-qwen3-4B-8xgpu-nemo-gym-workplace-hybrid.sh'), 'utf8')
    expect(run).toContain(`SCHEDULE_ARGS=(\n  --resource '{"actor":[1,4],"rollout":[1,4]}'\n  --max-staleness 2\n  --num-data-storage-units 1\n  --num-iters-per-train-update 1\n  --hybrid\n  --use-health-check\n)`)
    const verified = await runCli(['verify', 'workplace-hybrid', '--level', 'static', '--relax-root', relax, '--gym-root', snapshotRoot, '--json'])
    expect(verified.exitCode, verified.stdout).toBe(0)
    const updated = await runCli(['new', 'workplace-hybrid', '--gym-root', snapshotRoot, '--relax-root', relax, '--update', '--json'])
    expect(updated.exitCode, updated.stderr).toBe(0)
    expect(updated.json.files.every((f: {action: string}) => f.action === 'unchanged')).toBe(true)

    // A hand edit recipe.yaml's schedule that breaks an invariant is caught by the static rung.
    const yamlPath = path.join(made.json.dir, 'recipe.yaml')
    await writeFile(yamlPath, (await readFile(yamlPath, 'utf8')).replace('max_staleness: 2', 'max_staleness: 0'))
    const broken = await runCli(['verify', 'workplace-hybrid', '--level', 'static', '--relax-root', relax, '--gym-root', snapshotRoot, '--json'])
    expect(broken.exitCode).not.toBe(0)
    expect(JSON.stringify(broken.json)).toContain('hybrid with max_staleness 0')

    const one = await runCli(newArgs('one-gpu', relax, WORKPLACE, ['--from', 'workplace-assistant', '--schedule', 'hybrid', '--gpus', '1', '--dry-run']))
    expect(one.exitCode).toBe(2)
    expect(one.json.error.message).toContain('a hybrid schedule needs at least 2 GPUs')
  })

  it('a judge with no server of its own gets one gymrecipe adds: endpoint in env.sh, checked by start before Docker', async () => {
    const relax = await relaxRoot()
    const config = 'resources_servers/math_with_judge/configs/math_with_judge.yaml'
    const gymRoot = await editedGym(config, (text) => text.replace('should_use_judge: false', 'should_use_judge: true'))
    // The checkout's own model implementation the judge server is an instance of (a config of the shape Gym ships).
    await mkdir(path.join(gymRoot, 'responses_api_models/vllm_model/configs'), {recursive: true})
    await writeFile(path.join(gymRoot, 'responses_api_models/vllm_model/configs/vllm_model.yaml'), `policy_model:
  responses_api_models:
    vllm_model:
      entrypoint: app.py
      base_url: \${policy_base_url}
      api_key: \${policy_api_key}
      model: \${policy_model_name}
      uses_reasoning_parser: true
      extra_body: null
      default_headers: {}
`)
    const refused = await runCli(newArgs('judged', relax, config, [], gymRoot))
    expect(refused.json.error.code).toBe('E_POLICY_AS_SECOND_MODEL')
    expect(refused.json.error.hint).toContain('--second-model judge')

    const made = await runCli(newArgs('judged', relax, config, ['--second-model', 'judge'], gymRoot))
    expect(made.exitCode, made.stderr).toBe(0)
    const contract = made.json.contract
    expect(contract.gym.model_servers).toEqual([{
      name: 'judge_model', type: 'vllm_model', role: 'judge', env_prefix: 'JUDGE_MODEL',
      fields: {entrypoint: 'app.py', base_url: '${oc.env:JUDGE_MODEL_BASE_URL}', api_key: '${oc.env:JUDGE_MODEL_API_KEY,EMPTY}', model: '${oc.env:JUDGE_MODEL_MODEL_NAME}', uses_reasoning_parser: true, extra_body: null, default_headers: {}},
      binds: ['math_with_judge.resources_servers.math_with_judge.judge_model_server.name'],
    }])
    expect(contract.gym.env_vars).toEqual([{name: 'JUDGE_MODEL_BASE_URL', required: true}, {name: 'JUDGE_MODEL_MODEL_NAME', required: true}, {name: 'JUDGE_MODEL_API_KEY', required: false}])
    expect(contract.gym.venv_dirs).toContain('responses_api_models/vllm_model')
    expect(made.json.notes.join('\n')).toContain('judge model server judge_model (vllm_model) is added by gymrecipe on the Gateway port + 4')
    const dir = made.json.dir
    const start = await readFile(path.join(dir, 'start_judged_gym.sh'), 'utf8')
    expect(start).toContain(`'++math_with_judge.resources_servers.math_with_judge.judge_model_server.name=judge_model'`)
    expect(start).toContain(`++judge_model.responses_api_models.vllm_model.port="$((gateway_port + 4))"`)
    const envSh = await readFile(path.join(dir, 'env.sh'), 'utf8')
    expect(envSh).toContain('export JUDGE_MODEL_BASE_URL="${JUDGE_MODEL_BASE_URL:-}"')
    const verified = await runCli(['verify', 'judged', '--level', 'static', '--relax-root', relax, '--gym-root', gymRoot, '--json'])
    expect(verified.exitCode, verified.stdout).toBe(0)
    const update = await runCli(['new', 'judged', '--gym-root', gymRoot, '--relax-root', relax, '--update', '--json'])
    expect(update.exitCode, update.stderr).toBe(0)
    expect(update.json.contract.gym.model_servers).toHaveLength(1)

    // start asks the judge for its models before anything touches Docker (a docker that only says it was called).
    const runStart = startScriptRunner(path.join(dir, 'start_judged_gym.sh'), await dockerThatOnlySaysItWasCalled())
    const {port, served, close} = await judgeModelsEndpoint()
    try {
      const unset = await runStart({})
      expect(unset.exitCode).toBe(2)
      expect(unset.stderr).toContain('Set JUDGE_MODEL_BASE_URL in')
      const wrongModel = await runStart({JUDGE_MODEL_BASE_URL: `http://127.0.0.1:${port}/v1`, JUDGE_MODEL_MODEL_NAME: 'judge-70b', JUDGE_MODEL_API_KEY: 'sk-judge-secret'})
      expect(wrongModel.exitCode).toBe(3)
      expect(wrongModel.stderr).toContain(`The judge model server judge_model at http://127.0.0.1:${port}/v1 does not serve judge-70b (JUDGE_MODEL_MODEL_NAME in env.sh); it serves: judge-8b`)
      expect(wrongModel.stderr + wrongModel.stdout).not.toContain('sk-judge-secret')
      expect(served.at(-1)).toBe('GET /v1/models Bearer sk-judge-secret')
      const right = await runStart({JUDGE_MODEL_BASE_URL: `http://127.0.0.1:${port}/v1/`, JUDGE_MODEL_MODEL_NAME: 'judge-8b'})
      expect(right.stdout).toContain(`The judge model server judge_model answers at http://127.0.0.1:${port}/v1/ and serves judge-8b`)
      expect(right.stderr).toContain('docker was called')
      expect(served.at(-1)).toBe('GET /v1/models Bearer EMPTY')
    } finally {
      await close()
    }
    const closed = await runStart({JUDGE_MODEL_BASE_URL: `http://127.0.0.1:${port}/v1`, JUDGE_MODEL_MODEL_NAME: 'judge-8b'})
    expect(closed.exitCode).toBe(3)
    expect(closed.stderr).toContain(`The judge model server judge_model does not answer at http://127.0.0.1:${port}/v1/models (JUDGE_MODEL_BASE_URL in env.sh)`)
    expect(closed.stderr).not.toContain('docker was called')
  })

  it('a judge whose config takes the policy endpoint as plain fields gets its own endpoint from env.sh, checked by start before Docker', async () => {
    const relax = await relaxRoot()
    const config = 'resources_servers/math_with_judge/configs/math_with_judge.yaml'
    const gymRoot = await editedGym(config, (text) => text
      .replace('      judge_model_server:\n        type: responses_api_models\n        name: policy_model\n', '      judge_base_url: ${policy_base_url}\n      judge_api_key: ${policy_api_key}\n      judge_model: ${policy_model_name}\n      judge_temperature: 0.7\n')
      .replace('should_use_judge: false', 'should_use_judge: true'))
    const refused = await runCli(newArgs('flatjudge', relax, config, ['--dry-run'], gymRoot))
    expect(refused.json.error.code).toBe('E_POLICY_AS_SECOND_MODEL')
    expect(refused.json.error.message).toBe('math_with_judge.judge_base_url is the policy model (through ${policy_…}): under Relax that is the model being trained, so it would serve as its own judge')

    const made = await runCli(newArgs('flatjudge', relax, config, ['--second-model', 'judge'], gymRoot))
    expect(made.exitCode, made.stderr).toBe(0)
    const contract = made.json.contract
    expect(contract.gym.endpoints).toEqual([{
      role: 'judge', owner: 'math_with_judge', env_prefix: 'JUDGE',
      overrides: {
        'math_with_judge.resources_servers.math_with_judge.judge_base_url': '${oc.env:JUDGE_BASE_URL}',
        'math_with_judge.resources_servers.math_with_judge.judge_api_key': '${oc.env:JUDGE_API_KEY,EMPTY}',
        'math_with_judge.resources_servers.math_with_judge.judge_model': '${oc.env:JUDGE_MODEL_NAME}',
      },
    }])
    expect(contract.gym.model_servers).toBeUndefined()
    expect(contract.gym.env_vars).toEqual([{name: 'JUDGE_BASE_URL', required: true}, {name: 'JUDGE_MODEL_NAME', required: true}, {name: 'JUDGE_API_KEY', required: false}])
    expect(made.json.notes.join('\n')).toContain('judge of math_with_judge is moved off the policy: its endpoint fields (judge_base_url, judge_api_key, judge_model) read JUDGE_BASE_URL and JUDGE_MODEL_NAME from env.sh')
    const dir = made.json.dir
    const start = await readFile(path.join(dir, 'start_flatjudge_gym.sh'), 'utf8')
    const q = "'\\''"
    expect(start).toContain(`'++math_with_judge.resources_servers.math_with_judge.judge_base_url=${q}\${oc.env:JUDGE_BASE_URL}${q}'`)
    expect(start).toContain(`'++math_with_judge.resources_servers.math_with_judge.judge_model=${q}\${oc.env:JUDGE_MODEL_NAME}${q}'`)
    expect(start).not.toContain('judge_temperature')
    expect(start).toContain("probe_model_server judge 'math_with_judge.judge' JUDGE_BASE_URL JUDGE_MODEL_NAME JUDGE_API_KEY")
    const verified = await runCli(['verify', 'flatjudge', '--level', 'static', '--relax-root', relax, '--gym-root', gymRoot, '--json'])
    expect(verified.exitCode, verified.stdout).toBe(0)
    const update = await runCli(['new', 'flatjudge', '--gym-root', gymRoot, '--relax-root', relax, '--update', '--json'])
    expect(update.exitCode, update.stderr).toBe(0)
    expect(update.json.contract.gym.endpoints).toEqual(contract.gym.endpoints)
    const policyJudge = await runCli(newArgs('flatjudge2', relax, config, ['--policy-serves', 'judge', '--dry-run'], gymRoot))
    expect(policyJudge.exitCode, policyJudge.stderr).toBe(0)
    expect(policyJudge.json.contract.gym.endpoints).toBeUndefined()

    // start asks the judge endpoint for its models before anything touches Docker.
    const runStart = startScriptRunner(path.join(dir, 'start_flatjudge_gym.sh'), await dockerThatOnlySaysItWasCalled())
    const {port, close} = await judgeModelsEndpoint()
    try {
      const unset = await runStart({})
      expect(unset.exitCode).toBe(2)
      expect(unset.stderr).toContain('Set JUDGE_BASE_URL in')
      const wrongModel = await runStart({JUDGE_BASE_URL: `http://127.0.0.1:${port}/v1`, JUDGE_MODEL_NAME: 'judge-70b', JUDGE_API_KEY: 'sk-judge-secret'})
      expect(wrongModel.exitCode).toBe(3)
      expect(wrongModel.stderr).toContain(`The judge model server math_with_judge.judge at http://127.0.0.1:${port}/v1 does not serve judge-70b (JUDGE_MODEL_NAME in env.sh)`)
      expect(wrongModel.stderr + wrongModel.stdout).not.toContain('sk-judge-secret')
      const right = await runStart({JUDGE_BASE_URL: `http://127.0.0.1:${port}/v1`, JUDGE_MODEL_NAME: 'judge-8b'})
      expect(right.stdout).toContain(`The judge model server math_with_judge.judge answers at http://127.0.0.1:${port}/v1 and serves judge-8b`)
      expect(right.stderr).toContain('docker was called')
    } finally {
      await close()
    }
  }, 180_000)

  it('a value the config leaves ??? in a started server is set from an env.sh variable; a host path there is mounted read-only', async () => {
    const relax = await relaxRoot()
    const gymRoot = await editedGym(CALENDAR, (text) => text
      .replace('    simple_agent:\n      entrypoint: app.py\n', '    simple_agent:\n      entrypoint: app.py\n      container_formatter: ???\n      dataset_path: ???\n      mounts:\n      - ???\n'))
    const made = await runCli(newArgs('unsetvals', relax, CALENDAR, ['--port-base', '24300'], gymRoot))
    expect(made.exitCode, made.stderr).toBe(0)
    const contract = made.json.contract
    expect(contract.gym.unset_values).toEqual([
      {path: 'calendar_simple_agent.responses_api_agents.simple_agent.container_formatter', env: 'CALENDAR_SIMPLE_AGENT_CONTAINER_FORMATTER'},
      {path: 'calendar_simple_agent.responses_api_agents.simple_agent.dataset_path', env: 'CALENDAR_SIMPLE_AGENT_DATASET_PATH'},
    ])
    expect(contract.gym.env_vars).toEqual([{name: 'CALENDAR_SIMPLE_AGENT_CONTAINER_FORMATTER', required: true}, {name: 'CALENDAR_SIMPLE_AGENT_DATASET_PATH', required: true}])
    const notes = made.json.notes.join('\n')
    expect(notes).toMatch(/calendar_simple_agent\.responses_api_agents\.simple_agent\.dataset_path is \?\?\? in environments\/calendar\/config\.yaml:\d+; set CALENDAR_SIMPLE_AGENT_DATASET_PATH in env\.sh/)
    // A list item cannot be set by name on the command line: said, not recorded.
    expect(notes).toMatch(/calendar_simple_agent\.responses_api_agents\.simple_agent\.mounts\.0 is \?\?\? in .*; the generated start script cannot set it/)
    const dir = made.json.dir
    const start = await readFile(path.join(dir, 'start_unsetvals_gym.sh'), 'utf8')
    const q = "'\\''"
    expect(start).toContain(`'++calendar_simple_agent.responses_api_agents.simple_agent.dataset_path=${q}\${oc.env:CALENDAR_SIMPLE_AGENT_DATASET_PATH}${q}'`)
    expect(await readFile(path.join(dir, 'env.sh'), 'utf8')).toContain('# The Gym config needs calendar_simple_agent.responses_api_agents.simple_agent.dataset_path and no loaded config sets it (required)')
    const verified = await runCli(['verify', 'unsetvals', '--level', 'static', '--relax-root', relax, '--gym-root', gymRoot, '--json'])
    expect(verified.exitCode, verified.stdout).toBe(0)

    const {bin, createArgs} = await recordingDocker()
    const dataset = path.join(bin, 'swebench.jsonl')
    await writeFile(dataset, '{}\n')
    const runStart = startScriptRunner(path.join(dir, 'start_unsetvals_gym.sh'), bin)
    const unset = await runStart({CALENDAR_SIMPLE_AGENT_CONTAINER_FORMATTER: 'docker://swebench/{instance_id}'})
    expect(unset.exitCode).toBe(2)
    expect(unset.stderr).toContain('Set CALENDAR_SIMPLE_AGENT_DATASET_PATH in')
    const given = await runStart({CALENDAR_SIMPLE_AGENT_CONTAINER_FORMATTER: 'docker://swebench/{instance_id}', CALENDAR_SIMPLE_AGENT_DATASET_PATH: dataset})
    expect(given.exitCode, given.stderr).toBe(97)
    const args = await createArgs()
    expect(args).toContain(`${dataset}:${dataset}:ro`)
    expect(args).not.toContain('docker://swebench/{instance_id}:docker://swebench/{instance_id}:ro')
    expect(args.join(' ')).toContain('--env CALENDAR_SIMPLE_AGENT_CONTAINER_FORMATTER --env CALENDAR_SIMPLE_AGENT_DATASET_PATH')
  })

  it('a judge naming a server no config defines gets that server without being asked; ??? gets judge_model', async () => {
    const relax = await relaxRoot()
    const config = 'resources_servers/math_with_judge/configs/math_with_judge.yaml'
    const gymRoot = await editedGym(config, (text) => text.replace('should_use_judge: false', 'should_use_judge: true').replace('name: policy_model\n      judge_responses_create_params', 'name: genrm_model\n      judge_responses_create_params'))
    await mkdir(path.join(gymRoot, 'responses_api_models/openai_model/configs'), {recursive: true})
    await writeFile(path.join(gymRoot, 'responses_api_models/openai_model/configs/openai_model.yaml'), `policy_model:
  responses_api_models:
    openai_model:
      entrypoint: app.py
      openai_base_url: \${policy_base_url}
      openai_api_key: \${policy_api_key}
      openai_model: \${policy_model_name}
`)
    const missingType = await runCli(newArgs('genrm', relax, config, ['--dry-run'], gymRoot))
    expect(missingType.exitCode).toBe(2)
    expect(missingType.json.error.message).toContain('responses_api_models/vllm_model/configs/vllm_model.yaml')
    const made = await runCli(newArgs('genrm', relax, config, ['--second-model', 'judge=openai_model', '--dry-run'], gymRoot))
    expect(made.exitCode, made.stderr).toBe(0)
    expect(made.json.contract.gym.model_servers).toMatchObject([{name: 'genrm_model', type: 'openai_model', env_prefix: 'GENRM_MODEL', binds: [], fields: {openai_base_url: '${oc.env:GENRM_MODEL_BASE_URL}'}}])
    await writeFile(path.join(gymRoot, config), (await readFile(path.join(gymRoot, config), 'utf8')).replace('name: genrm_model', 'name: ???'))
    const unnamed = await runCli(newArgs('genrm', relax, config, ['--second-model', 'judge=openai_model', '--dry-run'], gymRoot))
    expect(unnamed.exitCode, unnamed.stderr).toBe(0)
    expect(unnamed.json.contract.gym.model_servers).toMatchObject([{name: 'judge_model', binds: ['math_with_judge.resources_servers.math_with_judge.judge_model_server.name']}])
    // The bind sets that ???: nothing else asks for it.
    expect(unnamed.json.contract.gym.unset_values).toBeUndefined()
    expect(unnamed.json.notes.join('\n')).not.toContain('judge_model_server.name is ???')
    // Switched off, the judge is never called: its ??? server name is filled with the policy, as Gym's docs start it.
    await writeFile(path.join(gymRoot, config), (await readFile(path.join(gymRoot, config), 'utf8')).replace('should_use_judge: true', 'should_use_judge: false'))
    const off = await runCli(newArgs('genrm', relax, config, ['--dry-run'], gymRoot))
    expect(off.exitCode, off.stderr).toBe(0)
    expect(off.json.contract.gym.model_servers).toBeUndefined()
    expect(off.json.contract.gym.unset_values).toEqual([{path: 'math_with_judge.resources_servers.math_with_judge.judge_model_server.name', value: 'policy_model'}])
    expect(off.json.contract.gym.env_vars).toBeUndefined()
    expect(off.json.notes.join('\n')).toContain('its judge_model_server is switched off and never called, so the start script names policy_model there')
    const badFlag = await runCli(newArgs('genrm', relax, config, ['--second-model', 'judge=llama_cpp', '--dry-run'], gymRoot))
    expect(badFlag.exitCode).toBe(2)
    expect(badFlag.json.error.message).toContain('llama_cpp is not a model server gymrecipe can define')
  })

  it("a simulator that copies policy_model is the model being trained under Relax: refused unless asked, or given a server of its own", async () => {
    const relax = await relaxRoot()
    const gymRoot = await editedGym(CALENDAR, (text) => `${text.replace('      domain: agent\n', '      domain: agent\n      user_model_server: {type: responses_api_models, name: simulator_model}\n')}\nsimulator_model:\n  _copy: policy_model\n`)
    await mkdir(path.join(gymRoot, 'responses_api_models/vllm_model/configs'), {recursive: true})
    await writeFile(path.join(gymRoot, 'responses_api_models/vllm_model/configs/vllm_model.yaml'), 'policy_model:\n  responses_api_models:\n    vllm_model:\n      entrypoint: app.py\n      base_url: ${policy_base_url}\n      api_key: ${policy_api_key}\n      model: ${policy_model_name}\n')
    const refused = await runCli(newArgs('copysim', relax, CALENDAR, ['--from', 'calendar', '--dry-run'], gymRoot))
    expect(refused.json.error.code).toBe('E_POLICY_AS_SECOND_MODEL')
    expect(refused.json.error.message).toBe('calendar.user_model_server is the policy model: under Relax that is the model being trained, so it would serve as its own simulator')
    const made = await runCli(newArgs('copysim', relax, CALENDAR, ['--from', 'calendar', '--second-model', 'simulator'], gymRoot))
    expect(made.exitCode, made.stderr).toBe(0)
    expect(made.json.contract.gym.model_servers).toMatchObject([{name: 'simulator_model_2', role: 'simulator', binds: ['calendar.resources_servers.calendar.user_model_server.name']}])
    const verified = await runCli(['verify', 'copysim', '--level', 'static', '--relax-root', relax, '--gym-root', gymRoot, '--json'])
    expect(verified.exitCode, verified.stdout).toBe(0)
    const intended = await runCli(newArgs('copysim2', relax, CALENDAR, ['--from', 'calendar', '--policy-serves', 'simulator', '--dry-run'], gymRoot))
    expect(intended.exitCode, intended.stderr).toBe(0)
  })

  it('refuses a server implemented in a nested directory, which the start line cannot place', async () => {
    const relax = await relaxRoot()
    const gymRoot = await editedGym(CALENDAR, (text) => text.replace('    simple_agent:\n', '    conversational/simple_agent:\n'))
    const r = await runCli(newArgs('nested', relax, CALENDAR, ['--from', 'calendar', '--dry-run'], gymRoot))
    expect(r.exitCode).toBe(2)
    expect(r.json.error.code).toBe('E_GYM_CONFIG')
    expect(r.json.error.message).toBe("calendar_simple_agent is implemented by responses_api_agents/conversational/simple_agent, a nested directory: the gym env start line sets each server's host and port with a Hydra override, and Hydra's override keys take no '/', so this server cannot be placed")
  })

  it('a key a ${…} reference names and no config sets is a required env.sh variable the start line sets', async () => {
    const relax = await relaxRoot()
    // As finance_sec_search reads ${tavily_api_key}, which Gym's docs have users put in env.yaml.
    const gymRoot = await editedGym(CALENDAR, (text) => text.replace('      entrypoint: app.py\n      resources_server:', '      entrypoint: app.py\n      search_key: ${search_api_key}\n      note: calls ${search_host}/v1\n      broken: ${calendar.resources_servers.calendar.nowhere}\n      resources_server:'))
    const r = await runCli(newArgs('refs', relax, CALENDAR, ['--from', 'calendar'], gymRoot))
    expect(r.exitCode, r.stderr).toBe(0)
    // Two keys of their own; a reference into a server the config defines is a config error, left to the warnings.
    expect(r.json.contract.gym.unset_values).toEqual([{path: 'search_api_key', env: 'SEARCH_API_KEY'}, {path: 'search_host', env: 'SEARCH_HOST'}])
    expect(r.json.contract.gym.env_vars).toEqual([{name: 'SEARCH_API_KEY', required: true}, {name: 'SEARCH_HOST', required: true}])
    expect(r.json.notes).toContain(`value to give before start: \${search_api_key} is read at ${CALENDAR}:13 and no loaded config sets it (Gym expects it in env.yaml); set SEARCH_API_KEY in env.sh (the start script passes it as ++search_api_key)`)
    const dir = r.json.dir
    const q = "'\\''"
    const start = await readFile(path.join(dir, 'start_refs_gym.sh'), 'utf8')
    expect(start).toContain(`'++search_api_key=${q}\${oc.env:SEARCH_API_KEY}${q}'`)
    expect(start).toContain(`'++search_host=${q}\${oc.env:SEARCH_HOST}${q}'`)
    expect(start).not.toContain('nowhere=')
    const envSh = await readFile(path.join(dir, 'env.sh'), 'utf8')
    expect(envSh).toContain('# The Gym config needs search_api_key and no loaded config sets it (required)')
    expect(envSh).toMatch(/search_api_key and no loaded config sets it \(required\): start_refs_gym\.sh\n# sets it to this value; a secret: export it from your shell/)
    const verified = await runCli(['verify', 'refs', '--level', 'static', '--relax-root', relax, '--gym-root', gymRoot, '--json'])
    expect(verified.exitCode, verified.stdout).toBe(0)
    const {bin} = await recordingDocker()
    const runStart = startScriptRunner(path.join(dir, 'start_refs_gym.sh'), bin)
    const without = await runStart({SEARCH_HOST: 'http://127.0.0.1:9'})
    expect(without.exitCode).toBe(2)
    expect(without.stderr).toContain('Set SEARCH_API_KEY in')
    expect((await runStart({SEARCH_HOST: 'http://127.0.0.1:9', SEARCH_API_KEY: 'sk-test'})).exitCode).toBe(97)
  })

  it('names every ??? value left in the servers it starts, with where it is written', async () => {
    const relax = await relaxRoot()
    const gymRoot = await editedGym(CALENDAR, (text) => text.replace('      entrypoint: app.py\n      resources_server:', '      entrypoint: app.py\n      dataset_path: ???\n      resources_server:'))
    const r = await runCli(newArgs('unset', relax, CALENDAR, ['--from', 'calendar'], gymRoot))
    expect(r.exitCode, r.stderr).toBe(0)
    // One such value alone still makes a start script shellcheck accepts.
    const verified = await runCli(['verify', 'unset', '--level', 'static', '--relax-root', relax, '--gym-root', gymRoot, '--json'])
    expect(verified.exitCode, verified.stdout).toBe(0)
    expect(r.json.notes).toContain(`value to give before start: calendar_simple_agent.responses_api_agents.simple_agent.dataset_path is ??? in ${CALENDAR}:13; set CALENDAR_SIMPLE_AGENT_DATASET_PATH in env.sh (the start script passes it as ++calendar_simple_agent.responses_api_agents.simple_agent.dataset_path, and mounts a host path given there read-only at the same path)`)
    const clean = await runCli(newArgs('clean', relax, CALENDAR, ['--dry-run']))
    expect(clean.json.notes.join('\n')).not.toContain('value to give')
  })

  it('${oc.env:…} values of the config become env.sh deployment variables, passed into the container; a required one is checked before Docker', async () => {
    const relax = await relaxRoot()
    const gymRoot = await editedGym(CALENDAR, (text) => text.replace('      domain: agent\n', '      domain: agent\n      judge_url: ${oc.env:MY_JUDGE_URL}\n      judge_key: ${oc.env:MY_JUDGE_API_KEY,MISSING}\n      scratch: ${oc.env:MY_SCRATCH,/tmp}\n'))
    const r = await runCli(newArgs('envs', relax, CALENDAR, ['--from', 'calendar'], gymRoot))
    expect(r.exitCode, r.stderr).toBe(0)
    expect(r.json.contract.gym.env_vars).toEqual([{name: 'MY_JUDGE_URL', required: true}, {name: 'MY_JUDGE_API_KEY', required: true}, {name: 'MY_SCRATCH', required: false}])
    const envSh = await readFile(path.join(r.json.dir, 'env.sh'), 'utf8')
    expect(envSh).toContain('export MY_JUDGE_URL="${MY_JUDGE_URL:-}"')
    expect(envSh).toMatch(/\$\{oc\.env:MY_JUDGE_API_KEY\}; a secret/)
    const start = await readFile(path.join(r.json.dir, 'start_envs_gym.sh'), 'utf8')
    expect(start).toContain('PASSED_ENV_VARS=(MY_JUDGE_URL MY_JUDGE_API_KEY MY_SCRATCH)')
    const {bin, createArgs} = await recordingDocker()
    const run = startScriptRunner(path.join(r.json.dir, 'start_envs_gym.sh'), bin)
    const missing = await run({MY_JUDGE_URL: 'http://127.0.0.1:9/v1'})
    expect(missing.exitCode).toBe(2)
    expect(missing.stderr).toContain('Set MY_JUDGE_API_KEY in')
    expect(missing.stderr).toContain('the Gym service cannot start without it (its comment there says what reads it)')
    // env.sh exports every one, empty when not given: an empty one is not passed in, so the config's
    // own fallback (${oc.env:MY_SCRATCH,/tmp}) applies instead of an empty string.
    const given = await run({MY_JUDGE_URL: 'http://127.0.0.1:9/v1', MY_JUDGE_API_KEY: 'sk-test', MY_SCRATCH: ''})
    expect(given.exitCode, given.stderr).toBe(97)
    const passed = (await createArgs()).join(' ')
    expect(passed).toContain('--env MY_JUDGE_URL --env MY_JUDGE_API_KEY')
    expect(passed).not.toContain('MY_SCRATCH')
    expect(passed).not.toContain('sk-test')
    await run({MY_JUDGE_URL: 'http://127.0.0.1:9/v1', MY_JUDGE_API_KEY: 'sk-test', MY_SCRATCH: '/scratch'})
    expect((await createArgs()).join(' ')).toContain('--env MY_JUDGE_URL --env MY_JUDGE_API_KEY --env MY_SCRATCH')
    const verified = await runCli(['verify', 'envs', '--level', 'static', '--relax-root', relax, '--gym-root', gymRoot, '--json'])
    expect(verified.exitCode, verified.stdout).toBe(0)
  })

  it('with neither --from nor --archetype, starts from the built-in of the same environment implementation', async () => {
    const relax = await relaxRoot()
    const r = await runCli(newArgs('tools-auto', relax, WORKPLACE, ['--dry-run']))
    expect(r.exitCode, r.stderr).toBe(0)
    expect(r.json.contract.archetype).toBe('stateful-tools')
    expect(r.json.contract.gateway.cleanup).toEqual({server: 'resource', path: '/cleanup/{rollout_id}'})
    expect(r.json.notes).toContain('verifier and trial copied from the built-in workplace-assistant (same environment implementation)')
    // An archetype asked for is kept: its base (calendar) does not know this environment, so its verifier is pending.
    const asked = await runCli(newArgs('tools-simple', relax, WORKPLACE, ['--archetype', 'simple-agent', '--dry-run']))
    expect(asked.exitCode, asked.stderr).toBe(0)
    expect(asked.json.contract.archetype).toBe('simple-agent')
    expect(asked.json.contract.verifier.kind).toBe('pending')
  })

  it('registers the built-in Gateway config name of the same environment (workplace-assistant-v1)', async () => {
    const relax = await relaxRoot()
    const r = await runCli(newArgs('my-tools', relax, WORKPLACE, ['--from', 'workplace-assistant', '--dry-run']))
    expect(r.exitCode).toBe(0)
    expect(r.json.contract.gym.gateway_config).toBe('workplace-assistant-v1')
  })

  it('--dry-run writes nothing', async () => {
    const relax = await relaxRoot()
    const r = await runCli(newArgs('dry', relax, CALENDAR, ['--dry-run']))
    expect(r.exitCode).toBe(0)
    expect(r.json.written).toEqual([])
    await expect(stat(path.join(relax, 'examples'))).rejects.toThrow()
  })
})
