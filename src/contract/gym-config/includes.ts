import type {GymProblem} from './types.js'
import {gymConfigError} from './errors.js'
import {assertRealPathInside, type GymConfigFs, type GymRoot, locateEntry, type ResolvedEntry} from './paths.js'
import {toPointer} from './tree.js'
import {type ParsedConfigFile, parseConfigFile} from './yaml-file.js'

interface IncludeEdge {
  from: string
  to: string
  line?: number
}

interface LoadedEntry {
  entry: ResolvedEntry
  parsed: ParsedConfigFile
  children: number[]
  depth: number
}

export interface IncludeTree {
  /** Files in discovery order (roots first, then breadth-first), each with what it includes. */
  loaded: Array<{parsed: ParsedConfigFile; children: number[]; depth: number}>
  rootCount: number
  /** Every entry, roots first then in discovery order, as Gym records `config_paths` after loading. */
  discovered: string[]
  problems: GymProblem[]
}

/**
 * Load the given configs and, recursively, their `config_paths`, the way NeMo Gym does
 * (`GlobalConfigDictParser.load_extra_config_paths`): breadth-first discovery, a file already
 * listed is loaded once. The order they merge in is the checkout's own (include-order.ts).
 * Unlike Gym, an include cycle is an error rather than silently cut.
 */
export async function loadIncludeTree(root: GymRoot, rootPaths: string[], fs: GymConfigFs): Promise<IncludeTree> {
  const loaded: LoadedEntry[] = []
  const pending: Array<{entry: ResolvedEntry; parent: number | null; from?: {file: string; line?: number}}> = []
  const edges: IncludeEdge[] = []
  const problems: GymProblem[] = []

  for (const raw of rootPaths) pending.push({entry: await locateEntry(root, raw, fs, {what: '--gym-config'}), parent: null})
  const depths: number[] = rootPaths.map(() => 0)

  for (let index = 0; index < pending.length; index++) {
    const {entry, parent, from} = pending[index]
    const parsed = await readConfig(root, entry, fs, from)
    loaded.push({entry, parsed, children: [], depth: depths[index]})
    if (parent !== null) loaded[parent].children.push(index)

    for (const include of await includesOf(root, parsed, fs)) {
      edges.push({from: entry.rel, to: include.entry.rel, line: include.line})
      const firstAt = pending.findIndex((item) => item.entry.rel === include.entry.rel)
      if (firstAt === -1) {
        pending.push({entry: include.entry, parent: index, from: {file: entry.rel, line: include.line}})
        depths.push(depths[index] + 1)
      } else {
        problems.push(duplicateInclude(include.entry.rel, entry.rel, include.line))
      }
    }
  }

  throwOnIncludeCycle(edges)
  return {
    loaded: loaded.map(({parsed, children, depth}) => ({parsed, children, depth})),
    rootCount: rootPaths.length,
    discovered: loaded.map((item) => item.entry.rel),
    problems,
  }
}

async function readConfig(root: GymRoot, entry: ResolvedEntry, fs: GymConfigFs, from?: {file: string; line?: number}): Promise<ParsedConfigFile> {
  const text = await fs.readText(entry.abs)
  if (text === undefined) {
    if (from) {
      throw gymConfigError(
        'not-found',
        `config_paths entry '${entry.raw}' in ${from.file} was not found (looked for ${entry.rel} under the Gym root ${root.lexical})`,
        {file: from.file, line: from.line, pointer: '/config_paths'},
        'config_paths entries are relative to the Gym root; fix the path or check out the missing file.',
      )
    }
    throw gymConfigError(
      'not-found',
      `--gym-config '${entry.raw}' was not found under the Gym root ${root.lexical}`,
      {file: entry.rel},
      '--gym-config paths are relative to --gym-root, e.g. environments/calendar/config.yaml.',
    )
  }
  await assertRealPathInside(root, entry, fs, from ? {what: 'config_paths entry', file: from.file, line: from.line} : {what: '--gym-config'})
  return parseConfigFile(entry.rel, text)
}

async function includesOf(root: GymRoot, parsed: ParsedConfigFile, fs: GymConfigFs): Promise<Array<{entry: ResolvedEntry; line?: number}>> {
  const list = parsed.data.config_paths
  if (list === undefined || list === null) return []
  const listLine = parsed.lines.get('/config_paths')
  if (!Array.isArray(list)) {
    throw gymConfigError('config-paths', 'config_paths must be a list of paths relative to the Gym root', {file: parsed.file, line: listLine, pointer: '/config_paths'})
  }
  const found: Array<{entry: ResolvedEntry; line?: number}> = []
  for (const [position, raw] of list.entries()) {
    const line = parsed.lines.get(toPointer(['config_paths', position])) ?? listLine
    found.push({entry: await locateEntry(root, raw, fs, {what: 'config_paths entry', file: parsed.file, line, pointer: toPointer(['config_paths', position])}), line})
  }
  return found
}

function duplicateInclude(included: string, by: string, line?: number): GymProblem {
  return {
    severity: 'warning',
    message: `${included} is listed again in config_paths of ${by}; it is loaded once, at its first position in the include order`,
    pointer: '/config_paths',
    file: by,
    line,
  }
}

/** Depth-first search over "file includes file" edges; the first edge back into the current chain is a cycle. */
function throwOnIncludeCycle(edges: IncludeEdge[]): void {
  const outgoing = new Map<string, IncludeEdge[]>()
  for (const edge of edges) outgoing.set(edge.from, [...(outgoing.get(edge.from) ?? []), edge])
  const done = new Set<string>()
  const chain: string[] = []

  const visit = (file: string): void => {
    chain.push(file)
    for (const edge of outgoing.get(file) ?? []) {
      const back = chain.indexOf(edge.to)
      if (back !== -1) {
        const cycle = [...chain.slice(back), edge.to].join(' -> ')
        throw gymConfigError('include-cycle', `config_paths cycle: ${cycle}`, {file: edge.from, line: edge.line, pointer: '/config_paths'}, 'Remove one of the includes so that no config includes itself, directly or through others.')
      }
      if (!done.has(edge.to)) visit(edge.to)
    }
    chain.pop()
    done.add(file)
  }
  for (const edge of edges) if (!done.has(edge.from)) visit(edge.from)
}
