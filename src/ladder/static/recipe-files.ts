import {promises as fsp} from 'node:fs'
import path from 'node:path'

import type {RecipeFileNames} from '../../contract/types.js'
import {once} from '../scratch.js'
import type {CheckContext} from '../types.js'
import {type LogicalLine, logicalLines} from './shell.js'

export type Role = keyof RecipeFileNames

export interface LoadedFile {
  role: Role
  name: string
  path: string
  text: string
  lines: LogicalLine[]
}

/** Read the recipe's files once per run; missing ones are simply absent. */
export function recipeFiles(ctx: CheckContext): Promise<Partial<Record<Role, LoadedFile>>> {
  return once(ctx, 'static.files', () => readRecipeFiles(ctx))
}

async function readRecipeFiles(ctx: CheckContext): Promise<Partial<Record<Role, LoadedFile>>> {
  const out: Partial<Record<Role, LoadedFile>> = {}
  for (const [role, name] of Object.entries(ctx.target.files) as Array<[Role, string | undefined]>) {
    if (!name) continue
    const file = path.join(ctx.target.dir, name)
    const text = await fsp.readFile(file, 'utf8').catch(() => undefined)
    if (text === undefined) continue
    out[role] = {role, name, path: file, text, lines: name.endsWith('.sh') ? logicalLines(text) : []}
  }
  return out
}

export const ROLE_TITLES: Record<Role, string> = {
  env: 'env.sh',
  prepare: 'prepare_<recipe>.sh',
  start: 'start_<recipe>_gym.sh',
  run: 'run-<model>-nemo-gym-<recipe>.sh',
  verify: 'verify_<recipe>.py',
  readme: 'README.md',
  pitfall: 'PITFAIL.md',
}
