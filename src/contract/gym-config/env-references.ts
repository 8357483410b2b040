/**
 * `${oc.env:NAME}` and `${oc.env:NAME,default}` in a loaded graph: values Gym reads from the
 * environment of `gym env start`, i.e. deployment values the Gym container must be given.
 */
import type {GymGraph} from './types.js'
import {forEachLeaf, isMissing, toDotted} from './tree.js'
import {envPrefixOf, freeName} from './model-servers.js'
import {pointerPath} from '../../schema-errors.js'

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

export type UnsetValue =
  | {
      /** Dotted override path, e.g. swe_agents.responses_api_agents.swe_agents.dataset_path. */
      path: string
      /** The deployment variable the start line reads it from. */
      env: string
    }
  | {
      path: string
      /** The value the start line sets, known from the graph (a switched-off judge's server name). */
      value: string
    }

/** A key Hydra takes on the command line, one segment of a dotted override path. */
const OVERRIDE_SEGMENT = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/

/**
 * Keys that `${key}` references name and no loaded config sets (`${tavily_api_key}`, which Gym
 * expects from env.yaml): Gym resolves every reference when it starts and stops at the first one
 * missing, so each becomes a deployment variable named after the key (TAVILY_API_KEY). A reference
 * written in a value the recipe overrides (a judge endpoint moved off the policy) is gone by then.
 */
function unsetReferences(graph: GymGraph, known: ReadonlyMap<string, string | null>, used: Set<string>): UnsetValue[] {
  const settable: UnsetValue[] = []
  for (const p of graph.problems) {
    if (p.kind !== 'unset-reference' || !p.key || known.has(toDotted(pointerPath(p.pointer))) || known.has(p.key) || settable.some((u) => u.path === p.key)) continue
    // Only a key of its own: a dangling reference into a server the config defines is a config error, not a value to give.
    const segments = p.key.split('.')
    if (!segments.every((s) => OVERRIDE_SEGMENT.test(s)) || Object.hasOwn(graph.merged, segments[0])) continue
    const wanted = envPrefixOf(p.key.replaceAll('.', '_'))
    const env = freeName(/^[A-Z]/.test(wanted) ? wanted : `GYM_${wanted}`, used)
    used.add(env)
    settable.push({path: p.key, env})
  }
  return settable
}

/**
 * What Gym needs and no loaded config sets: `???` values left in the servers the recipe starts (by
 * instance id), each a deployment variable named after its instance and field
 * (SWE_AGENTS_DATASET_PATH), and keys `${…}` references name (see unsetReferences). A path that
 * cannot be written as a command-line override (a list index, a key with dots) is not recorded:
 * `new` lists those. `taken` are names in use; `known` maps a dotted path to the value the recipe
 * sets there itself, or to null when another override sets it already.
 */
export function unsetValues(graph: GymGraph, started: readonly string[], taken: ReadonlySet<string>, known: ReadonlyMap<string, string | null> = new Map()): UnsetValue[] {
  const settable: UnsetValue[] = []
  const used = new Set(taken)
  forEachLeaf(graph.merged, (value, path) => {
    if (!isMissing(value) || !started.includes(String(path[0]))) return
    const segments = path.map(String)
    const dotted = segments.join('.')
    if (known.has(dotted)) {
      const fill = known.get(dotted)
      if (fill !== null && fill !== undefined) settable.push({path: dotted, value: fill})
      return
    }
    if (segments.length < 4 || !segments.every((s, i) => (i === 2 ? /^[A-Za-z0-9_]+$/.test(s) : OVERRIDE_SEGMENT.test(s)))) return
    const wanted = envPrefixOf([segments[0], ...segments.slice(3)].join('_'))
    const env = freeName(/^[A-Z]/.test(wanted) ? wanted : `GYM_${wanted}`, used)
    used.add(env)
    settable.push({path: dotted, env})
  })
  return [...settable, ...unsetReferences(graph, known, used)]
}
