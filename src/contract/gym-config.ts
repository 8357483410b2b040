/**
 * NeMo Gym config reader: loads a config (and everything it includes), applies Gym's merge and
 * directive semantics, and returns the server graph. Every name comes from the YAML keys; none
 * is inferred from a directory name.
 */
import {applyDirectives} from './gym-config/directives.js'
import {gymConfigError} from './gym-config/errors.js'
import {extractGraph, missingValueProblems} from './gym-config/graph.js'
import {decideIncludeOrder, INCLUDE_ORDER_WORDS, type IncludeOrder, type IncludeOrderDecision, mergeOrder, readGymBehaviour} from './gym-config/include-order.js'
import {loadIncludeTree} from './gym-config/includes.js'
import {resolveInterpolations} from './gym-config/interpolation.js'
import {mergeAll} from './gym-config/merge.js'
import {type GymConfigFs, nodeGymConfigFs, resolveGymRoot} from './gym-config/paths.js'
import {Provenance} from './gym-config/provenance.js'
import {setKey} from './gym-config/tree.js'
import type {GymGraph, GymProblem} from './gym-config/types.js'
import {withRelaxPolicyConfig, withRelaxPolicyModel} from './gym-config/relax-policy.js'
import {verbatim} from '../json-document.js'

export {GYM_CONFIG_ERROR} from './gym-config/errors.js'
export {RESERVED_TOP_LEVEL_KEYS, SERVER_KINDS} from './gym-config/graph.js'
export type {GymConfigFs} from './gym-config/paths.js'
export {redactSecrets} from './gym-config/redact.js'
export type {GymBehaviour, IncludeOrder, IncludeOrderDecision} from './gym-config/include-order.js'

export type {DatasetSource, GymAgent, GymDataset, GymGraph, GymProblem, GymServer, GymServerKind} from './gym-config/types.js'

export interface LoadGymGraphOptions {
  /** Filesystem access; defaults to the real one. */
  fs?: GymConfigFs
  /** Trees outside the checkout holding the user's own configs, searched first (as NEMO_GYM_EXTRA_ROOTS). */
  extraRoots?: Array<{name: string; dir: string}>
  /** Load Relax's policy model config first, as the generated start line does: policy_model is the Relax Gateway. */
  relaxPolicy?: boolean
}

/**
 * Load configs the way `gym env start --config a --config b` does: `configPaths` (relative to the
 * Gym root) are merged left to right, each after the files its `config_paths` pulls in.
 * Bad input (unreadable or invalid YAML, paths leaving the root, include or inherit cycles,
 * malformed server blocks) throws a GymError with code E_GYM_CONFIG and exit status 2.
 */
export async function loadGymGraph(gymRoot: string, configPaths: string[], options: LoadGymGraphOptions = {}): Promise<GymGraph> {
  const baseFs = options.fs ?? nodeGymConfigFs
  const root = await resolveGymRoot(gymRoot, baseFs, options.extraRoots)
  if (configPaths.length === 0) throw gymConfigError('not-found', 'no Gym config given', {}, 'Pass at least one --gym-config, e.g. environments/calendar/config.yaml.')
  const fs = options.relaxPolicy ? withRelaxPolicyModel(baseFs, root.real) : baseFs

  const tree = await loadIncludeTree(root, options.relaxPolicy ? withRelaxPolicyConfig(configPaths) : configPaths, fs)
  const includeOrder = await decideIncludeOrder(root, fs)
  const behaviour = await readGymBehaviour(root, fs)
  const inOrder = (order: IncludeOrder) => mergeOrder(order, tree.loaded, tree.rootCount).map((index) => tree.loaded[index].parsed)
  const files = inOrder(includeOrder.order)
  const provenance = new Provenance(files)
  const locate = provenance.locate.bind(provenance)

  const merged = mergeAll(files.map((file) => file.data))
  // Gym's parser changed its include order; say when the other order would read this config differently.
  const other: IncludeOrder = includeOrder.order === 'post-order' ? 'discovery' : 'post-order'
  const orderProblem = orderDifference(merged, mergeAll(inOrder(other).map((file) => file.data)), includeOrder, other, locate)
  // Gym records the full include list in the merged config before applying directives.
  setKey(merged, 'config_paths', tree.discovered)
  const directives = applyDirectives(merged, locate)
  provenance.recordMoves(directives.moves)
  const config = directives.data

  const interpolationProblems = resolveInterpolations(config, locate)
  const graph = extractGraph(config, locate)
  const problems = [
    ...(orderProblem ? [orderProblem] : []),
    ...tree.problems,
    ...directives.problems,
    ...interpolationProblems,
    ...missingValueProblems(config, locate),
    ...graph.problems,
  ]
  return {
    files: files.map((file) => file.file),
    includeOrder,
    behaviour,
    resourcesServers: graph.resourcesServers,
    agents: graph.agents,
    models: graph.models,
    inheritedFrom: Object.fromEntries(directives.moves.filter((m) => m.kind === 'inherit' && m.target.length === 1 && m.source.length === 1).map((m) => [String(m.target[0]), String(m.source[0])])),
    problems: uniqueProblems(problems),
    merged: verbatim(config),
  }
}

/** The first key whose merged value differs between two include orders, as a warning; undefined when none does. */
function orderDifference(
  used: Record<string, unknown>,
  alternative: Record<string, unknown>,
  decision: IncludeOrderDecision,
  other: IncludeOrder,
  locate: (path: string[]) => {file?: string; line?: number},
): GymProblem | undefined {
  const found = firstDifference(used, alternative, [])
  if (!found) return undefined
  const where = locate(found.path)
  const show = (value: unknown) => (value === undefined ? '(unset)' : JSON.stringify(value)?.slice(0, 120))
  return {
    severity: 'warning',
    message:
      `the include order decides ${found.path.join('.')}: this checkout's parser (${decision.how}) gives ${show(found.used)}; ` +
      `Gym's other order (${INCLUDE_ORDER_WORDS[other]}) would give ${show(found.alternative)}`,
    pointer: '/' + found.path.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/'),
    file: where.file,
    line: where.line,
  }
}

function firstDifference(a: unknown, b: unknown, at: string[]): {path: string[]; used: unknown; alternative: unknown} | undefined {
  const isMap = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)
  if (isMap(a) && isMap(b)) {
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
      // Gym replaces config_paths with the full include list after merging, whatever the order.
      if (at.length === 0 && key === 'config_paths') continue
      const found = firstDifference(a[key], b[key], [...at, key])
      if (found) return found
    }
    return undefined
  }
  return JSON.stringify(a) === JSON.stringify(b) ? undefined : {path: at, used: a, alternative: b}
}

/** A source resolved for several targets reports the same problem more than once. */
function uniqueProblems(problems: GymProblem[]): GymProblem[] {
  const seen = new Set<string>()
  return problems.filter((problem) => {
    const key = `${problem.severity}\u0000${problem.pointer}\u0000${problem.message}`
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}
