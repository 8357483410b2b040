/**
 * The shapes of a loaded NeMo Gym config graph, shared by the loader and its parts (kept apart
 * from the loader so that the parts never import it).
 */
import type {GymBehaviour, IncludeOrderDecision} from './include-order.js'

export type DatasetSource =
  | {type: 'huggingface'; repoId: string; artifactFpath: string | null; form: 'source' | 'huggingface_identifier'}
  | {type: 'gitlab'; datasetName: string; version: string; artifactFpath: string | null; form: 'source' | 'gitlab_identifier'}

export interface GymDataset {
  name: string
  /** train | validation | example | benchmark (as written) */
  type: string
  jsonlFpath: string | null
  license: string | null
  numRepeats: number | null
  /** All forms present, primary first (`source:`; else gitlab before HF when both legacy ids exist). */
  sources: DatasetSource[]
  promptConfig: string | null
  prepareScript: string | null
}

export type GymServerKind = 'resources_servers' | 'responses_api_agents' | 'responses_api_models'

export interface GymServer {
  /** Instance id: the top-level key. */
  id: string
  kind: GymServerKind
  /** The implementation key under the server type (e.g. simple_agent, calendar). */
  implementation: string
  /** The implementation's fields, merged, directives applied, interpolations resolved where possible. */
  fields: Record<string, unknown>
}

export interface GymAgent extends GymServer {
  kind: 'responses_api_agents'
  resourcesServer: string | null
  modelServer: string | null
  maxSteps: number | null
  datasets: GymDataset[]
}

export interface GymProblem {
  severity: 'error' | 'warning'
  /**
   * What kind of problem, where a caller acts on it: `unset-value` is a `???` left after merging,
   * `unset-reference` a `${key}` that no loaded config sets (Gym expects it from env.yaml).
   */
  kind?: 'unset-value' | 'unset-reference'
  message: string
  /** The dotted path of the value left `???`, or of the key a reference names (`tavily_api_key`). */
  key?: string
  /** JSON pointer into `merged`. */
  pointer: string
  /** Where the value was written (relative to the Gym root), when known. */
  file?: string
  line?: number
}

export interface GymGraph {
  /** Config files loaded, relative to the Gym root, in merge order. */
  files: string[]
  /** The order this checkout merges includes in, and how that was decided. */
  includeOrder: IncludeOrderDecision
  /** What this checkout's `gym env start` does beyond the commit Relax pins. */
  behaviour: GymBehaviour
  resourcesServers: GymServer[]
  agents: GymAgent[]
  models: GymServer[]
  /**
   * Instances that `_inherit_from` another top-level instance, by id, with that source's id. The
   * pinned Gym merges a command-line key the source lacks (a host, a port) into such an instance
   * only through the source: it refuses one set on the instance itself ("not in struct").
   */
  inheritedFrom: Record<string, string>
  /** Dangling references, `???` values, malformed dataset entries, ... The graph is still usable. */
  problems: GymProblem[]
  /** The fully merged config (for debugging / `--json`). May hold secrets: see redactSecrets. */
  merged: Record<string, unknown>
}
