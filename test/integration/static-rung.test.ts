import {readdir, rm, unlink} from 'node:fs/promises'
import path from 'node:path'
import {beforeEach, describe, expect, it} from 'vitest'

import {verifyRecipe} from '../../src/ladder/verify.js'
import {snapshotRoot} from '../helpers/cli.js'
import {editFile, generatedRecipe} from '../helpers/recipes.js'

async function staticReport(relaxRoot: string, recipe: string, gymRoot?: string) {
  return verifyRecipe({relaxRoot, recipe, level: 'static', render: false, smoke: false, env: process.env, gymRoot})
}

function failing(report: Awaited<ReturnType<typeof staticReport>>): string[] {
  return [...new Set(report.rungs.flatMap((r) => r.checks).filter((c) => c.status !== 'pass').map((c) => c.id))].sort()
}

describe('static rung on generated recipes', () => {
  it.each(['calendar', 'workplace-assistant'] as const)('passes on the generated %s recipe, graph names confirmed in the Gym config', async (builtin) => {
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
    ['static.bash-n', 'a shell syntax error', () => editFile(dir, 'env.sh', (t) => `${t}\nif then\n`)],
    ['static.shellcheck', 'a cd without a fallback shellcheck warns about', () =>
      editFile(dir, 'env.sh', (t) => `${t}\ncd "$EXP_DIR"\n`)],
    ['static.py-compile', 'the verifier imports a third-party package', () =>
      editFile(dir, 'verify_calendar.py', (t) => t.replace('import argparse\n', 'import argparse\nimport requests\n'))],
    ['static.env-deployment-only', 'env.sh sets a hyperparameter', () =>
      editFile(dir, 'env.sh', (t) => `${t}\nexport NEMO_GYM_N_SAMPLES_PER_PROMPT=8\n`)],
    ['static.run-arrays', 'GRPO_ARGS is not defined', () =>
      editFile(dir, RUN, (t) => t.replace('GRPO_ARGS=(', 'GRPO_SETTINGS=(').replace('"${GRPO_ARGS[@]}"', '"${GRPO_SETTINGS[@]}"'))],
    ['static.run-submit', 'something runs after ray job submit', () => editFile(dir, RUN, (t) => `${t}echo submitted\n`)],
    ['static.run-no-wait', '--no-wait for any non-empty RAY_NO_WAIT', () =>
      editFile(dir, RUN, (t) => t.replace('ray job submit "${NO_WAIT_ARGS[@]}"', 'ray job submit ${RAY_NO_WAIT:+--no-wait} "${NO_WAIT_ARGS[@]}"'))],
    ['static.run-no-delegation', 'the script sources another recipe', () =>
      editFile(dir, RUN, (t) => t.replace('CKPT_ARGS=(', '# shellcheck source=/dev/null\nsource "${EXAMPLE_DIR}/recipes/gsm8k/run-qwen3-4B-8xgpu-nemo-gym-gsm8k.sh"\nCKPT_ARGS=('))],
    ['static.run-raw-source', 'the converted preview is passed as source data', () =>
      editFile(dir, RUN, (t) => t.replace('"${GATEWAY_URL}" "${NEMO_GYM_SOURCE_DATA}" "${PROMPT_SET}"', '"${GATEWAY_URL}" "${EXP_DIR}/data/calendar_train_relax.jsonl" "${PROMPT_SET}"'))],
    ['static.run-no-working-dir', 'a Ray working_dir upload', () =>
      editFile(dir, RUN, (t) => t.replace('--runtime-env-json="${RUNTIME_ENV_JSON}"', '--runtime-env-json="${RUNTIME_ENV_JSON}" --working-dir ./'))],
    ['static.run-samples', 'one sample per prompt', () => editFile(dir, RUN, (t) => t.replace('--n-samples-per-prompt 8', '--n-samples-per-prompt 1'))],
    ['static.run-context', 'prompt budget equal to the context', () => editFile(dir, RUN, (t) => t.replace('--rollout-max-prompt-len 6144', '--rollout-max-prompt-len 8192'))],
    ['static.run-trial-timing', 'agent timeout not above the deadline', () => editFile(dir, RUN, (t) => t.replace('--agent-timeout 660', '--agent-timeout 600'))],
    ['static.run-trial-timing', 'deadline above the Gateway maximum', () => editFile(dir, RUN, (t) => t.replace('"NEMO_GYM_DEADLINE_S=600"', '"NEMO_GYM_DEADLINE_S=2400"').replace('--agent-timeout 660', '--agent-timeout 2460'))],
    ['static.run-trial-timing', 'interrupt policy differs from the Gateway', () => editFile(dir, RUN, (t) => t.replace('NEMO_GYM_INTERRUPT_POLICY=protected', 'NEMO_GYM_INTERRUPT_POLICY=resumable'))],
    ['static.prepare-source-path', 'prepare accepts any file name', () =>
      editFile(dir, PREPARE, (t) => t.replace('if [[ "${NEMO_GYM_SOURCE_DATA}" != "${OUTPUT_DIR}/${RAW_FILENAME}" ]]; then', 'if false; then'))],
    ['static.prepare-source-path', 'prepare accepts a relative path', () =>
      editFile(dir, PREPARE, (t) => t.replace('if [[ "${NEMO_GYM_SOURCE_DATA}" != /* ]]; then', 'if false; then'))],
    ['static.start-private-ray', 'RAY_ADDRESS is not unset', () => editFile(dir, START, (t) => t.replace('unset RAY_ADDRESS RAY_JOB_SUBMISSION_ID', 'unset RAY_JOB_SUBMISSION_ID'))],
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
