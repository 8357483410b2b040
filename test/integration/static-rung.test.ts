import {mkdtemp, readdir, rm, unlink, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {beforeEach, describe, expect, it} from 'vitest'

import {verifyRecipe} from '../../src/ladder/verify.js'
import {repoRoot, snapshotRoot} from '../helpers/cli.js'
import {editFile, generatedRecipe} from '../helpers/recipes.js'

async function staticReport(relaxRoot: string, recipe: string, gymRoot?: string) {
  return verifyRecipe({relaxRoot, recipe, level: 'static', render: false, smoke: false, env: process.env, gymRoot})
}

function failing(report: Awaited<ReturnType<typeof staticReport>>): string[] {
  return [...new Set(report.rungs.flatMap((r) => r.checks).filter((c) => c.status !== 'pass').map((c) => c.id))].sort()
}

const RUN_OF_CALENDAR = 'run-qwen3-4B-8xgpu-nemo-gym-calendar.sh'

describe('static rung on generated recipes', () => {
  it.each(['calendar', 'workplace-assistant', 'r2e-gym'] as const)('passes on the generated %s recipe, graph names confirmed in the Gym config', async (builtin) => {
    const {relaxRoot} = await generatedRecipe(builtin)
    const report = await staticReport(relaxRoot, builtin, snapshotRoot)
    expect(failing(report)).toEqual([])
    expect(report.status).toBe('pass')
    const graph = report.rungs[0].checks.find((c) => c.id === 'static.graph-names')!
    expect(graph.message).toContain('confirmed in the Gym config')
  })
})

describe('each static rule fails on a recipe that breaks exactly that rule', () => {
  let relaxRoot: string
  let dir: string
  beforeEach(async () => {
    ;({relaxRoot, dir} = await generatedRecipe('calendar'))
  })
  const RUN = 'run-qwen3-4B-8xgpu-nemo-gym-calendar.sh'
  const START = 'start_calendar_gym.sh'
  const PREPARE = 'prepare_calendar.sh'

  const cases: Array<[string, string, () => Promise<void>]> = [
    ['static.files', 'PITFAIL.md is missing', () => unlink(path.join(dir, 'PITFAIL.md'))],
    ['static.graph-names', 'the start script renames the agent instance', () =>
      editFile(dir, START, (t) => t.replaceAll('++calendar_simple_agent.responses_api_agents', '++calendar_agent.responses_api_agents'))],
    ['static.bash-n', 'a shell syntax error', () => editFile(dir, START, (t) => `${t}\nif then\n`)],
    ['static.shellcheck', 'a loop that runs once, which shellcheck warns about', () =>
      editFile(dir, START, (t) => `${t}\nfor name in GYM_HOST; do echo "\${name}"; done\n`)],
    ['static.env-deployment-only', 'env.sh runs a command when it is sourced', () =>
      editFile(dir, 'env.sh', (t) => `${t}\ncurl -s http://127.0.0.1:9/x || true\n`)],
    ['static.env-deployment-only', 'env.sh assigns from a command substitution', () =>
      editFile(dir, 'env.sh', (t) => `${t}\nGYM_HOST="$(hostname -I)"; export GYM_HOST\n`)],
    ['static.run-fixed-hyperparameters', '[calendar#2] a training value read from the environment', () =>
      editFile(dir, RUN, (t) => t.replace('--num-rollout 200', '--num-rollout "${NEMO_GYM_NUM_ROLLOUT:-200}"'))],
    ['static.run-raw-source', 'the prompt set is written over the prepare-time preview', () =>
      editFile(dir, RUN, (t) => t.replace('PROMPT_SET="${EXP_DIR}/data/calendar_train.jsonl"', 'PROMPT_SET="${NEMO_GYM_SOURCE_DATA%.jsonl}_relax.jsonl"'))],
    ['static.run-context', '[workplace-assistant#16] a per-GPU budget below the context without context parallelism', () =>
      editFile(dir, RUN, (t) => t.replace('--max-tokens-per-gpu 8192', '--max-tokens-per-gpu 4096'))],
    ['static.py-compile', 'the verifier imports a third-party package', () =>
      editFile(dir, 'verify_calendar.py', (t) => t.replace('import argparse\n', 'import argparse\nimport requests\n'))],
    ['static.env-deployment-only', 'env.sh sets a hyperparameter', () =>
      editFile(dir, 'env.sh', (t) => `${t}\nexport NEMO_GYM_N_SAMPLES_PER_PROMPT=8\n`)],
    ['static.run-arrays', 'GRPO_ARGS is not defined', () =>
      editFile(dir, RUN, (t) => t.replace('GRPO_ARGS=(', 'GRPO_SETTINGS=(').replaceAll('"${GRPO_ARGS[@]}"', '"${GRPO_SETTINGS[@]}"'))],
    ['static.run-submit', 'something runs after ray job submit', () => editFile(dir, RUN, (t) => `${t}echo submitted\n`)],
    ['static.run-no-wait', '[calendar#7] --no-wait for any non-empty RAY_NO_WAIT', () =>
      editFile(dir, RUN, (t) => t.replace('ray job submit "${NO_WAIT_ARGS[@]}"', 'ray job submit ${RAY_NO_WAIT:+--no-wait} "${NO_WAIT_ARGS[@]}"'))],
    ['static.run-no-delegation', '[calendar#1] the script sources another recipe', () =>
      editFile(dir, RUN, (t) => t.replace('CKPT_ARGS=(', '# shellcheck source=/dev/null\nsource "${EXAMPLE_DIR}/recipes/gsm8k/run-qwen3-4B-8xgpu-nemo-gym-gsm8k.sh"\nCKPT_ARGS=('))],
    ['static.run-raw-source', '[calendar#6] [gsm8k#2] the converted preview is passed as source data', () =>
      editFile(dir, RUN, (t) => t.replaceAll('"${GATEWAY_URL}" "${NEMO_GYM_SOURCE_DATA}" "${PROMPT_SET}"', '"${GATEWAY_URL}" "${EXP_DIR}/data/calendar_train_relax.jsonl" "${PROMPT_SET}"'))],
    ['static.run-submit', 'the submission passes other words than the portability check checks', () =>
      editFile(dir, RUN, (t) => t.replace(/(-- bash "\$\{RUN_TRAINING_SCRIPT\}" \\\n {2}"\$\{GATEWAY_URL\}") "\$\{NEMO_GYM_SOURCE_DATA\}"/, '$1 "${NEMO_GYM_SOURCE_DATA}x"'))],
    ['static.run-data-limit', '[calendar#5] a smoke row limit left in the training script', () =>
      editFile(dir, RUN, (t) => t.replace(`DATA_LIMIT=$(awk 'NF { count++ } END { print count + 0 }' "\${NEMO_GYM_SOURCE_DATA}")`, 'DATA_LIMIT=32'))],
    ['static.run-data-limit', '[workplace-assistant#2] rows counted with wc -l', () =>
      editFile(dir, RUN, (t) => t.replace(`DATA_LIMIT=$(awk 'NF { count++ } END { print count + 0 }' "\${NEMO_GYM_SOURCE_DATA}")`, 'DATA_LIMIT=$(wc -l < "${NEMO_GYM_SOURCE_DATA}")'))],
    ['static.run-no-working-dir', '[workplace-assistant#14] a Ray working_dir upload', () =>
      editFile(dir, RUN, (t) => t.replace('--runtime-env-json="${RUNTIME_ENV_JSON}"', '--runtime-env-json="${RUNTIME_ENV_JSON}" --working-dir ./'))],
    ['static.run-model-config', 'the sourced model config is not in scripts/models', () =>
      editFile(dir, RUN, (t) => t.replace('/qwen3-4B.sh"', '/qwen3-4B-typo.sh"'))],
    ['static.run-model-config', 'MODEL_ARGS is passed but no model config is sourced', () =>
      editFile(dir, RUN, (t) => t.replace(/^source "\$\{MODEL_CONFIG_DIR[^\n]*\n/m, ''))],
    ['static.run-samples', '[workplace-assistant#12] [gsm8k#6] [r2e-gym#19] one sample per prompt', () => editFile(dir, RUN, (t) => t.replace('--n-samples-per-prompt 8', '--n-samples-per-prompt 1'))],
    ['static.run-context', 'prompt budget equal to the context', () => editFile(dir, RUN, (t) => t.replace('--rollout-max-prompt-len 6144', '--rollout-max-prompt-len 8192'))],
    ['static.run-trial-timing', 'agent timeout not above the deadline', () => editFile(dir, RUN, (t) => t.replace('--agent-timeout 660', '--agent-timeout 600'))],
    ['static.run-trial-timing', 'deadline above the Gateway maximum', () => editFile(dir, RUN, (t) => t.replace('"NEMO_GYM_DEADLINE_S=600"', '"NEMO_GYM_DEADLINE_S=2400"').replace('--agent-timeout 660', '--agent-timeout 2460'))],
    ['static.run-trial-timing', 'interrupt policy differs from the Gateway', () => editFile(dir, RUN, (t) => t.replace('NEMO_GYM_INTERRUPT_POLICY=protected', 'NEMO_GYM_INTERRUPT_POLICY=resumable'))],
    ['static.prepare-source-path', 'prepare accepts any file name', () =>
      editFile(dir, PREPARE, (t) => t.replace('if [[ "${NEMO_GYM_SOURCE_DATA}" != "${OUTPUT_DIR}/${RAW_FILENAME}" ]]; then', 'if false; then'))],
    ['static.prepare-source-path', 'prepare accepts a relative path', () =>
      editFile(dir, PREPARE, (t) => t.replace('if [[ "${NEMO_GYM_SOURCE_DATA}" != /* ]]; then', 'if false; then'))],
    ['static.prepare-source-path', '[calendar#4] prepare derives NEMO_GYM_SOURCE_DATA itself, ignoring the value it is given', () =>
      editFile(dir, PREPARE, (t) => t.replace(': "${NEMO_GYM_SOURCE_DATA:?Set NEMO_GYM_SOURCE_DATA in ${SCRIPT_DIR}/env.sh}"', 'NEMO_GYM_SOURCE_DATA="${DATA_DIR:-/data}/calendar_train.jsonl"'))],
    ['static.start-private-ray', '[calendar#8] [workplace-assistant#8] [gsm8k#8] [r2e-gym#6] RAY_ADDRESS is not unset', () => editFile(dir, START, (t) => t.replace('unset RAY_ADDRESS RAY_JOB_SUBMISSION_ID', 'unset RAY_JOB_SUBMISSION_ID'))],
    ['static.start-ownership', 'the container is replaced without reading its label', () =>
      editFile(dir, START, (t) => t.replace(/ {2}OWNER=\$\(docker container inspect[^\n]*\n {2}if \[\[ "\$\{OWNER\}" != "\$\{RECIPE_ID\}" \]\]; then\n[^\n]*\n {4}exit 3\n {2}fi\n/, ''))],
  ]

  it.each(cases)('%s: %s', async (id, _what, breakIt) => {
    await breakIt()
    const report = await staticReport(relaxRoot, 'calendar')
    // A syntax error is also a shellcheck parse error; every other rule is caught by its own check alone.
    expect(failing(report)).toEqual(id === 'static.bash-n' ? ['static.bash-n', 'static.shellcheck'] : [id])
    expect(report.status).toBe('fail')
    const check = report.rungs[0].checks.find((c) => c.id === id && c.status === 'fail')!
    expect(check.message.length).toBeGreaterThan(0)
    expect(check.file ?? '').not.toBe(undefined)
  })
})

describe('hand-written recipes without recipe.yaml', () => {
  it('check graph names against --gym-root, and say "not checked" without it', async () => {
    const {relaxRoot, dir} = await generatedRecipe('calendar')
    await rm(path.join(dir, 'recipe.yaml'))
    expect((await readdir(dir)).includes('recipe.yaml')).toBe(false)
    const without = await staticReport(relaxRoot, 'calendar')
    const graph = without.rungs[0].checks.find((c) => c.id === 'static.graph-names')!
    expect(graph.status).toBe('skip')
    expect(without.rungs[0].status).toBe('incomplete')
    expect(without.status).toBe('fail')

    const withGym = await staticReport(relaxRoot, 'calendar', snapshotRoot)
    expect(failing(withGym)).toEqual([])

    await editFile(dir, 'start_calendar_gym.sh', (t) => t.replaceAll('++calendar.resources_servers.calendar.', '++calendar_resources.resources_servers.calendar.'))
    const renamed = await staticReport(relaxRoot, 'calendar', snapshotRoot)
    const check = renamed.rungs[0].checks.find((c) => c.id === 'static.graph-names' && c.status === 'fail')!
    expect(check.message).toContain('calendar_resources.resources_servers.calendar is not in the Gym config')
    expect(check.line).toBeGreaterThan(0)
  })
})

/**
 * The layouts of the real Relax recipes (test/fixtures/relax-layouts, written for these tests):
 * each rule break they carry is reported at its file and line, and nothing else fails.
 */
describe('hand-written recipes in the layouts Relax uses', () => {
  const layouts = path.join(repoRoot, 'test', 'fixtures', 'relax-layouts')
  const verdicts = async (recipe: string) => {
    const report = await staticReport(layouts, recipe)
    const checks = report.rungs[0].checks
    return {
      report,
      failing: checks.filter((c) => c.status === 'fail').map((c) => `${c.id} ${c.file}`),
      notChecked: [...new Set(checks.filter((c) => c.status === 'skip').map((c) => c.id))].sort(),
      byId: (id: string) => checks.filter((c) => c.id === id),
    }
  }

  it('bench (like gsm8k): hyperparameters from the environment, a loose --no-wait, a prepare that ignores NEMO_GYM_SOURCE_DATA', async () => {
    const v = await verdicts('bench')
    const run = 'run-qwen3-4B-8xgpu-nemo-gym.sh'
    expect([...new Set(v.failing)].sort()).toEqual([`static.prepare-source-path prepare_bench.sh`, `static.run-data-limit ${run}`, `static.run-fixed-hyperparameters ${run}`, `static.run-no-wait ${run}`])
    expect(v.byId('static.run-data-limit')[0].message).toBe('training reads at most 32 rows unless NEMO_GYM_DATA_LIMIT is set: a smoke default left in the training script')
    const fixed = v.byId('static.run-fixed-hyperparameters')
    expect(fixed.find((c) => c.message.startsWith('--num-rollout reads NEMO_GYM_NUM_ROLLOUT'))?.line).toBe(15)
    expect(fixed.map((c) => c.message.split(' reads ')[1].split(' ')[0]).sort()).toEqual(['NEMO_GYM_AGENT_TIMEOUT', 'NEMO_GYM_DATA_LIMIT', 'NEMO_GYM_DEADLINE_S', 'NEMO_GYM_NUM_ROLLOUT', 'NEMO_GYM_N_SAMPLES_PER_PROMPT', 'NEMO_GYM_ROLLOUT_MAX_CONTEXT_LEN', 'NEMO_GYM_ROLLOUT_MAX_PROMPT_LEN'])
    // Defaults are still worked out: 4 samples, 8191 < 8192, a 660 s timeout above the 600 s deadline.
    expect(v.byId('static.run-samples')[0]).toMatchObject({status: 'pass', message: '--n-samples-per-prompt 4'})
    expect(v.byId('static.run-trial-timing')[0]).toMatchObject({status: 'pass', message: 'deadline 600 s <= 1800 s, agent timeout 660 s, policy protected'})
    // Relax keeps env.sh out of git; no script creates the container, the README does by hand.
    expect(v.notChecked).toEqual(['static.env-deployment-only', 'static.graph-names', 'static.start-ownership'])
    expect(v.byId('static.start-ownership')[0].message).toContain('README.md:6 starts it with a hand-typed docker run')
    expect(v.byId('static.py-compile')[0]).toMatchObject({status: 'pass', message: expect.stringContaining('imports httpx')})
  })

  it('tools (like workplace-assistant): every training script is checked, and the host launcher replaces any container by name', async () => {
    const v = await verdicts('tools')
    expect(v.byId('static.run-arrays').map((c) => c.file).sort()).toEqual(['run-qwen3-4B-8xgpu-nemo-gym-tools-hybrid-async.sh', 'run-qwen3-4B-8xgpu-nemo-gym-tools.sh'])
    expect([...new Set(v.failing)].sort()).toEqual(['static.run-no-wait run-qwen3-4B-8xgpu-nemo-gym-tools.sh', 'static.start-ownership start_tools_gym_remote.sh'])
    const ownership = v.byId('static.start-ownership')
    expect(ownership.map((c) => c.message)).toEqual(['the container is not created with --label ai.relax.recipe=<recipe>', "the existing container's ai.relax.recipe label is never read, yet line 10 removes any container with that name"])
    expect(v.byId('static.prepare-source-path')[0]).toMatchObject({status: 'pass', message: expect.stringContaining('/tools_train.jsonl (name from prepare_tools.sh:14)')})
    expect(v.byId('static.py-compile').map((c) => c.file)).toEqual(['verify_tools.py', 'verify_tools_trial.py'])
  })

  it('sandbox (like r2e-gym): the CP-aware token budget passes; the remote container command starts Ray without unsetting RAY_ADDRESS', async () => {
    const v = await verdicts('sandbox')
    expect(v.byId('static.run-context')[0]).toMatchObject({status: 'pass', message: expect.stringContaining('12800 tokens per GPU x CP 4 >= context')})
    expect([...new Set(v.failing)]).toEqual(['static.start-private-ray start_sandbox_gym_remote.sh'])
    expect(v.byId('static.start-private-ray').find((c) => c.file === 'start_sandbox_local.sh')).toMatchObject({status: 'pass', message: expect.stringContaining('attaches')})
    expect(v.byId('static.start-ownership')[0]).toMatchObject({status: 'pass', file: 'start_sandbox_gym_remote.sh'})
    // The Gateway maximum is read from an environment variable whose default the launcher sets.
    expect(v.byId('static.run-trial-timing')[0]).toMatchObject({status: 'pass', message: 'deadline 1200 s <= 7200 s, agent timeout 1260 s, policy protected'})
  })
})

describe('a check that cannot run', () => {
  it('is "not checked" with the reason, never a failure', async () => {
    const {relaxRoot, dir} = await generatedRecipe('calendar')
    await editFile(dir, RUN_OF_CALENDAR, (t) => t.replace('--n-samples-per-prompt 8', '--n-samples-per-prompt "$(cat /etc/samples)"'))
    const report = await staticReport(relaxRoot, 'calendar')
    const samples = report.rungs[0].checks.find((c) => c.id === 'static.run-samples')!
    expect(samples).toMatchObject({status: 'skip', message: expect.stringContaining('cannot be worked out')})
    expect(report.rungs[0].status).toBe('incomplete')
  })
})

describe('the model config a training script sources', () => {
  it('is looked up in MODEL_CONFIG_DIR when the deployment sets it, and is "not checked" where there is no such folder', async () => {
    const {relaxRoot} = await generatedRecipe('calendar')
    const check = async (env: NodeJS.ProcessEnv) => {
      const report = await verifyRecipe({relaxRoot, recipe: 'calendar', level: 'static', render: false, smoke: false, env})
      return report.rungs[0].checks.find((c) => c.id === 'static.run-model-config')!
    }
    expect(await check(process.env)).toMatchObject({status: 'pass', message: expect.stringContaining('sources qwen3-4B.sh, present in')})
    const elsewhere = await mkdtemp(path.join(os.tmpdir(), 'gr-models-'))
    expect(await check({...process.env, MODEL_CONFIG_DIR: elsewhere})).toMatchObject({status: 'fail', message: `sources qwen3-4B.sh, which is not in ${elsewhere}: ray job submit would fail before training starts`})
    await writeFile(path.join(elsewhere, 'qwen3-4B.sh'), 'MODEL_ARGS=()\n')
    expect(await check({...process.env, MODEL_CONFIG_DIR: elsewhere})).toMatchObject({status: 'pass'})
    await rm(path.join(relaxRoot, 'scripts'), {recursive: true})
    expect(await check(process.env)).toMatchObject({status: 'skip', message: expect.stringContaining('scripts/models is not a folder'), hint: expect.stringContaining('--relax-root')})
  })
})
