/**
 * Where an environment's example task rows are in a Gym checkout: the JSONL files its agent
 * declares (example splits first), then the `data/example.jsonl` Gym keeps beside every resources
 * server (its CI requires one). They give verifier fields, the task rows example rollouts answer,
 * and the rows a user can smoke-test with when the config declares no training data.
 */
import {promises as fsp} from 'node:fs'
import path from 'node:path'
import {isInside} from '../../runtime/fs.js'
import {configRootPath} from './paths.js'
import type {GymGraph} from './types.js'
import {resourcesServerOf} from './graph.js'

export interface ExampleRowsFile {
  /** Relative to the Gym root, or `${NAME}/…` under a config root (as recipe.yaml records it). */
  path: string
  /** Where it is on this machine. */
  file: string
  /** The dataset split the config declares it as; 'example' for a resources server's own file. */
  split: string
  /** The dataset name when the agent declares it. */
  dataset: string | null
}

/** The resources server's own example file, relative to the Gym root. */
export function resourceExamplePath(implementation: string): string {
  return `resources_servers/${implementation}/data/example.jsonl`
}

async function nonEmptyFile(file: string): Promise<boolean> {
  return fsp.stat(file).then((s) => s.isFile() && s.size > 0, () => false)
}

/**
 * A path as Gym resolves it: under each config root first (your own tree before the checkout, as
 * Gym searches NEMO_GYM_EXTRA_ROOTS), then under the Gym root. Undefined when no non-empty file is there.
 */
export async function resolveDataPath(gymRoot: string, relative: string, roots: ConfigRoot[] = []): Promise<{path: string; file: string} | undefined> {
  for (const root of roots) {
    const dir = path.resolve(root.dir)
    const file = path.resolve(dir, relative)
    if (isInside(dir, file) && (await nonEmptyFile(file))) return {path: configRootPath(root.name, path.relative(dir, file)), file}
  }
  const dir = path.resolve(gymRoot)
  const file = path.resolve(dir, relative)
  return isInside(dir, file) && (await nonEmptyFile(file)) ? {path: path.relative(dir, file), file} : undefined
}

/** A tree of the user's own outside the Gym checkout, by the variable that names it. */
export interface ConfigRoot {
  name: string
  dir: string
}

export async function exampleRowsFiles(gymRoot: string, graph: GymGraph, agentId: string, roots: ConfigRoot[] = []): Promise<ExampleRowsFile[]> {
  const agent = graph.agents.find((a) => a.id === agentId)
  const found: ExampleRowsFile[] = []
  const seen = new Set<string>()
  const add = async (relative: string, split: string, dataset: string | null) => {
    const resolved = await resolveDataPath(gymRoot, relative, roots)
    if (!resolved || seen.has(resolved.path)) return
    seen.add(resolved.path)
    found.push({...resolved, split, dataset})
  }
  const declared = [...(agent?.datasets ?? [])].sort((a, b) => Number(b.type === 'example') - Number(a.type === 'example'))
  for (const ds of declared) if (ds.jsonlFpath && !path.isAbsolute(ds.jsonlFpath)) await add(ds.jsonlFpath, ds.type, ds.name)
  const resource = resourcesServerOf(graph, agent)
  if (resource) await add(resourceExamplePath(resource.implementation), 'example', null)
  return found
}

/**
 * The split a --data file is, when it is one of the checkout's own files: a declared dataset's
 * split, `example` for a resources server's example rows, `benchmark` under benchmarks/. A file
 * outside the checkout is the user's own (undefined).
 */
export function splitOfGymFile(gymRoot: string, graph: GymGraph, agentId: string, file: string): string | undefined {
  const root = path.resolve(gymRoot)
  const abs = path.resolve(file)
  if (!isInside(root, abs)) return undefined
  const relative = path.relative(root, abs)
  const agent = graph.agents.find((a) => a.id === agentId)
  const declared = agent?.datasets.find((d) => d.jsonlFpath && path.normalize(d.jsonlFpath) === relative)
  if (declared) return declared.type
  const parts = relative.split(path.sep)
  if (parts[0] === 'benchmarks') return 'benchmark'
  if (/^example.*\.jsonl$/.test(path.basename(relative))) return 'example'
  if (parts[0] === 'resources_servers' && parts[2] === 'data' && !/train/.test(path.basename(relative))) return 'example'
  return undefined
}
