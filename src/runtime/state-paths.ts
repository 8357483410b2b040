import {createHash} from 'node:crypto'
import os from 'node:os'
import path from 'node:path'

import {readTextIfExists} from './fs.js'

/**
 * Where gymrecipe keeps what it remembers about a recipe, outside the Relax checkout (a shared
 * checkout is never written to):
 *   ${XDG_STATE_HOME:-$HOME/.local/state}/gymrecipe/<kind>/<first 16 hex of sha256(recipe dir)>.json
 */
export function recipeStatePath(kind: string, recipeDir: string, env: NodeJS.ProcessEnv = process.env): string {
  const stateHome = env.XDG_STATE_HOME && path.isAbsolute(env.XDG_STATE_HOME) ? env.XDG_STATE_HOME : path.join(env.HOME || os.homedir(), '.local', 'state')
  const key = createHash('sha256').update(path.resolve(recipeDir)).digest('hex').slice(0, 16)
  return path.join(stateHome, 'gymrecipe', kind, `${key}.json`)
}

/** The parsed JSON of a recipe's state file, or undefined when it is missing or not JSON (it explains nothing then); a file that cannot be read throws. */
export async function readRecipeState(kind: string, recipeDir: string, env: NodeJS.ProcessEnv = process.env): Promise<unknown> {
  const text = await readTextIfExists(recipeStatePath(kind, recipeDir, env))
  if (text === undefined) return undefined
  try {
    return JSON.parse(text) as unknown
  } catch {
    return undefined
  }
}
