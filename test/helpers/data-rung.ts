import {copyFile, mkdir, mkdtemp, readFile, rm, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {parse as parseYaml, stringify as stringifyYaml} from 'yaml'

import {dataRung} from '../../src/ladder/data/index.js'
import {runLadder} from '../../src/ladder/runner.js'
import {resolveRecipe} from '../../src/recipe/target.js'
import type {CheckResult, LadderReport} from '../../src/ladder/types.js'
import {repoRoot, snapshotRoot} from './cli.js'
import {generatedRecipe} from './recipes.js'
import {Scratch} from '../../src/ladder/scratch-store.js'

export const SNAPSHOT_ROWS = {
  calendar: path.join(snapshotRoot, 'environments/calendar/data/example.jsonl'),
  workplace: path.join(snapshotRoot, 'resources_servers/workplace_assistant/data/example.jsonl'),
  math: path.join(snapshotRoot, 'resources_servers/math_with_judge/data/example.jsonl'),
}

export const FIXTURE_CONVERTER = path.join(repoRoot, 'test/fixtures/relax-checkout/examples/nemo_gym_agentic/scripts/convert_dataset.py')
export const CONVERTER_IN_CHECKOUT = 'examples/nemo_gym_agentic/scripts/convert_dataset.py'


export interface DataCase {
  relaxRoot: string
  dir: string
  recipe: string
  /** Shared-data directory for this case (a temp dir). */
  data: string
}

const created: string[] = []

/** Remove every temp Relax root and data dir made by dataCase() in this test file. */
export async function removeDataCases(): Promise<void> {
  await Promise.all(created.splice(0).map((dir) => rm(dir, {recursive: true, force: true})))
}

/** A generated recipe in a temp Relax root that also has Relax's convert_dataset.py, plus a temp data dir. */
export async function dataCase(builtin: 'calendar' | 'workplace-assistant' = 'calendar', options: {converter?: boolean} = {}): Promise<DataCase> {
  const {relaxRoot, dir} = await generatedRecipe(builtin)
  if (options.converter !== false) {
    await mkdir(path.join(relaxRoot, path.dirname(CONVERTER_IN_CHECKOUT)), {recursive: true})
    await copyFile(FIXTURE_CONVERTER, path.join(relaxRoot, CONVERTER_IN_CHECKOUT))
  }
  const data = await mkdtemp(path.join(os.tmpdir(), 'gr-data-'))
  created.push(relaxRoot, data)
  return {relaxRoot, dir, recipe: builtin, data}
}

/** Edit recipe.yaml's data block (e.g. a math contract, an example split). */
export async function editContractData(c: DataCase, data: Record<string, unknown>): Promise<void> {
  const file = path.join(c.dir, 'recipe.yaml')
  const doc = parseYaml(await readFile(file, 'utf8'))
  doc.data = {...doc.data, ...data}
  await writeFile(file, stringifyYaml(doc))
}

export async function writeData(c: DataCase, name: string, content: string | Uint8Array): Promise<string> {
  const file = path.join(c.data, name)
  await writeFile(file, content)
  return file
}

/** A socket no daemon listens on: the probe is skipped unless a test asks for the real daemon. */
export const NO_DOCKER = {DOCKER_HOST: 'unix:///nonexistent/gymrecipe-test-no-docker.sock'}
export const REAL_DOCKER = {DOCKER_HOST: process.env.DOCKER_HOST}

/**
 * Climb static (empty) → data with NEMO_GYM_SOURCE_DATA set in the environment env.sh inherits.
 * Docker is off unless options.env brings REAL_DOCKER (container probes are slow on vfs).
 */
export async function dataReport(c: DataCase, source: string | undefined, options: {smoke?: boolean; env?: Record<string, string | undefined>} = {}): Promise<LadderReport> {
  const target = await resolveRecipe(c.relaxRoot, c.recipe)
  const env: NodeJS.ProcessEnv = {...process.env, NEMO_GYM_SOURCE_DATA: source, NEMO_GYM_IMAGE: 'gymrecipe-test-absent:none', GYMRECIPE_PROBE_IMAGE: undefined, ...NO_DOCKER, ...options.env}
  for (const [key, value] of Object.entries(env)) if (value === undefined) delete env[key]
  // The static rung is tested elsewhere: the data rung runs on its own.
  return runLadder([dataRung], {target, options: {env, smoke: options.smoke ?? false}, scratch: new Scratch()}, {render: false, level: 'data', only: true})
}

export function checksOf(report: LadderReport): CheckResult[] {
  return report.rungs.find((r) => r.rung === 'data')?.checks ?? []
}

/** Ids of the data checks that failed (each once). */
export function failedIds(report: LadderReport): string[] {
  return [...new Set(checksOf(report).filter((c) => c.status === 'fail').map((c) => c.id))].sort()
}

export function resultsOf(report: LadderReport, id: string): CheckResult[] {
  return checksOf(report).filter((c) => c.id === id)
}
