/**
 * Several environments in one training run (Relax's multienv layout): one Gateway registration
 * holding every config, one `gym env start` with every agent and resources server placed in turn
 * after the Gateway, a training script that leaves routing to each row's environment/config, and
 * a data rung that checks each row against its own environment's grader fields.
 */
import {execFileSync} from 'node:child_process'
import {cp, mkdir, mkdtemp, readFile, rm, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {parse} from 'yaml'
import {describe, expect, it} from 'vitest'

import {runCli, snapshotRoot} from '../helpers/cli.js'
import {loadBuiltin} from '../../src/contract/builtin.js'
import {dockerUnavailableReason, ensureBaseImage, removeByLabel} from '../helpers/docker.js'
import {addModelConfigs} from '../helpers/recipes.js'
import {freePortBlock, makeRelaxCheckout, startAgenticApiStandIn} from '../helpers/relax-fixture.js'
import {randomNodeId, startFakeRay} from '../helpers/ray-fixture.js'

const MATH = 'resources_servers/math_with_judge/configs/math_with_judge.yaml'
const CALENDAR = 'environments/calendar/config.yaml'
const HOST = '127.0.0.1'
const unavailable = await dockerUnavailableReason()
if (unavailable) console.error(`\n!! SKIPPING the two-environment ladder on Docker: ${unavailable}\n`)
const WORKPLACE = 'resources_servers/workplace_assistant/configs/workplace_assistant.yaml'

/** The checkout's example rows of both environments, each stamped with its Gateway registration. */
const MATH_AND_WORKPLACE: Array<[string, string, string]> = [
  ['resources_servers/math_with_judge/data/example.jsonl', 'math_with_judge', 'math-with-judge-v1'],
  ['resources_servers/workplace_assistant/data/example.jsonl', 'workplace_assistant', 'workplace-assistant-v1'],
]

async function mixedRows(dir: string, edit: (row: Record<string, unknown>, env: string) => Record<string, unknown> | null = (row) => row, parts = MATH_AND_WORKPLACE): Promise<string> {
  const lines: string[] = []
  for (const [file, environment, config] of parts) {
    for (const line of (await readFile(path.join(snapshotRoot, file), 'utf8')).split('\n').filter((l) => l.trim())) {
      const row = edit({...JSON.parse(line), environment, config, data_source: environment}, environment)
      if (row) lines.push(JSON.stringify(row))
    }
  }
  const out = path.join(dir, 'mixed.jsonl')
  await writeFile(out, `${lines.join('\n')}\n`)
  return out
}

function registration(start: string, gatewayPort: number): Record<string, any> {
  const program = start.slice(start.indexOf("<<'PY'\n") + 7, start.indexOf('\nPY\n'))
  return JSON.parse(execFileSync('python3', ['-c', program], {env: {GW_HOST: 'gym-host', GW_PORT: String(gatewayPort), PATH: process.env.PATH}, encoding: 'utf8'}))
}

describe('a recipe that trains several environments (--agent repeated)', () => {
  it('registers every environment, places every server, routes by row, and checks each row against its own grader', async () => {
    const relax = await mkdtemp(path.join(os.tmpdir(), 'gr-multi-'))
    await addModelConfigs(relax)
    const data = await mixedRows(relax)
    const args = ['new', 'mix', '--gym-root', snapshotRoot, '--gym-config', MATH, '--gym-config', WORKPLACE, '--relax-root', relax, '--port-base', '29300', '--json']

    // Without --data each environment brings its own train dataset: a recorded mix.
    const both = ['--agent', 'math_with_judge_simple_agent', '--agent', 'workplace_assistant_simple_agent']
    const mixed = await runCli([...args, ...both, '--mix-cap', 'math_with_judge=2400', '--dry-run'])
    expect(mixed.exitCode, mixed.stderr).toBe(0)
    expect(mixed.json.contract.data).toMatchObject({dataset: 'mix', split: 'train', smoke: false, raw_filename: 'mix_train.jsonl', source: {type: 'mix', seed: 20260829, parts: [
      {environment: 'math_with_judge', gateway_config: 'math-with-judge-v1', dataset: 'train', split: 'train', source: {type: 'huggingface', repo_id: 'nvidia/Nemotron-RL-math-OpenMathReasoning', artifact: 'train.jsonl'}, cap: 2400},
      {environment: 'workplace_assistant', gateway_config: 'workplace-assistant-v1', dataset: 'train', split: 'train', source: {type: 'huggingface', repo_id: 'nvidia/Nemotron-RL-agent-workplace_assistant', artifact: 'train.jsonl'}, cap: 0},
    ]}})
    for (const [flags, message] of [
      [['--mix-cap', 'calendar=5'], '--mix-cap names calendar, which is not an environment of this recipe'],
      [['--mix-cap', 'math_with_judge'], '--mix-cap "math_with_judge" is not ENVIRONMENT=ROWS'],
      [['--mix-cap', 'math_with_judge=1', '--mix-cap', 'math_with_judge=2'], '--mix-cap names math_with_judge twice'],
      [['--mix-seed', '-1'], 'Expected an integer greater than or equal to 0 but received: -1'],
    ] as const) {
      const refused = await runCli([...args, ...both, ...flags, '--dry-run'])
      expect(refused.exitCode, refused.stdout).toBe(2)
      expect(refused.json.error.message).toContain(message)
    }
    const capWithData = await runCli([...args, ...both, '--data', data, '--mix-cap', 'math_with_judge=3', '--dry-run'])
    expect(capWithData.exitCode).toBe(2)
    expect(capWithData.json.error.message).toBe('--mix-cap applies to a recipe of several environments that mixes their own datasets')
    const twice = await runCli([...args, '--agent', 'math_with_judge_simple_agent', '--agent', 'math_with_judge_simple_agent', '--data', data, '--dry-run'])
    expect(twice.exitCode).toBe(2)
    expect(twice.json.error.message).toContain('share the environment math_with_judge')

    const made = await runCli([...args, '--agent', 'math_with_judge_simple_agent', '--agent', 'workplace_assistant_simple_agent', '--data', data])
    expect(made.exitCode, made.stderr).toBe(0)
    const dir = made.json.dir
    const contract = parse(await readFile(path.join(dir, 'recipe.yaml'), 'utf8'))
    expect(contract.gym.environment).toBe('math_with_judge')
    expect(contract.gym.additional_environments).toEqual([{
      environment: 'workplace_assistant',
      gateway_config: 'workplace-assistant-v1',
      agent: {name: 'workplace_assistant_simple_agent', type: 'simple_agent', max_steps: 6},
      resources_server: {name: 'workplace_assistant', implementation: 'workplace_assistant'},
      max_concurrency: 8,
      queue_capacity: 32,
      max_deadline_s: 1800,
      readiness: ['agent', 'resource'],
      cleanup: {server: 'resource', path: '/cleanup/{rollout_id}'},
      verifier_fields: expect.arrayContaining(['responses_create_params.input', 'ground_truth']),
      // From the workplace-assistant built-in: the same environment implementation.
      verifier: expect.objectContaining({kind: 'direct', success_reward: 1}),
      trial: expect.objectContaining({expect: expect.objectContaining({status: 'completed'})}),
    }])
    const verifyScript = await readFile(path.join(made.json.dir, 'verify_mix.py'), 'utf8')
    expect(verifyScript).toContain('ENVIRONMENTS = {\n    "workplace_assistant": {')
    expect(verifyScript).toContain('parser.add_argument("--environment", choices=sorted(ENVIRONMENTS)')
    execFileSync('python3', ['-c', 'import ast, sys; ast.parse(open(sys.argv[1]).read())', path.join(made.json.dir, 'verify_mix.py')])
    expect(contract.gym.venv_dirs).toEqual(['responses_api_agents/simple_agent', 'resources_servers/math_with_judge', 'resources_servers/workplace_assistant'])

    const start = await readFile(path.join(dir, 'start_mix_gym.sh'), 'utf8')
    const registered = registration(start, 29300)
    expect(Object.keys(registered)).toEqual(['math-with-judge-v1', 'workplace-assistant-v1'])
    expect(registered['math-with-judge-v1']).toMatchObject({environment: 'math_with_judge', agent_url: 'http://gym-host:29301', readiness_urls: ['http://gym-host:29301', 'http://gym-host:29302']})
    expect(registered['math-with-judge-v1']).not.toHaveProperty('abort_url')
    expect(registered['workplace-assistant-v1']).toMatchObject({environment: 'workplace_assistant', agent_url: 'http://gym-host:29303', readiness_urls: ['http://gym-host:29303', 'http://gym-host:29304'], abort_url: 'http://gym-host:29304/cleanup/{rollout_id}'})
    expect(start).toContain('local env2_resource_port=$((gateway_port + 4))')
    expect(start).toContain('local head_port=$((gateway_port + 5))')
    expect(start).toContain('++workplace_assistant.resources_servers.workplace_assistant.port="${env2_resource_port}"')
    expect(start).toContain('"workplace_assistant resource:$((GATEWAY_PORT + 4))" "head:$((GATEWAY_PORT + 5))"')
    const run = await readFile(path.join(dir, 'run-qwen3-4B-8xgpu-nemo-gym-mix.sh'), 'utf8')
    expect(run).not.toContain('NEMO_GYM_ENVIRONMENT=')
    expect(run).not.toContain('NEMO_GYM_CONFIG=')

    const staticRung = await runCli(['verify', 'mix', '--level', 'static', '--relax-root', relax, '--gym-root', snapshotRoot, '--json'])
    expect(staticRung.exitCode, staticRung.stdout).toBe(0)

    const update = await runCli(['new', 'mix', '--gym-root', snapshotRoot, '--relax-root', relax, '--update', '--json'])
    expect(update.exitCode, update.stderr).toBe(0)
    expect(update.json.files.every((f: {action: string}) => f.action === 'unchanged')).toBe(true)

    // The data rung: rows per environment, each row against its own grader's fields.
    const dataCheck = async (rows: string) => {
      const raw = path.join(relax, 'shared', 'mix_train.jsonl')
      await mkdir(path.dirname(raw), {recursive: true})
      await writeFile(raw, await readFile(rows))
      const r = await runCli(['verify', 'mix', '--level', 'data', '--relax-root', relax, '--gym-root', snapshotRoot, '--json'], {env: {NEMO_GYM_SOURCE_DATA: raw}})
      return r.json.rungs.find((rung: {rung: string}) => rung.rung === 'data').checks.filter((c: {id: string}) => c.id === 'data.environments')
    }
    const good = await dataCheck(data)
    expect(good).toEqual([expect.objectContaining({status: 'pass', message: "rows per environment: math_with_judge 5, workplace_assistant 5; each carries its own grader's fields"})])

    const noWorkplace = await dataCheck(await mixedRows(await mkdtemp(path.join(os.tmpdir(), 'gr-multi-rows-')), (row, env) => (env === 'workplace_assistant' ? null : row)))
    expect(noWorkplace.map((c: {message: string}) => c.message)).toContain('environment workplace_assistant has no rows: the mix would not train it at all')

    const broken = await dataCheck(await mixedRows(await mkdtemp(path.join(os.tmpdir(), 'gr-multi-rows-')), (row, env) => {
      if (env === 'workplace_assistant') {
        const {ground_truth: _dropped, ...rest} = row
        return rest
      }
      return {...row, config: 'math-v2'}
    }))
    const messages = broken.map((c: {message: string}) => c.message)
    expect(messages).toContain('5 row(s) name no registered environment/config pair (registered: math_with_judge/math-with-judge-v1, workplace_assistant/workplace-assistant-v1)')
    expect(messages).toContain('line 1: environment math_with_judge / config math-v2 is not registered')
    expect(messages).toContain('5 workplace_assistant row(s) lack ground_truth, which its grader reads (first at line 6)')
  }, 240_000) // a dozen CLI runs and three data rungs with Docker: far over the default on a loaded machine

  it('a further environment no built-in knows takes its verifier and trial from its own example rollouts', async () => {
    const relax = await mkdtemp(path.join(os.tmpdir(), 'gr-multi-own-'))
    await addModelConfigs(relax)
    const data = await mixedRows(relax)
    const made = await runCli(['new', 'wm', '--from', 'workplace-assistant', '--gym-root', snapshotRoot, '--gym-config', WORKPLACE, '--gym-config', MATH, '--agent', 'workplace_assistant_simple_agent', '--agent', 'math_with_judge_simple_agent', '--data', data, '--relax-root', relax, '--json'])
    expect(made.exitCode, made.stderr).toBe(0)
    expect(made.json.notes).toContain('further environment math_with_judge (Gateway config math-with-judge-v1): agent math_with_judge_simple_agent on the Gateway port + 3, resources server math_with_judge on + 4; its verifier and its trial in recipe.yaml')
    const [math] = made.json.contract.gym.additional_environments
    expect(math.environment).toBe('math_with_judge')
    expect(math.gateway_config).toBe('math-with-judge-v1')
    expect(math.verifier).toMatchObject({kind: 'direct', python: '/opt/nemo-gym/resources_servers/math_with_judge/.venv/bin/python', task: {file: 'resources_servers/math_with_judge/data/example.jsonl'}, success_reward: 1})
    const script = await readFile(path.join(made.json.dir, 'verify_wm.py'), 'utf8')
    expect(script).toContain('ENVIRONMENTS = {\n    "math_with_judge": {')
    expect(script).toContain('/opt/nemo-gym/resources_servers/math_with_judge/data/example.jsonl')
    const staticRung = await runCli(['verify', 'wm', '--level', 'static', '--relax-root', relax, '--gym-root', snapshotRoot, '--json'])
    expect(staticRung.exitCode, staticRung.stdout).toBe(0)
  })

  it('the judge of a further environment is held to the same rule as the primary\'s: never the policy unless asked', async () => {
    const relax = await mkdtemp(path.join(os.tmpdir(), 'gr-multi-judge-'))
    await addModelConfigs(relax)
    const gymRoot = await mkdtemp(path.join(os.tmpdir(), 'gr-multi-gym-'))
    await cp(snapshotRoot, gymRoot, {recursive: true})
    const mathConfig = path.join(gymRoot, MATH)
    await writeFile(mathConfig, (await readFile(mathConfig, 'utf8')).replace('should_use_judge: false', 'should_use_judge: true'))
    await mkdir(path.join(gymRoot, 'responses_api_models/vllm_model/configs'), {recursive: true})
    await writeFile(path.join(gymRoot, 'responses_api_models/vllm_model/configs/vllm_model.yaml'), 'policy_model:\n  responses_api_models:\n    vllm_model:\n      entrypoint: app.py\n      base_url: ${policy_base_url}\n      api_key: ${policy_api_key}\n      model: ${policy_model_name}\n')
    const data = await mixedRows(relax)
    const args = ['new', 'wmj', '--from', 'workplace-assistant', '--gym-root', gymRoot, '--gym-config', WORKPLACE, '--gym-config', MATH, '--agent', 'workplace_assistant_simple_agent', '--agent', 'math_with_judge_simple_agent', '--data', data, '--relax-root', relax, '--json']
    const refused = await runCli([...args, '--dry-run'])
    expect(refused.exitCode).toBe(2)
    expect(refused.json.error.code).toBe('E_POLICY_AS_SECOND_MODEL')
    expect(refused.json.error.message).toContain('math_with_judge.judge_model_server is the policy model')
    const served = await runCli([...args, '--second-model', 'judge'])
    expect(served.exitCode, served.stderr).toBe(0)
    expect(served.json.contract.gym.model_servers).toMatchObject([{name: 'judge_model', binds: ['math_with_judge.resources_servers.math_with_judge.judge_model_server.name']}])
    // After the Gym head, which two environments push to Gateway + 5: the judge at + 6.
    const start = await readFile(path.join(served.json.dir, 'start_wmj_gym.sh'), 'utf8')
    expect(start).toContain('++judge_model.responses_api_models.vllm_model.port="$((gateway_port + 6))"')
    expect(start).toContain('"judge model server judge_model:$((GATEWAY_PORT + 6))"')
    expect(served.json.notes.join('\n')).toContain('judge model server judge_model (vllm_model) is added by gymrecipe on the Gateway port + 6:')
  })

  it('reproduces the Gateway registration and port placement of Relax\'s multienv-math-workplace recipe', async () => {
    const relax = await mkdtemp(path.join(os.tmpdir(), 'gr-multi-proven-'))
    await addModelConfigs(relax)
    // --from the built-in: Relax's training values, admission limits (256 per environment, a queue
    // of four times that), private Ray and mix; the graph and both environments from the Gym configs.
    const made = await runCli(['new', 'multienv-math-workplace', '--from', 'multienv-math-workplace', '--gym-root', snapshotRoot, '--gym-config', MATH, '--gym-config', WORKPLACE, '--agent', 'math_with_judge_simple_agent', '--agent', 'workplace_assistant_simple_agent', '--relax-root', relax, '--json'])
    expect(made.exitCode, made.stderr).toBe(0)
    const builtin = await loadBuiltin('multienv-math-workplace')
    expect(made.json.contract.training).toEqual(builtin.training)
    expect(made.json.contract.gateway).toEqual(builtin.gateway)
    expect(made.json.contract.ray).toEqual(builtin.ray)
    expect(made.json.contract.data.source).toEqual(builtin.data.source)
    expect(made.json.contract.gym.additional_environments).toEqual(builtin.gym.additional_environments)
    // §5 (prepare_multienv.sh): both train splits from the hub, math capped at 2400, workplace
    // whole, shuffled with random.Random(20260829); every row stamped environment/config/data_source.
    const prepare = await readFile(path.join(made.json.dir, 'prepare_multienv_math_workplace.sh'), 'utf8')
    const mix = JSON.parse(/^MIX='(.*)'$/m.exec(prepare)![1])
    expect(mix).toMatchObject({seed: 20260829, parts: [{environment: 'math_with_judge', config: 'math-with-judge-v1', cap: 2400}, {environment: 'workplace_assistant', config: 'workplace-assistant-v1', cap: 0}]})
    expect(mix.parts[1].fields).toContain('ground_truth')
    expect(prepare).toContain("dataset download --repo-id 'nvidia/Nemotron-RL-math-OpenMathReasoning' --artifact 'train.jsonl' --output \"${tmp_raw}.part0\"")
    expect(prepare).toContain("dataset download --repo-id 'nvidia/Nemotron-RL-agent-workplace_assistant' --artifact 'train.jsonl' --output \"${tmp_raw}.part1\"")
    for (const stamp of ['row["environment"] = part["environment"]', 'row["config"] = part["config"]', 'row["data_source"] = part["environment"]']) expect(prepare).toContain(stamp)
    const staticRung = await runCli(['verify', 'multienv-math-workplace', '--level', 'static', '--relax-root', relax, '--gym-root', snapshotRoot, '--json'])
    expect(staticRung.exitCode, staticRung.stdout).toBe(0)

    const start = await readFile(path.join(made.json.dir, 'start_multienv_math_workplace_gym.sh'), 'utf8')
    // relax-proven-values.md §4.1 (math-with-judge-v1, workplace-assistant-v1 in multienv) and §4.2 (multienv ports).
    const url = (port: number) => `http://gym-host:${port}`
    expect(registration(start, 29300)).toEqual({
      'math-with-judge-v1': {environment: 'math_with_judge', agent_name: 'math_with_judge_simple_agent', agent_url: url(29301), readiness_urls: [url(29301), url(29302)], interrupt_policy: 'protected', max_concurrency: 256, queue_capacity: 1024, max_deadline_s: 1800},
      'workplace-assistant-v1': {
        environment: 'workplace_assistant', agent_name: 'workplace_assistant_simple_agent', agent_url: url(29303), readiness_urls: [url(29303), url(29304)], interrupt_policy: 'protected', max_concurrency: 256, queue_capacity: 1024, max_deadline_s: 1800,
        abort_url: `${url(29304)}/cleanup/{rollout_id}`, force_cleanup_url: `${url(29304)}/cleanup/{rollout_id}`, cleanup_probe_url: `${url(29304)}/cleanup/{rollout_id}`,
      },
    })
    const placed = [...start.matchAll(/\+\+(\w+)\.(?:responses_api_agents|resources_servers)\.\w+\.port="\$\{(\w+)\}"/g)].map((m) => [m[1], m[2]])
    expect(placed).toEqual([['math_with_judge_simple_agent', 'agent_port'], ['math_with_judge', 'resource_port'], ['workplace_assistant_simple_agent', 'env2_agent_port'], ['workplace_assistant', 'env2_resource_port']])
    const offsets = Object.fromEntries([...start.matchAll(/local (\w+_port)=\$\(\(gateway_port \+ (\d)\)\)/g)].map((m) => [m[1], 29300 + Number(m[2])]))
    expect(offsets).toEqual({agent_port: 29301, resource_port: 29302, env2_agent_port: 29303, env2_resource_port: 29304, head_port: 29305})
    expect(start).toContain('--port=6384 --num-cpus=16')
    const run = await readFile(path.join(made.json.dir, 'run-qwen3-4B-8xgpu-nemo-gym-multienv-math-workplace.sh'), 'utf8')
    // §2.7: the multienv script sets no NEMO_GYM_ENVIRONMENT / NEMO_GYM_CONFIG; the client routes by row metadata.
    expect(run).toMatch(/--agent-env\s+"?NEMO_GYM_URL=\$\{GATEWAY_URL\}"?\s+"?NEMO_GYM_MODEL=model/)
  })

  it.skipIf(Boolean(unavailable))('climbs static → trial on the fixture stack with two environments in one container, each bringing its own dataset', async () => {
    await ensureBaseImage()
    const tmp = await mkdtemp(path.join(os.tmpdir(), 'gr-multi-ladder-'))
    const checkout = await makeRelaxCheckout(path.join(tmp, 'relax'), {hostGym: false, snapshotDir: snapshotRoot})
    const id = `mx-${Date.now().toString(36)}`
    // Emulated Ray (for the network rung's probe job) and a Relax host that answers the Agentic API 401.
    const ray = await startFakeRay({nodes: [{node_id: randomNodeId(), node_ip: HOST, is_head: true}], stopGraceS: 1})
    const relax = await startAgenticApiStandIn()
    const env = {
      ...ray.env(),
      RAY_DASHBOARD_ADDRESS: ray.url,
      RELAX_HOST: HOST,
      RELAX_PORT: String(relax.port),
      GYM_HOST: HOST,
      GYM_BIND_HOST: HOST,
      NEMO_GYM_CALLBACK_ALLOWED_NETWORKS: '127.0.0.0/8',
      NEMO_GYM_IMAGE: `gymrecipe-test-multienv:${id}`,
      NEMO_GYM_SOURCE_DATA: path.join(tmp, 'shared', `${id.replaceAll('-', '_')}_train.jsonl`),
      XDG_STATE_HOME: path.join(tmp, 'state'),
      GYMRECIPE_GYM_ROOT: snapshotRoot,
      RAY_ADDRESS: undefined,
      DOCKER_CLI_HINTS: 'false',
    }
    const cli = (args: string[]) => runCli([...args, '--relax-root', checkout.root], {env, timeout: 900_000})
    try {
      const block = await freePortBlock(100, 27000, 4000)
      const made = await cli(['new', id, '--from', 'workplace-assistant', '--gym-root', snapshotRoot, '--gym-config', WORKPLACE, '--gym-config', CALENDAR,
        '--agent', 'workplace_assistant_simple_agent', '--agent', 'calendar_simple_agent', '--mix-cap', 'calendar=10', '--port-base', String(block), '--gcs-port', String(block + 18), '--json'])
      expect(made.exitCode, made.stderr).toBe(0)
      expect(made.json.contract.gym.additional_environments.map((e: {environment: string; gateway_config: string}) => [e.environment, e.gateway_config])).toEqual([['calendar', 'calendar-v1']])

      const prepared = await cli(['prepare', id, '--json'])
      expect(prepared.exitCode, JSON.stringify(prepared.json?.ladder ?? prepared.json, null, 1)?.slice(0, 3000) + prepared.stderr.slice(-2000)).toBe(0)
      // Each environment's own train split from the (fixture) hub, 64 rows each: calendar capped at 10.
      expect(prepared.stdout + prepared.stderr).toContain('mixed 74 row(s): workplace_assistant 64, calendar 10; shuffled with seed 20260829')
      expect(prepared.stdout + prepared.stderr).toContain('validated 74 row(s) (workplace_assistant/workplace-assistant-v1 64, calendar/calendar-v1 10)')

      const started = await cli(['start', id, '--json'])
      expect(started.exitCode, JSON.stringify(started.json, null, 1)?.slice(0, 4000) + started.stderr.slice(-3000)).toBe(0)
      const ready = await (await fetch(`http://${HOST}:${block}/readyz`)).json() as {ready: boolean}
      expect(ready.ready).toBe(true)

      const trial = await cli(['verify', id, '--level', 'trial', '--json'])
      expect(trial.exitCode, JSON.stringify(trial.json?.rungs?.map((r: any) => [r.rung, r.status, r.checks.filter((c: any) => c.status !== 'pass').map((c: any) => `${c.id}: ${c.message}`)]), null, 1)).toBe(0)
      expect(trial.json.rungs.map((r: {rung: string; status: string}) => [r.rung, r.status])).toEqual([['static', 'pass'], ['data', 'pass'], ['service', 'pass'], ['network', 'pass'], ['trial', 'pass']])
      const perEnvironment = trial.json.rungs.find((r: {rung: string}) => r.rung === 'data').checks.find((c: {id: string}) => c.id === 'data.environments')
      expect(perEnvironment.evidence.rows_per_environment).toEqual({workplace_assistant: 64, calendar: 10})
      // Each environment's verifier against its own resources server: workplace (primary), then calendar.
      const serviceChecks = trial.json.rungs.find((r: {rung: string}) => r.rung === 'service').checks
      expect(serviceChecks.find((c: {id: string}) => c.id === 'service.verifier')).toMatchObject({status: 'pass'})
      const calendarVerifier = serviceChecks.find((c: {id: string}) => c.id === 'service.verifier.calendar')
      expect(calendarVerifier).toMatchObject({status: 'pass'})
      expect(calendarVerifier.message).toMatch(/^correct_reward=1(\.0)? incorrect_reward=0(\.0)? \(http:\/\/127\.0\.0\.1:\d+, /)
      expect(calendarVerifier.evidence.command).toContain(`--environment calendar --resource-url http://127.0.0.1:${block + 4}`)
      // The primary's trial (workplace, with cleanup) and the calendar trial under its own Gateway config.
      const trialChecks = trial.json.rungs.find((r: {rung: string}) => r.rung === 'trial').checks
      expect(trialChecks.find((c: {id: string}) => c.id === 'trial.reward')).toMatchObject({status: 'pass'})
      expect(trialChecks.find((c: {id: string}) => c.id === 'trial.calendar')).toMatchObject({status: 'pass', title: 'Trial of calendar (Gateway config calendar-v1)'})
      expect(trialChecks.find((c: {id: string}) => c.id === 'trial.calendar').message).toMatch(/^status completed; reward 1/)
    } finally {
      await ray.stop()
      await relax.close()
      await removeByLabel(`ai.relax.recipe=${id}`).catch(() => undefined)
      await rm(tmp, {recursive: true, force: true})
    }
  }, 1_200_000)
})
