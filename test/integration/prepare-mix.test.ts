/**
 * The in-container half of a several-environment recipe's prepare script: each environment's
 * dataset fetched with the (fixture) `gym dataset download`, stamped with its environment,
 * filtered to rows its grader can read, capped, shuffled with the recorded seed and published as
 * one raw file. Run in the Debian test base image with the fixture Gym CLI mounted where the
 * real one lives, an offline hub holding the two datasets, and Relax's converter.
 */
import {copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {FIXTURE_CONVERTER} from '../helpers/data-rung.js'
import {docker, dockerUnavailableReason, ensureBaseImage, removeByLabel, uniqueTestLabel} from '../helpers/docker.js'
import {generatedRecipe} from '../helpers/recipes.js'
import {newRecipe} from '../../src/scaffold/new-recipe.js'
import {snapshotRoot} from '../helpers/cli.js'

const unavailable = await dockerUnavailableReason()
const FIXTURE_GYM = path.resolve('test/fixtures/relax-checkout/examples/nemo_gym_agentic/service/fixture_gym')
const MATH = 'resources_servers/math_with_judge/configs/math_with_judge.yaml'
const WORKPLACE = 'resources_servers/workplace_assistant/configs/workplace_assistant.yaml'
const MATH_REPO = 'nvidia/Nemotron-RL-math-OpenMathReasoning'
const WORKPLACE_REPO = 'nvidia/Nemotron-RL-agent-workplace_assistant'

type Row = Record<string, unknown>

describe.skipIf(unavailable !== undefined)('the prepare script of a recipe mixing several environments', () => {
  const label = uniqueTestLabel('prepare-mix')
  let image: string
  let work: string
  let relaxRoot: string
  let math: Row[]
  let workplace: Row[]
  /** The math rows with row 2 ungradable: its grader reads expected_answer. */
  let mathWithHole: Row[]

  beforeAll(async () => {
    image = await ensureBaseImage()
    ;({relaxRoot} = await generatedRecipe('calendar'))
    work = await mkdtemp(path.join(os.tmpdir(), 'gr-prepare-mix-'))
    await mkdir(path.join(work, 'relax/examples/nemo_gym_agentic/scripts'), {recursive: true})
    await copyFile(FIXTURE_CONVERTER, path.join(work, 'relax/examples/nemo_gym_agentic/scripts/convert_dataset.py'))
    // The Gym root: only the CLI, the fixture's wrapper pointing at the mounted emulator.
    const bin = path.join(work, 'gym/.venv/bin')
    await mkdir(bin, {recursive: true})
    const wrapper = await readFile(path.join(FIXTURE_GYM, 'bin/wrapper.sh.in'), 'utf8')
    await writeFile(path.join(bin, 'gym'), wrapper.replaceAll('@PKG_DIR@', '/opt/fixture-gym').replaceAll('@PYTHON@', '/usr/bin/python3').replaceAll('@TOOL@', 'gym'), {mode: 0o755})
    const rows = async (file: string) => (await readFile(path.join(snapshotRoot, file), 'utf8')).split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as Row)
    // Numbered copies of the snapshot's rows, so that order and identity can be followed.
    const mathExamples = await rows('resources_servers/math_with_judge/data/example.jsonl')
    math = Array.from({length: 8}, (_, i) => ({...mathExamples[i % mathExamples.length], question: `q${i}: ${mathExamples[i % mathExamples.length].question}`}))
    mathWithHole = math.map((row, i) => {
      if (i !== 1) return row
      const {expected_answer: _dropped, ...rest} = row
      return rest
    })
    const workplaceExamples = await rows('resources_servers/workplace_assistant/data/example.jsonl')
    workplace = Array.from({length: 6}, (_, i) => ({...workplaceExamples[i % workplaceExamples.length], id: `w${i}`}))
    workplace[2].ground_truth = [] // Relax's recipe drops workplace rows without ground_truth
    workplace[4].environment = 'somewhere_else' // a stale stamp is replaced by the row's own environment
  }, 900_000)

  afterAll(async () => {
    await removeByLabel(label)
    if (work) await rm(work, {recursive: true, force: true})
    if (relaxRoot) await rm(relaxRoot, {recursive: true, force: true})
  })

  async function recipe(id: string, options: {caps?: Record<string, number>; seed?: number} = {}) {
    const made = await newRecipe({
      id, gymRoot: snapshotRoot, gymConfigs: [MATH, WORKPLACE], relaxRoot,
      agent: 'math_with_judge_simple_agent', moreAgents: ['workplace_assistant_simple_agent'],
      mixCaps: options.caps, mixSeed: options.seed, smoke: false, force: false, dryRun: false, version: 'test',
    })
    return made
  }

  /** Run the in-container branch of recipe `id` with `hub` as the offline hub. */
  async function inContainer(id: string, name: string, hub: Record<string, string>) {
    const hubDir = path.join(work, name, 'hub')
    const out = path.join(work, name, 'shared')
    for (const [repo, text] of Object.entries(hub)) {
      await mkdir(path.join(hubDir, repo), {recursive: true})
      await writeFile(path.join(hubDir, repo, 'train.jsonl'), text)
    }
    await mkdir(out, {recursive: true})
    const dir = path.join(relaxRoot, 'examples/nemo_gym_agentic/recipes', id)
    const result = await docker([
      'run', '--rm', '--init', '--network', 'none', '--label', label, '--entrypoint', 'bash',
      '--mount', `type=bind,source=${out},target=${out}`,
      '--mount', `type=bind,source=${dir},target=/opt/gymrecipe/recipe,readonly`,
      '--mount', `type=bind,source=${path.join(work, 'gym')},target=/opt/nemo-gym,readonly`,
      '--mount', `type=bind,source=${FIXTURE_GYM},target=/opt/fixture-gym/fixture_gym,readonly`,
      '--mount', `type=bind,source=${hubDir},target=/opt/hub,readonly`,
      '--mount', `type=bind,source=${path.join(work, 'relax')},target=/opt/relax-integration,readonly`,
      '-e', 'NEMO_GYM_PREPARE_IN_CONTAINER=1', '-e', `OUTPUT_DIR=${out}`, '-e', 'FIXTURE_GYM_HUB_ROOT=/opt/hub', '-e', 'PYTHONDONTWRITEBYTECODE=1',
      image, `/opt/gymrecipe/recipe/prepare_${id.replaceAll('-', '_')}.sh`,
    ])
    const raw = path.join(out, `${id.replaceAll('-', '_')}_train.jsonl`)
    const files = (await readdir(out)).sort()
    const published = files.includes(path.basename(raw)) ? await readFile(raw, 'utf8') : ''
    return {...result, files, published, rows: published.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as Row)}
  }

  /** A short name for a published line: the row's id or question number. */
  const idOf = (line: string) => {
    const row = JSON.parse(line) as Row
    return typeof row.id === 'string' ? row.id : String(row.question).split(':')[0]
  }
  const jsonl = (rows: Row[]) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n'

  it("stamps, filters, caps and shuffles each environment's rows into one raw file, in the order Relax's own multienv recipe gives them", async () => {
    const made = await recipe('mixed', {caps: {math_with_judge: 3}})
    expect(made.contract.data.source).toMatchObject({type: 'mix', seed: 20260829, parts: [{environment: 'math_with_judge', cap: 3}, {environment: 'workplace_assistant', cap: 0}]})
    const r = await inContainer('mixed', 'mixed', {[MATH_REPO]: jsonl(math), [WORKPLACE_REPO]: jsonl(workplace)})
    expect(r.stderr).toBe('')
    expect(r.exitCode).toBe(0)
    expect(r.stdout).toContain('mixed 8 row(s): math_with_judge 3, workplace_assistant 5 (dropped 1 ungradable); shuffled with seed 20260829')
    expect(r.stdout).toContain('validated 8 row(s) (math_with_judge/math-with-judge-v1 3, workplace_assistant/workplace-assistant-v1 5)')
    // Only the raw file and its preview: the downloaded parts are gone.
    expect(r.files).toEqual(['mixed_train.jsonl', 'mixed_train_relax.jsonl'])
    for (const row of r.rows) {
      const environment = typeof row.question === 'string' ? 'math_with_judge' : 'workplace_assistant'
      expect([row.environment, row.config, row.data_source]).toEqual([environment, environment === 'math_with_judge' ? 'math-with-judge-v1' : 'workplace-assistant-v1', environment])
    }
    expect(r.rows.filter((row) => row.environment === 'workplace_assistant').map((row) => row.id).sort()).toEqual(['w0', 'w1', 'w3', 'w4', 'w5'])

    // What Relax's prepare_multienv.sh does with the same datasets: stamp, drop workplace rows
    // without ground_truth, keep math's first 3, one random.Random(20260829).shuffle of
    // math + workplace, compact separators.
    const relax = await docker(['run', '--rm', '--network', 'none', '--label', label, '--entrypoint', '/usr/bin/python3', image, '-c', `
import json, random, sys
math, workplace = json.loads(sys.argv[1]), json.loads(sys.argv[2])
math = [dict(r, environment="math_with_judge", config="math-with-judge-v1", data_source="math_with_judge") for r in math][:3]
workplace = [dict(r, environment="workplace_assistant", config="workplace-assistant-v1", data_source="workplace_assistant") for r in workplace if r.get("ground_truth")]
merged = math + workplace
random.Random(20260829).shuffle(merged)
sys.stdout.write("".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\\n" for r in merged))
`, JSON.stringify(math), JSON.stringify(workplace)])
    expect(relax.exitCode, relax.stderr).toBe(0)
    // Compared by line (the helper trims the output): equal rows, equal order.
    expect(r.published.endsWith('}\n')).toBe(true)
    expect(r.published.trimEnd().split('\n').map(idOf)).toEqual(relax.stdout.trimEnd().split('\n').map(idOf))
    expect(r.published.trimEnd() === relax.stdout.trimEnd()).toBe(true)

    // The same inputs give the same file; another seed another order of the same rows.
    expect((await inContainer('mixed', 'again', {[MATH_REPO]: jsonl(math), [WORKPLACE_REPO]: jsonl(workplace)})).published).toBe(r.published)
    await recipe('reseeded', {caps: {math_with_judge: 3}, seed: 7})
    const reseeded = await inContainer('reseeded', 'reseeded', {[MATH_REPO]: jsonl(math), [WORKPLACE_REPO]: jsonl(workplace)})
    expect(reseeded.exitCode, reseeded.stderr).toBe(0)
    expect(reseeded.published).not.toBe(r.published)
    expect(reseeded.published.split('\n').sort()).toEqual(r.published.split('\n').sort())

    // A cap counts gradable rows: math row 2 lacks expected_answer, so the first three kept are rows 1, 3 and 4.
    const holed = await inContainer('mixed', 'holed', {[MATH_REPO]: jsonl(mathWithHole), [WORKPLACE_REPO]: jsonl(workplace)})
    expect(holed.exitCode, holed.stderr).toBe(0)
    expect(holed.stdout).toContain('math_with_judge 3 (dropped 1 ungradable)')
    expect(holed.rows.filter((row) => row.environment === 'math_with_judge').map((row) => String(row.question).split(':')[0]).sort()).toEqual(['q0', 'q2', 'q3'])
  })

  it('refuses a mix that leaves an environment without rows, and a dataset line that is not JSON, and publishes nothing', async () => {
    await recipe('starved')
    const noGroundTruth = workplace.map((row) => ({...row, ground_truth: null}))
    const starved = await inContainer('starved', 'starved', {[MATH_REPO]: jsonl(math), [WORKPLACE_REPO]: jsonl(noGroundTruth)})
    expect(starved.exitCode).toBe(2)
    expect(starved.stderr).toContain('workplace_assistant: no gradable rows (dropped 6 missing one of responses_create_params.input, responses_create_params.tools, id, ground_truth, category, environment_name): the mix would not train it')
    expect(starved.stderr).not.toContain('unbound variable')
    expect(starved.files).toEqual([]) // parts and temporary files removed too

    const broken = await inContainer('starved', 'broken', {[MATH_REPO]: `${jsonl(math.slice(0, 2))}{"question": \n`, [WORKPLACE_REPO]: jsonl(workplace)})
    expect(broken.exitCode).toBe(2)
    expect(broken.stderr).toMatch(/math_with_judge dataset line 3: not a JSON line/)
    expect(broken.files).toEqual([])

    const missing = await inContainer('starved', 'missing', {[MATH_REPO]: jsonl(math)})
    expect(missing.exitCode).not.toBe(0)
    expect(missing.stderr).toContain(`Dataset artifact not found: repo_id=${WORKPLACE_REPO}`)
    expect(missing.files).toEqual([])
  })
})
