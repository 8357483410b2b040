/**
 * The last training submission of a recipe, kept outside the Relax checkout (so a shared checkout
 * is never written to) under
 *   ${XDG_STATE_HOME:-$HOME/.local/state}/gymrecipe/runs/<first 16 hex of sha256(recipe dir)>.json
 * `gymrecipe train` writes it; `gymrecipe status` and the training rung read it.
 */
import path from 'node:path'

import {writeFileAtomic} from './fs.js'
import {readRecipeState, recipeStatePath} from './state-paths.js'

export interface RecipeRunState {
  recipe: string
  recipeDir: string
  submissionId: string
  dashboardAddress: string
  /** Which variable the dashboard address came from (absent in records of older versions). */
  dashboardSource?: string
  logFile: string | null
  submittedAt: string
  smoke: boolean
}

/** The run-state file of a recipe directory (keyed by its absolute path). */
export function runStatePath(recipeDir: string, env: NodeJS.ProcessEnv = process.env): string {
  return recipeStatePath('runs', recipeDir, env)
}

function isRunState(value: unknown): value is RecipeRunState {
  if (!value || typeof value !== 'object') return false
  const v = value as Record<string, unknown>
  return (
    typeof v.recipe === 'string' &&
    typeof v.recipeDir === 'string' &&
    typeof v.submissionId === 'string' &&
    typeof v.dashboardAddress === 'string' &&
    (v.dashboardSource === undefined || typeof v.dashboardSource === 'string') &&
    (v.logFile === null || typeof v.logFile === 'string') &&
    typeof v.submittedAt === 'string' &&
    typeof v.smoke === 'boolean'
  )
}

/** The recorded last submission of this recipe dir, or undefined (none, unreadable or another dir's). */
export async function readRunState(recipeDir: string, env: NodeJS.ProcessEnv = process.env): Promise<RecipeRunState | undefined> {
  const parsed = await readRecipeState('runs', recipeDir, env)
  if (!isRunState(parsed)) return undefined
  // A hash collision or a moved state directory must never attach another recipe's job.
  if (path.resolve(parsed.recipeDir) !== path.resolve(recipeDir)) return undefined
  return parsed
}

/** Record the last submission of a recipe (atomic write). */
export async function writeRunState(state: RecipeRunState, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const record: RecipeRunState = {...state, recipeDir: path.resolve(state.recipeDir)}
  await writeFileAtomic(runStatePath(record.recipeDir, env), JSON.stringify(record, null, 2) + '\n', 0o600)
}
