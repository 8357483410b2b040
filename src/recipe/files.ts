/**
 * The files of a recipe folder, read once each, by role and by kind, and what a launcher does
 * (runs Gym, starts Ray, creates the service container) as read from its lines.
 */
import path from 'node:path'

import type {RecipeFileNames} from '../contract/types.js'
import {INPUT_LIMITS, readInputText} from '../runtime/read-input.js'
import {type LogicalLine, logicalLines} from './shell.js'
import type {RecipeLayout, RecipeTarget} from './types.js'

export type Role = keyof RecipeFileNames

export interface LoadedFile {
  name: string
  path: string
  text: string
  lines: LogicalLine[]
}

export interface RecipeFiles {
  /** The primary file of each role (the contract's names, or the ones discovered). */
  byRole: Partial<Record<Role, LoadedFile>>
  training: LoadedFile[]
  launchers: LoadedFile[]
  prepare: LoadedFile[]
  verifiers: LoadedFile[]
  shell: LoadedFile[]
}

/** Read a recipe's files, each once; missing ones are simply absent. */
export async function readRecipeFiles(target: RecipeTarget): Promise<RecipeFiles> {
  const cache = new Map<string, Promise<LoadedFile | undefined>>()
  const load = (name: string) => {
    if (!cache.has(name)) {
      const file = path.join(target.dir, name)
      // Missing files are simply absent; one that is no small text file (a pipe, a device) is refused.
      cache.set(name, readInputText(file, {what: name, maxBytes: INPUT_LIMITS.recipeFile}).then((text) => (text === undefined ? undefined : {name, path: file, text, lines: name.endsWith('.sh') ? logicalLines(text) : []})))
    }
    return cache.get(name)!
  }
  const byRole: Partial<Record<Role, LoadedFile>> = {}
  for (const [role, name] of Object.entries(target.files) as Array<[Role, string | undefined]>) {
    const loaded = name ? await load(name) : undefined
    if (loaded) byRole[role] = loaded
  }
  const kind = async (k: keyof RecipeLayout) => (await Promise.all(target.layout[k].map(load))).filter((f): f is LoadedFile => !!f)
  return {byRole, training: await kind('training'), launchers: await kind('launchers'), prepare: await kind('prepare'), verifiers: await kind('verifiers'), shell: await kind('shell')}
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

/** How a launcher takes part in starting the service, read from what it runs. */
export interface LauncherRole {
  /** Runs `gym env start` itself (in the container, or co-located). */
  startsGym: boolean
  /** Starts a Ray head of its own (possibly inside a container command string). */
  startsRay: boolean
  /** Creates or runs the long-lived service container (docker create/run without --rm). */
  createsContainer: boolean
}

export function launcherRole(f: LoadedFile): LauncherRole {
  return {
    startsGym: f.lines.some((l) => /\bgym["']?\s+env\s+start\b/.test(l.text)),
    startsRay: f.lines.some((l) => /\bray["']?\s+start\b/.test(l.text)),
    createsContainer: f.lines.some((l) => /\bdocker\s+(?:container\s+)?(?:create|run)\b/.test(l.text) && !/--rm\b/.test(l.text)),
  }
}
