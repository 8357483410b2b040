import {cp, mkdtemp, readFile, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {newRecipe} from '../../src/scaffold/new-recipe.js'
import {repoRoot, snapshotRoot} from './cli.js'

export const CONFIG_FOR: Record<string, string> = {
  calendar: 'environments/calendar/config.yaml',
  'workplace-assistant': 'resources_servers/workplace_assistant/configs/workplace_assistant.yaml',
  'r2e-gym': 'responses_api_agents/swe_agents/configs/swebench_openhands.yaml',
}

/** The model configs of the fixture Relax checkout (scripts/models), which a training script sources. */
export async function addModelConfigs(relaxRoot: string): Promise<void> {
  await cp(path.join(repoRoot, 'test', 'fixtures', 'relax-checkout', 'scripts', 'models'), path.join(relaxRoot, 'scripts', 'models'), {recursive: true})
}

/** A temporary Relax root (with the fixture's model configs) holding one generated recipe; returns the root and the recipe folder. */
export async function generatedRecipe(builtin: 'calendar' | 'workplace-assistant' | 'r2e-gym', id: string = builtin, relaxRoot?: string): Promise<{relaxRoot: string; dir: string}> {
  const root = relaxRoot ?? (await mkdtemp(path.join(os.tmpdir(), 'gr-relax-')))
  if (!relaxRoot) await addModelConfigs(root)
  const result = await newRecipe({
    id,
    gymRoot: snapshotRoot,
    gymConfigs: [CONFIG_FOR[builtin]],
    relaxRoot: root,
    from: builtin,
    smoke: false,
    force: false,
    update: false,
    dryRun: false,
    version: 'test',
  })
  return {relaxRoot: root, dir: result.dir}
}

/** Edit one file of a recipe with a text transformation; fails loudly if the edit changed nothing. */
export async function editFile(dir: string, name: string, edit: (text: string) => string): Promise<void> {
  const file = path.join(dir, name)
  const before = await readFile(file, 'utf8')
  const after = edit(before)
  if (after === before) throw new Error(`edit of ${name} changed nothing`)
  await writeFile(file, after)
}

/** Rows enough for a run of the built-ins (one rollout step takes 32 prompts): a file's rows repeated to `count`. */
export const TRAINING_ROWS = 64

export async function repeatedRows(source: string, count = TRAINING_ROWS): Promise<string> {
  const rows = (await readFile(source, 'utf8')).split('\n').filter((line) => line.trim())
  return Array.from({length: count}, (_, i) => `${rows[i % rows.length]}\n`).join('')
}
