/**
 * A user's own Gym config outside the Gym checkout, in a tree named with --config-root: recorded as
 * `${NAME}/…` (never a machine path), read with Gym's search order (the tree before the checkout),
 * given to env.sh as a deployment value, mounted read-only by the start script, checked by the
 * static rung against the Gym checkout; then trained on rows from `tasks export`-style data.
 */
import {execa} from 'execa'
import {mkdir, mkdtemp, readFile, writeFile} from 'node:fs/promises'
import http from 'node:http'
import type {AddressInfo} from 'node:net'
import os from 'node:os'
import path from 'node:path'
import {parse} from 'yaml'
import {describe, expect, it} from 'vitest'

import {runCli, snapshotRoot} from '../helpers/cli.js'
import {addModelConfigs} from '../helpers/recipes.js'

async function tree() {
  const relax = await mkdtemp(path.join(os.tmpdir(), 'gr-root-relax-'))
  await addModelConfigs(relax)
  const mine = await mkdtemp(path.join(os.tmpdir(), 'gr-root-mine-'))
  await mkdir(path.join(mine, 'configs'), {recursive: true})
  // My own agent on Gym's calendar server; my own override file, found in my tree first.
  await writeFile(path.join(mine, 'configs/my_calendar.yaml'), `config_paths:
  - environments/calendar/config.yaml
  - configs/my_overrides.yaml
`)
  await writeFile(path.join(mine, 'configs/my_overrides.yaml'), `calendar_simple_agent:
  responses_api_agents:
    simple_agent:
      max_steps: 3
`)
  return {relax, mine}
}

describe('a Gym config outside the checkout (--config-root)', () => {
  it('is recorded as ${NAME}/…, named in env.sh, mounted read-only, and the static rung checks its graph', async () => {
    const {relax, mine} = await tree()
    const config = path.join(mine, 'configs/my_calendar.yaml')

    const unnamed = await runCli(['new', 'my-cal', '--gym-root', snapshotRoot, '--gym-config', config, '--from', 'calendar', '--relax-root', relax, '--json'])
    expect(unnamed.exitCode).toBe(2)
    expect(unnamed.json.error.message).toContain('points outside the Gym root')
    expect(unnamed.json.error.hint).toContain(`--config-root MY_ENV_ROOT=${mine}`)

    const made = await runCli(['new', 'my-cal', '--gym-root', snapshotRoot, '--gym-config', config, '--config-root', `MY_CAL_ROOT=${mine}`, '--from', 'calendar', '--relax-root', relax, '--json'])
    expect(made.exitCode, made.stderr).toBe(0)
    const dir = made.json.dir
    const contract = parse(await readFile(path.join(dir, 'recipe.yaml'), 'utf8'))
    expect(contract.gym.config_paths).toEqual(['${MY_CAL_ROOT}/configs/my_calendar.yaml'])
    expect(contract.gym.config_roots).toEqual(['MY_CAL_ROOT'])
    expect(contract.gym.agent).toEqual({name: 'calendar_simple_agent', type: 'simple_agent', max_steps: 3})
    const recipeYaml = await readFile(path.join(dir, 'recipe.yaml'), 'utf8')
    expect(recipeYaml).not.toContain(mine)

    const envSh = await readFile(path.join(dir, 'env.sh'), 'utf8')
    expect(envSh).toContain(`export MY_CAL_ROOT="\${MY_CAL_ROOT:-${mine}}"`)
    const start = await readFile(path.join(dir, 'start_my_cal_gym.sh'), 'utf8')
    expect(start).toContain('"+config_paths=[responses_api_models/relax_gateway_model/configs/relax_gateway_model.yaml,${MY_CAL_ROOT}/configs/my_calendar.yaml]"')
    expect(start).toContain('CONFIG_ROOT_ARGS+=(--volume "${root_dir}:${root_dir}:ro" --env "${root_var}=${root_dir}")')
    expect(start).toContain('export NEMO_GYM_EXTRA_ROOTS="${MY_CAL_ROOT}"')
    expect(await readFile(path.join(dir, 'README.md'), 'utf8')).toContain('| `MY_CAL_ROOT` | the tree holding your own Gym configs, mounted read-only into the Gym container at the same path |')

    const verified = await runCli(['verify', 'my-cal', '--level', 'static', '--relax-root', relax, '--gym-root', snapshotRoot, '--json'])
    expect(verified.exitCode, verified.stdout).toBe(0)
    const graph = verified.json.rungs[0].checks.find((c: {id: string}) => c.id === 'static.graph-names')
    expect(graph.status).toBe('pass')
    expect(graph.message).not.toContain('not checked')

    // The graph check is real: a config root that points elsewhere fails it.
    const elsewhere = await mkdtemp(path.join(os.tmpdir(), 'gr-root-empty-'))
    const wrong = await runCli(['verify', 'my-cal', '--level', 'static', '--relax-root', relax, '--gym-root', snapshotRoot, '--json'], {env: {MY_CAL_ROOT: elsewhere}})
    expect(wrong.exitCode).not.toBe(0)
    expect(JSON.stringify(wrong.json)).toContain('my_calendar.yaml')

    // The start script refuses a config root that is not a directory, before any Docker call.
    const script = await execa('bash', [path.join(dir, 'start_my_cal_gym.sh')], {reject: false, env: {PATH: process.env.PATH, MY_CAL_ROOT: '/nonexistent/tree', GYM_HOST: '127.0.0.1', NEMO_GYM_IMAGE: 'x', NEMO_GYM_CALLBACK_ALLOWED_NETWORKS: '10.0.0.0/8'}, extendEnv: false})
    expect(script.exitCode).toBe(2)
    expect(script.stderr).toContain("Set MY_CAL_ROOT in")
    // A directory whose path Gym's +config_paths=[…] list would split at its comma is refused too.
    const split = path.join(await mkdtemp(path.join(os.tmpdir(), 'gr-root-')), 'my,env')
    await mkdir(split)
    const splitRun = await execa('bash', [path.join(dir, 'start_my_cal_gym.sh')], {reject: false, env: {PATH: process.env.PATH, MY_CAL_ROOT: split, GYM_HOST: '127.0.0.1', NEMO_GYM_IMAGE: 'x', NEMO_GYM_CALLBACK_ALLOWED_NETWORKS: '10.0.0.0/8'}, extendEnv: false})
    expect(splitRun.exitCode).toBe(2)
    expect(splitRun.stderr).toContain('MY_CAL_ROOT may hold only letters, digits and _ . / -')

    // --update finds the tree again from the environment (env.sh exports it); without it, it asks.
    const asked = await runCli(['new', 'my-cal', '--gym-root', snapshotRoot, '--relax-root', relax, '--update', '--json'])
    expect(asked.exitCode).toBe(2)
    expect(asked.json.error.hint).toContain('--config-root MY_CAL_ROOT=<directory>')
    const updated = await runCli(['new', 'my-cal', '--gym-root', snapshotRoot, '--relax-root', relax, '--update', '--json'], {env: {MY_CAL_ROOT: mine}})
    expect(updated.exitCode, updated.stderr).toBe(0)
    expect(updated.json.files.every((f: {action: string}) => f.action === 'unchanged')).toBe(true)
  })

  it('takes a --gym-config relative to the working directory when it lies in a named config root and the checkout has no such file', async () => {
    const {relax, mine} = await tree()
    const parent = path.dirname(mine)
    const rel = path.join(path.basename(mine), 'configs/my_calendar.yaml')
    const made = await runCli(['new', 'rel-cal', '--gym-root', snapshotRoot, '--gym-config', rel, '--config-root', `MY_CAL_ROOT=${path.basename(mine)}`, '--from', 'calendar', '--relax-root', relax, '--dry-run', '--json'], {cwd: parent})
    expect(made.exitCode, made.stderr).toBe(0)
    expect(made.json.contract.gym.config_paths).toEqual(['${MY_CAL_ROOT}/configs/my_calendar.yaml'])
    // Without a named root the path stays relative to --gym-root, where nothing holds it.
    const unnamed = await runCli(['new', 'rel-cal', '--gym-root', snapshotRoot, '--gym-config', rel, '--from', 'calendar', '--relax-root', relax, '--dry-run', '--json'], {cwd: parent})
    expect(unnamed.exitCode).toBe(2)
    expect(unnamed.json.error.message).toContain('was not found under the Gym root')
  })

  it('trains on a task file of the user\'s own: the data rung passes on it', async () => {
    const {relax, mine} = await tree()
    const rows = path.join(mine, 'gym-tasks.jsonl')
    await writeFile(rows, await readFile(path.join(snapshotRoot, 'environments/calendar/data/example.jsonl')))
    const made = await runCli(['new', 'my-cal', '--gym-root', snapshotRoot, '--gym-config', path.join(mine, 'configs/my_calendar.yaml'), '--config-root', `MY_CAL_ROOT=${mine}`, '--from', 'calendar', '--data', rows, '--relax-root', relax, '--json'])
    expect(made.exitCode, made.stderr).toBe(0)
    expect(made.json.contract.data).toMatchObject({source: {type: 'file', path: rows}, split: 'train', smoke: false})
    const raw = path.join(mine, 'shared', made.json.contract.data.raw_filename)
    await mkdir(path.dirname(raw), {recursive: true})
    await writeFile(raw, await readFile(rows))
    const data = await runCli(['verify', 'my-cal', '--level', 'data', '--relax-root', relax, '--gym-root', snapshotRoot, '--json'], {env: {NEMO_GYM_SOURCE_DATA: raw, DOCKER_HOST: 'unix:///nonexistent/docker.sock'}, timeout: 300_000})
    const checks = data.json.rungs.flatMap((r: {checks: Array<{id: string; status: string}>}) => r.checks)
    const notPassed = checks.filter((c: {status: string}) => c.status !== 'pass').map((c: {id: string; status: string}) => `${c.id}:${c.status}`)
    // 5 rows cannot fill a rollout step, and without Docker the shared-storage probe is not run: nothing else may fail.
    expect(notPassed.sort()).toEqual(['data.enough-rows:fail', 'data.shared-storage:skip'])
  })
})

describe('a resources server of the user\'s own, in the config root with its example rows and rollouts', () => {
  it('takes the verifier examples from its tree (recorded as ${NAME}/…), and the generated verifier reads the row there', async () => {
    const relax = await mkdtemp(path.join(os.tmpdir(), 'gr-root-relax-'))
    await addModelConfigs(relax)
    const mine = await mkdtemp(path.join(os.tmpdir(), 'gr-root-own-'))
    const server = path.join(mine, 'resources_servers/capitals')
    await mkdir(path.join(server, 'configs'), {recursive: true})
    await mkdir(path.join(server, 'data'), {recursive: true})
    await writeFile(path.join(server, 'configs/capitals.yaml'), `capitals_resources_server:
  resources_servers:
    capitals:
      entrypoint: app.py
      domain: knowledge
capitals_simple_agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server:
        type: resources_servers
        name: capitals_resources_server
      model_server:
        type: responses_api_models
        name: policy_model
      datasets:
      - name: example
        type: example
        jsonl_fpath: resources_servers/capitals/data/example.jsonl
`)
    const row = (q: string, a: string) => ({responses_create_params: {input: [{role: 'user', content: q}]}, expected_answer: a})
    const rows = [row('Capital of France?', 'Paris'), row('Capital of Italy?', 'Rome')]
    await writeFile(path.join(server, 'data/example.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + '\n')
    const rollout = (r: ReturnType<typeof row>, text: string, reward: number) => ({...r, response: {output: [{type: 'message', role: 'assistant', content: [{type: 'output_text', text}]}]}, reward})
    await writeFile(path.join(server, 'data/example_rollouts.jsonl'), [rollout(rows[1], 'Rome', 1), rollout(rows[1], 'Milan', 0)].map((r) => JSON.stringify(r)).join('\n') + '\n')
    const tasks = path.join(mine, 'gym-tasks.jsonl')
    await writeFile(tasks, rows.map((r) => JSON.stringify(r)).join('\n') + '\n')

    const made = await runCli(['new', 'capitals', '--gym-root', snapshotRoot, '--gym-config', path.join(server, 'configs/capitals.yaml'), '--config-root', `CAPITALS_ROOT=${mine}`, '--data', tasks, '--relax-root', relax, '--json'])
    expect(made.exitCode, made.stderr).toBe(0)
    const verifier = made.json.contract.verifier
    expect(verifier).toMatchObject({kind: 'direct', task: {file: '${CAPITALS_ROOT}/resources_servers/capitals/data/example.jsonl', row: 1}, correct: [{text: 'Rome'}], wrong: [{text: 'Milan'}], success_reward: 1, failure_reward: 0})
    expect(made.json.contract.trial.task).toEqual({file: '${CAPITALS_ROOT}/resources_servers/capitals/data/example.jsonl', row: 1})
    expect(made.json.notes.join('\n')).toContain('verifier examples from the example rollouts: correct ${CAPITALS_ROOT}/resources_servers/capitals/data/example_rollouts.jsonl:1 (reward 1)')
    expect(JSON.stringify([made.json.contract.gym, made.json.contract.verifier, made.json.contract.trial])).not.toContain(mine)
    const staticRung = await runCli(['verify', 'capitals', '--level', 'static', '--relax-root', relax, '--json'], {env: {CAPITALS_ROOT: mine}})
    expect(staticRung.exitCode, staticRung.stdout).toBe(0)

    // The generated verifier, run as in the container (the tree given as CAPITALS_ROOT), against a
    // grader that rewards the expected answer of the row it is sent.
    const grader = http.createServer((req, res) => {
      let body = ''
      req.on('data', (c) => (body += c))
      req.on('end', () => {
        const request = JSON.parse(body)
        const text = request.response.output.map((o: any) => o.content?.map((c: any) => c.text).join('')).join('')
        res.writeHead(200, {'content-type': 'application/json'})
        res.end(JSON.stringify({...request, reward: text === request.expected_answer ? 1 : 0}))
      })
    })
    await new Promise<void>((resolve) => grader.listen(0, '127.0.0.1', resolve))
    try {
      const port = (grader.address() as AddressInfo).port
      const run = await execa('python3', [path.join(made.json.dir, 'verify_capitals.py'), '--resource-url', `http://127.0.0.1:${port}`], {env: {CAPITALS_ROOT: mine}, reject: false})
      expect(run.exitCode, run.stderr).toBe(0)
      expect(run.stdout).toMatch(/correct_reward=1(\.0)? incorrect_reward=0(\.0)?/)
    } finally {
      await new Promise((resolve) => grader.close(resolve))
    }
  })
})
