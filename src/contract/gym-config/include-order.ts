/**
 * The order in which a Gym checkout merges a config and the files its `config_paths` pull in.
 * Gym changed it over time, so a checkout is read the way its own parser reads it, decided from
 * that parser's code (nemo_gym/global_config.py), not from a commit id:
 *
 * - `discovery`: the files merge in breadth-first discovery order, so an included file overrides
 *   the file that includes it (the parser of the commit Relax pins, a85670e);
 * - `reverse-discovery`: the same list reversed (`extra_configs.reverse()`, Gym #2478);
 * - `depth`: deepest include level first, listed order within a level (#2572);
 * - `post-order`: each file after everything it pulled in, each subtree contiguous (#2573 on):
 *   the including file wins, and a later sibling with its includes wins over an earlier one.
 */
import path from 'node:path'

import type {GymConfigFs, GymRoot} from './paths.js'

export type IncludeOrder = 'discovery' | 'reverse-discovery' | 'depth' | 'post-order'

export interface IncludeOrderDecision {
  order: IncludeOrder
  /** How it was decided, in words. */
  how: string
  /** The parser was not found or not recognised: the order is assumed. */
  assumed: boolean
}

export const INCLUDE_ORDER_WORDS: Record<IncludeOrder, string> = {
  discovery: 'breadth-first discovery order: an included file overrides the file that includes it',
  'reverse-discovery': 'reversed discovery order: the including file overrides what it includes',
  depth: 'deepest include level first: the including file overrides what it includes',
  'post-order': 'each file after what it includes: the including file overrides what it includes',
}

const PARSER = 'nemo_gym/global_config.py'
/** The parser is a few hundred lines; anything far larger is not it. */
const PARSER_MAX_CHARS = 4 * 1024 * 1024

/** Recognise the merge order from the text of Gym's config parser, or undefined. */
export function includeOrderOfParser(source: string): IncludeOrder | undefined {
  const start = source.indexOf('def load_extra_config_paths')
  if (start < 0) return undefined
  if (/children_visited|pending\.extend\(\(child/.test(source.slice(start))) return 'post-order'
  if (/depths\s*:\s*List\[int\]|key=lambda i: -depths\[i\]/.test(source.slice(start))) return 'depth'
  if (/extra_configs\.reverse\(\)/.test(source)) return 'reverse-discovery'
  return 'discovery'
}

/** How this checkout merges includes, read from its own parser. */
export async function decideIncludeOrder(root: GymRoot, fs: GymConfigFs): Promise<IncludeOrderDecision> {
  const file = path.join(root.real, PARSER)
  const source = await fs.readText(file).catch(() => undefined)
  if (source === undefined) {
    return {order: 'post-order', how: `no ${PARSER} in the Gym root: assumed current Gym's order (${INCLUDE_ORDER_WORDS['post-order']})`, assumed: true}
  }
  const order = source.length <= PARSER_MAX_CHARS ? includeOrderOfParser(source) : undefined
  if (!order) {
    return {order: 'post-order', how: `${PARSER} has no recognisable load_extra_config_paths: assumed current Gym's order (${INCLUDE_ORDER_WORDS['post-order']})`, assumed: true}
  }
  return {order, how: `read from the checkout's ${PARSER}: ${INCLUDE_ORDER_WORDS[order]}`, assumed: false}
}

export interface IncludeNode {
  children: number[]
  depth: number
}

/** The merge order of loaded files (indices in discovery order) under one of Gym's orders. */
export function mergeOrder(order: IncludeOrder, nodes: IncludeNode[], rootCount: number): number[] {
  const discovery = nodes.map((_, index) => index)
  switch (order) {
    case 'discovery':
      return discovery
    case 'reverse-discovery':
      return [...discovery].reverse()
    case 'depth':
      return [...discovery].sort((a, b) => nodes[b].depth - nodes[a].depth || a - b)
    case 'post-order':
      return postOrder(nodes, rootCount)
  }
}

/** Iterative post-order over the include tree, roots in the order given. */
function postOrder(nodes: IncludeNode[], rootCount: number): number[] {
  const order: number[] = []
  const stack: Array<{index: number; expanded: boolean}> = []
  for (let index = rootCount - 1; index >= 0; index--) stack.push({index, expanded: false})
  while (stack.length > 0) {
    const {index, expanded} = stack.pop()!
    if (expanded) {
      order.push(index)
      continue
    }
    stack.push({index, expanded: true})
    const children = nodes[index].children
    for (let position = children.length - 1; position >= 0; position--) stack.push({index: children[position], expanded: false})
  }
  return order
}

/**
 * What this checkout's `gym env start` does that the commit Relax pins does not, read from its
 * code: a recipe depending on it must be run (and checked) accordingly.
 */
export interface GymBehaviour {
  /** `gym env start` waits for every model `base_url` of the resolved config and exits if one never answers (Gym #2362). */
  waitsForModelEndpoints: boolean
  /** The parser refuses an openai package outside Gym's constraint unless `allow_openai_version_skew` (Gym #2447). */
  guardsOpenaiVersion: boolean
}

export async function readGymBehaviour(root: GymRoot, fs: GymConfigFs): Promise<GymBehaviour> {
  const read = async (rel: string) => {
    const text = await fs.readText(path.join(root.real, rel)).catch(() => undefined)
    return text !== undefined && text.length <= PARSER_MAX_CHARS ? text : ''
  }
  const env = await read('nemo_gym/cli/env.py')
  const config = await read(PARSER)
  return {
    waitsForModelEndpoints: /def _wait_for_model_endpoints\b/.test(env),
    guardsOpenaiVersion: /ALLOW_OPENAI_VERSION_SKEW_KEY_NAME\s*=/.test(config),
  }
}
