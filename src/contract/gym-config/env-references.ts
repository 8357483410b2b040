/**
 * `${oc.env:NAME}` and `${oc.env:NAME,default}` in a loaded graph: values Gym reads from the
 * environment of `gym env start`, i.e. deployment values the Gym container must be given.
 */
import type {GymGraph} from './types.js'
import {forEachLeaf, toDotted} from './tree.js'

export interface EnvReference {
  name: string
  /** The fallback written after the comma; null when there is none (Gym then fails without the variable). */
  fallback: string | null
  /** Where the first reference is, dotted (e.g. arena_judge_model.responses_api_models.openai_model.openai_api_key). */
  at: string
}

const OC_ENV = /\$\{oc\.env:([A-Za-z_][A-Za-z0-9_]*)(?:,([^}]*))?\}/g

export function envReferences(graph: GymGraph): EnvReference[] {
  const found = new Map<string, EnvReference>()
  forEachLeaf(graph.merged, (value, path) => {
    if (typeof value !== 'string' || path[0] === 'config_paths') return
    for (const m of value.matchAll(OC_ENV)) {
      if (found.has(m[1])) continue
      const fallback = m[2] === undefined ? null : m[2].trim()
      found.set(m[1], {name: m[1], fallback: fallback === 'MISSING' || fallback === '???' ? null : fallback, at: toDotted(path)})
    }
  })
  return [...found.values()]
}
