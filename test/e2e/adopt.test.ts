import {cp, mkdtemp, readFile, rm, stat, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {afterAll, describe, expect, it} from 'vitest'
import {parse as parseYaml, stringify as stringifyYaml} from 'yaml'

import {repoRoot, runCli, snapshotRoot} from '../helpers/cli.js'
import {addModelConfigs, editFile, generatedRecipe} from '../helpers/recipes.js'

const made: string[] = []
afterAll(() => Promise.all(made.map((d) => rm(d, {recursive: true, force: true}))))

const RECIPES = 'examples/nemo_gym_agentic/recipes'
const adopt = (relaxRoot: string, recipe: string, ...extra: string[]) => runCli(['adopt', recipe, '--relax-root', relaxRoot, '--gym-root', snapshotRoot, '--json', ...extra])
const pointers = (list: Array<{pointer: string}>) => list.map((f) => f.pointer)
const fromOf = (json: {read: Array<{pointer: string; from: string}>}, pointer: string) => json.read.find((f) => f.pointer === pointer)?.from
const whyOf = (json: {unfilled: Array<{pointer: string; why: string}>}, pointer: string) => json.unfilled.find((f) => f.pointer === pointer)?.why

function at(tree: unknown, pointer: string): unknown {
  return pointer.split('/').slice(1).reduce<unknown>((t, k) => (t && typeof t === 'object' ? (t as Record<string, unknown>)[k] : undefined), tree)
}

/** A generated calendar recipe with its recipe.yaml and kept base removed: a recipe in the calendar layout, written by hand. */
async function handWrittenCalendar(): Promise<{relaxRoot: string; dir: string; original: Record<string, unknown>}> {
  const {relaxRoot, dir} = await generatedRecipe('calendar')
  made.push(relaxRoot)
  const original = parseYaml(await readFile(path.join(dir, 'recipe.yaml'), 'utf8'))
  await rm(path.join(dir, 'recipe.yaml'))
  await rm(path.join(dir, '.gymrecipe'), {recursive: true})
  return {relaxRoot, dir, original}
}

/** A copy of one of the hand-written layouts in test/fixtures/relax-layouts. */
async function layout(recipe: string): Promise<{relaxRoot: string; dir: string}> {
  const relaxRoot = await mkdtemp(path.join(os.tmpdir(), 'gr-adopt-'))
  made.push(relaxRoot)
  await cp(path.join(repoRoot, 'test', 'fixtures', 'relax-layouts', RECIPES, recipe), path.join(relaxRoot, RECIPES, recipe), {recursive: true})
  await addModelConfigs(relaxRoot)
  return {relaxRoot, dir: path.join(relaxRoot, RECIPES, recipe)}
}

describe('gymrecipe adopt', () => {
  it('reads back what a recipe in the calendar layout uses: every value read equals the contract it was made from', async () => {
    const {relaxRoot, dir, original} = await handWrittenCalendar()
    const r = await adopt(relaxRoot, 'calendar', '--dry-run')
    expect(r.exitCode, r.stderr).toBe(3)
    expect(r.json.read.length).toBeGreaterThan(85)
    const differ = r.json.read.filter((f: {pointer: string}) => JSON.stringify(at(r.json.contract, f.pointer)) !== JSON.stringify(at(original, f.pointer)))
    // The trial is gymrecipe's own (no verify_*_trial.py): a hand-written recipe without one has none.
    expect(pointers(differ)).toEqual(['/trial'])
    expect(pointers(r.json.unfilled).sort()).toEqual(['/archetype', '/gateway/callback_protocol', '/gateway/lease_s'])
    // The generated verifier keeps its examples as constants: read with Python's parser, never run.
    expect(fromOf(r.json, '/verifier/correct')).toMatch(/^verify_calendar\.py:\d+$/)
    expect(whyOf(r.json, '/gateway/lease_s')).toContain("does not state lease_s (the Gateway's default applies)")
    expect(fromOf(r.json, '/gym/agent')).toMatch(/^start_calendar_gym\.sh:\d+, checked against environments\/calendar\/config\.yaml$/)
    await expect(stat(path.join(dir, 'recipe.adopt.yaml'))).rejects.toThrow(/ENOENT/)
  })

  it('writes a draft to fill, then recipe.yaml once it is filled; the adopted recipe verifies and shows what regeneration would change', async () => {
    const {relaxRoot, dir, original} = await handWrittenCalendar()
    const first = await adopt(relaxRoot, 'calendar')
    expect(first.exitCode).toBe(3)
    const draftFile = path.join(dir, 'recipe.adopt.yaml')
    const draftText = await readFile(draftFile, 'utf8')
    expect(draftText).toMatch(/^ {2}lease_s: <fill in> # fill in: the Gateway registration in start_calendar_gym\.sh does not state lease_s/m)
    await expect(stat(path.join(dir, 'recipe.yaml'))).rejects.toThrow(/ENOENT/)

    // The user fills every null in, as a person would.
    const draft = parseYaml(draftText)
    for (const p of pointers(first.json.unfilled)) {
      const keys = p.split('/').slice(1)
      keys.slice(0, -1).reduce((t: Record<string, unknown>, k) => t[k] as Record<string, unknown>, draft)[keys.at(-1)!] = at(original, p)
    }
    await writeFile(draftFile, stringifyYaml(draft))
    const second = await adopt(relaxRoot, 'calendar')
    expect(second.exitCode, JSON.stringify(second.json.unfilled)).toBe(0)
    expect(second.json.filled).toContainEqual({pointer: '/gateway/lease_s', from: 'you, in recipe.adopt.yaml'})
    expect(second.json.file).toBe(path.join(dir, 'recipe.yaml'))
    await expect(stat(draftFile)).rejects.toThrow(/ENOENT/)

    const v = await runCli(['verify', 'calendar', '--level', 'static', '--relax-root', relaxRoot, '--gym-root', snapshotRoot, '--json'])
    expect(v.exitCode, JSON.stringify(v.json?.rungs?.[0]?.checks?.filter((c: {status: string}) => c.status !== 'pass'))).toBe(0)

    // Everything was read back, so regenerating from the adopted contract changes none of the scripts.
    const diff = await runCli(['new', 'calendar', '--gym-root', snapshotRoot, '--relax-root', relaxRoot, '--update', '--dry-run', '--diff', '--json'])
    expect(diff.exitCode, diff.stderr).toBe(0)
    const actions = Object.fromEntries(diff.json.files.map((f: {name: string; action: string}) => [f.name, f.action]))
    expect(Object.entries(actions).filter(([name, action]) => name !== 'recipe.yaml' && action !== 'unchanged')).toEqual([])

    // A script edited by hand since: regeneration would change it back, and with no base that is a conflict.
    await editFile(dir, 'verify_calendar.py', (t) => t.replace(/^SUCCESS_REWARD = (.*)$/m, 'SUCCESS_REWARD = $1  # checked by hand'))
    const edited = await runCli(['new', 'calendar', '--gym-root', snapshotRoot, '--relax-root', relaxRoot, '--update', '--dry-run', '--diff'])
    expect(edited.exitCode).toBe(3)
    expect(edited.stdout).toMatch(/^ {2}conflict {2}verify_calendar\.py {2}\(.*no base kept/m)
    expect(edited.stdout).toContain('+<<<<<<< yours')
    expect(await readFile(path.join(dir, 'verify_calendar.py'), 'utf8')).not.toContain('<<<<<<<')

    const again = await adopt(relaxRoot, 'calendar')
    expect(again.json.error).toMatchObject({code: 'E_ALREADY_RECORDED', exit: 3})
  })

  it('bench (like gsm8k): the training script without a recipe suffix is recorded by name; values from environment defaults say so', async () => {
    const {relaxRoot} = await layout('bench')
    const r = await adopt(relaxRoot, 'bench')
    expect(r.exitCode).toBe(3)
    expect(r.json.contract.files).toEqual({run: 'run-qwen3-4B-8xgpu-nemo-gym.sh'})
    expect(r.json.contract.training.rollout.num_rollout).toEqual(expect.any(Number))
    expect(fromOf(r.json, '/training/rollout/num_rollout')).toMatch(/\(default of NEMO_GYM_NUM_ROLLOUT\)$/)
    // Its prepare script never names the raw file; the training script's NEMO_GYM_SOURCE_DATA default does.
    expect(r.json.contract.data).toMatchObject({raw_filename: 'bench_benchmark.jsonl', split: 'benchmark', smoke: true})
    expect(fromOf(r.json, '/data/raw_filename')).toBe('the NEMO_GYM_SOURCE_DATA default at run-qwen3-4B-8xgpu-nemo-gym.sh:13')
    // Its Gym config is not in this checkout.
    expect(whyOf(r.json, '/gym/agent')).toMatch(/the Gym config could not be read: .*benchmarks\/bench\/config\.yaml/)
    expect(r.json.contract.gym.agent).toBe('<fill in>')
  })

  it('tools (like workplace-assistant): two training scripts, the container from the host launcher, the Gateway registration', async () => {
    const {relaxRoot, dir} = await layout('tools')
    // As the real launchers do: readiness URLs on the agent and resources ports, a callback network default.
    await editFile(dir, 'start_tools_gym.sh', (t) =>
      t
        .replace('"max_deadline_s": 1800,', '"max_deadline_s": 1800,\n        "readiness_urls": [f"http://{host}:29401", f"http://{host}:29402"],')
        .replace('GYM_ROOT="${GYM_ROOT:-/opt/nemo-gym}"', 'export NEMO_GYM_CALLBACK_ALLOWED_NETWORKS="${NEMO_GYM_CALLBACK_ALLOWED_NETWORKS:-10.1.0.0/16}"\nGYM_ROOT="${GYM_ROOT:-/opt/nemo-gym}"'),
    )
    const r = await adopt(relaxRoot, 'tools')
    expect(r.exitCode).toBe(3)
    expect(r.json.notes.join('\n')).toMatch(/the contract records one training script, .*; .* stays as it is/)
    expect(r.json.contract.service).toMatchObject({container: 'nemo-gym-tools', gateway_port: 29400, image: 'relax-nemo-gym:tools-dev', privileged: false, start_timeout_s: 600})
    expect(fromOf(r.json, '/service/container')).toMatch(/^start_tools_gym_remote\.sh:\d+$/)
    expect(r.json.contract.gateway).toMatchObject({interrupt_policy: 'protected', max_concurrency: 8, queue_capacity: 32, max_deadline_s: 1800, deadline_s: 600})
    expect(r.json.contract.gym).toMatchObject({environment: 'tools', gateway_config: 'tools-v1', config_paths: ['resources_servers/tools/configs/tools.yaml']})
    expect(r.json.contract.data).toMatchObject({raw_filename: 'tools_train.jsonl', split: 'train', smoke: false})
    expect(whyOf(r.json, '/service/shm_size')).toContain('sets no --shm-size')
    expect(r.json.contract.gateway.readiness).toEqual(['agent', 'resource'])
    expect(r.json.contract.service.callback_networks).toEqual(['10.1.0.0/16'])
    expect(fromOf(r.json, '/service/callback_networks')).toMatch(/^the NEMO_GYM_CALLBACK_ALLOWED_NETWORKS default at start_tools_gym\.sh:\d+$/)
    expect(whyOf(r.json, '/ray/dashboard_port')).toContain('Ray picks one')
  })

  it('sandbox (like r2e-gym): the agent read from the Gym config, the Ray port from the host launcher, a trial verifier', async () => {
    const {relaxRoot} = await layout('sandbox')
    const r = await adopt(relaxRoot, 'sandbox')
    expect(r.exitCode).toBe(3)
    expect(r.json.contract.gym.agent).toMatchObject({name: 'swe_agents', type: 'swe_agents'})
    expect(r.json.contract.archetype).toBe('sandbox')
    expect(fromOf(r.json, '/ray/gcs_port')).toMatch(/^start_sandbox_gym_remote\.sh:\d+$/)
    expect(r.json.contract.ray.gcs_port).toBe(6393)
    expect(r.json.contract.verifier.kind).toBe('golden')
    expect(whyOf(r.json, '/trial')).toContain('verify_sandbox_trial.py')
    expect(r.json.contract.data.source).toMatchObject({type: expect.any(String)})
  })

  it('--fill-from fills what is left from a built-in and lists each value; bad inputs are refused', async () => {
    const {relaxRoot, dir} = await handWrittenCalendar()
    const filled = await adopt(relaxRoot, 'calendar', '--fill-from', 'calendar', '--dry-run')
    expect(filled.exitCode).toBe(0)
    expect(filled.json.complete).toBe(true)
    expect(filled.json.filled).toContainEqual({pointer: '/gateway/callback_protocol', from: 'the built-in calendar (--fill-from)'})
    expect(filled.json.unfilled).toEqual([])
    await expect(stat(path.join(dir, 'recipe.yaml'))).rejects.toThrow(/ENOENT/)

    expect((await adopt(relaxRoot, 'calendar', '--fill-from', 'nope')).json.error.exit).toBe(2)
    expect((await adopt(relaxRoot, 'nope')).json.error).toMatchObject({code: 'E_RECIPE_NOT_FOUND', exit: 2})
    await writeFile(path.join(dir, 'recipe.adopt.yaml'), 'archetype: [unclosed\n')
    expect((await adopt(relaxRoot, 'calendar')).json.error).toMatchObject({code: 'E_CONTRACT_INVALID', exit: 2})
  })
})
