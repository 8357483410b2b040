import {promises as fsp} from 'node:fs'
import path from 'node:path'

import {ExitCode, GymError} from '../errors.js'
import {PACKAGE_ROOT} from '../package-root.js'
import {loadContractFile} from './load.js'
import type {Archetype, RecipeContract} from './types.js'

export const BUILTIN_DIR = path.join(PACKAGE_ROOT, 'recipes')

/** The built-in recipe each archetype starts from when no --from is given. */
export const ARCHETYPE_BASE: Record<Archetype, string> = {
  'simple-agent': 'calendar',
  'stateful-tools': 'workplace-assistant',
  sandbox: 'r2e-gym',
}

export async function listBuiltins(): Promise<string[]> {
  const entries = await fsp.readdir(BUILTIN_DIR)
  return entries.filter((e) => e.endsWith('.yaml')).map((e) => e.replace(/\.yaml$/, '')).sort()
}

export async function loadBuiltin(name: string): Promise<RecipeContract> {
  const names = await listBuiltins()
  if (!names.includes(name)) {
    throw new GymError(`no built-in recipe "${name}"`, {
      code: 'E_UNKNOWN_BUILTIN',
      exit: ExitCode.usage,
      hint: `Choose one of: ${names.join(', ')}`,
    })
  }
  return loadContractFile(path.join(BUILTIN_DIR, `${name}.yaml`))
}
