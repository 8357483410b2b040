/**
 * The in-container half of the generated prepare script (NEMO_GYM_PREPARE_IN_CONTAINER=1) on
 * awkward inputs, run in the Debian test base image exactly where the real script runs it:
 * the recipe folder at /opt/gymrecipe/recipe, a Gym root at /opt/nemo-gym holding the bundled
 * example split, Relax's convert_dataset.py under /opt/relax-integration and the output
 * directory at the same absolute path. Containers have no network and are removed by label.
 */
import {copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {FIXTURE_CONVERTER, SNAPSHOT_ROWS} from '../helpers/data-rung.js'
import {docker, dockerUnavailableReason, ensureBaseImage, removeByLabel, uniqueTestLabel} from '../helpers/docker.js'
import {generatedRecipe} from '../helpers/recipes.js'
import {newRecipe} from '../../src/scaffold/new-recipe.js'
import {snapshotRoot} from '../helpers/cli.js'

const unavailable = await dockerUnavailableReason()

describe.skipIf(unavailable !== undefined)('the generated prepare script inside a container', () => {
  const label = uniqueTestLabel('prepare-script')
  let image: string
  let work: string
  let recipeDir: string
  let good: string[]
  let relaxRoot: string

  beforeAll(async () => {
    image = await ensureBaseImage()
    ;({relaxRoot} = await generatedRecipe('calendar'))
    const made = await newRecipe({id: 'cal-smoke', gymRoot: snapshotRoot, gymConfigs: ['environments/calendar/config.yaml'], relaxRoot, from: 'calendar', dataset: 'example', smoke: true, force: false, dryRun: false, version: 'test'})
    recipeDir = made.dir
    work = await mkdtemp(path.join(os.tmpdir(), 'gr-prepare-script-'))
    await mkdir(path.join(work, 'relax/examples/nemo_gym_agentic/scripts'), {recursive: true})
    await copyFile(FIXTURE_CONVERTER, path.join(work, 'relax/examples/nemo_gym_agentic/scripts/convert_dataset.py'))
    good = (await readFile(SNAPSHOT_ROWS.calendar, 'utf8')).split('\n').filter((l) => l.trim())
  }, 900_000)

  afterAll(async () => {
    await removeByLabel(label)
    if (work) await rm(work, {recursive: true, force: true})
    if (relaxRoot) await rm(relaxRoot, {recursive: true, force: true})
  })

  /** Run the in-container branch on `rows` as the Gym root's bundled example split. */
  async function inContainer(name: string, rows: Uint8Array | string) {
    const gym = path.join(work, name, 'gym')
    const out = path.join(work, name, 'shared')
    await mkdir(path.join(gym, 'environments/calendar/data'), {recursive: true})
    await mkdir(out, {recursive: true})
    await writeFile(path.join(gym, 'environments/calendar/data/example.jsonl'), rows)
    const result = await docker([
      'run', '--rm', '--init', '--network', 'none', '--label', label, '--entrypoint', 'bash',
      '--mount', `type=bind,source=${out},target=${out}`,
      '--mount', `type=bind,source=${recipeDir},target=/opt/gymrecipe/recipe,readonly`,
      '--mount', `type=bind,source=${gym},target=/opt/nemo-gym,readonly`,
      '--mount', `type=bind,source=${path.join(work, 'relax')},target=/opt/relax-integration,readonly`,
      '-e', 'NEMO_GYM_PREPARE_IN_CONTAINER=1', '-e', `OUTPUT_DIR=${out}`,
      image, '/opt/gymrecipe/recipe/prepare_cal_smoke.sh',
    ])
    return {...result, out, files: (await readdir(out)).sort()}
  }

  it('publishes CRLF rows with blank lines and counts them like the converter (not like awk NF)', async () => {
    const r = await inContainer('crlf', `${good[0]}\r\n\r\n${good.slice(1).join('\r\n')}\r\n\r\n`)
    expect(r.stderr).toBe('')
    expect(r.exitCode).toBe(0)
    expect(r.stdout).toContain('validated 5 row(s)')
    expect(r.stdout).toContain(`published 5 row(s) to ${r.out}/cal_smoke_example.jsonl`)
    expect(r.files).toEqual(['cal_smoke_example.jsonl', 'cal_smoke_example_relax.jsonl'])
  })

  it('refuses invalid UTF-8 with its line and byte, and publishes nothing', async () => {
    const bad = Buffer.concat([Buffer.from(`${good[0]}\n${good[1]}\n{"responses_create_params": {"input": "caf`), Buffer.from([0xe9]), Buffer.from('"}, "exp_cal_state": {}}\n')])
    const r = await inContainer('utf8', bad)
    expect(r.exitCode).toBe(2)
    expect(r.stderr).not.toContain('unbound variable') // the cleanup trap must see its temp paths
    expect(r.stderr).toMatch(/\.tmp:3: invalid UTF-8 at byte 43\n/)
    expect(r.files).toEqual([])
  })

  it('refuses a byte order mark and a missing verifier field, naming the lines', async () => {
    const row = JSON.parse(good[2])
    delete row.exp_cal_state
    const r = await inContainer('bom', `\uFEFF${good[0]}\n${good[1]}\n${JSON.stringify(row)}\n`)
    expect(r.exitCode).toBe(2)
    expect(r.stderr).toMatch(/:1: starts with a UTF-8 byte order mark/)
    expect(r.stderr).toMatch(/:3: missing verifier field exp_cal_state/)
    expect(r.stderr).toContain('2 problem(s) in the downloaded data')
    expect(r.stderr).not.toContain('unbound variable')
    expect(r.files).toEqual([]) // temp files removed too
  })
})
