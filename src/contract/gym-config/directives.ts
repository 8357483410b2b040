import type {GymProblem} from './types.js'
import {gymConfigError} from './errors.js'
import {mergeValues} from './merge.js'
import type {Move, Origin} from './provenance.js'
import {deepClone, hasKey, isMapping, isMissing, type Mapping, MISSING, type Path, setKey, startsWithPath, toDotted, toPointer} from './tree.js'

const INHERIT_FROM = '_inherit_from'
const COPY = '_copy'
const DELETE_KEY = '_delete_key'
const DIRECTIVE_STRING = /^\$\{(inherit_from|copy):([^{}]+)\}$/

interface Directive {
  kind: 'inherit' | 'copy'
  /** Dotted path from the top of the merged config, split. */
  source: string[]
  /** Where the directive is written, for messages. */
  at: Path
}

export interface DirectiveResult {
  data: Mapping
  moves: Move[]
  problems: GymProblem[]
}

/**
 * Apply `_inherit_from`, `_copy`, their `${inherit_from:path}` / `${copy:path}` string forms and
 * `_delete_key`, as NeMo Gym's `_recursively_swap_keys` does after all files are merged:
 * - a directive node becomes the source (read from the merged config before any swap) merged
 *   under its local keys; `_inherit_from` then removes the source, `_copy` keeps it;
 * - `_delete_key: "a,b"` drops those local keys first and, after the merge, the inherited ones.
 * Unlike Gym, a source that itself inherits is resolved first (Gym leaves it half-applied),
 * and cycles are reported instead of recursing.
 */
export function applyDirectives(merged: Mapping, locate: (path: Path) => Origin): DirectiveResult {
  return new DirectiveResolver(merged, locate).run()
}

class DirectiveResolver {
  private readonly resolving: Path[] = []
  private readonly resolvedSources = new Map<string, unknown>()
  private readonly swappedSources: string[][] = []
  private readonly moves: Move[] = []
  private readonly problems: GymProblem[] = []

  constructor(
    private readonly frozen: Mapping,
    private readonly locate: (path: Path) => Origin,
  ) {}

  run(): DirectiveResult {
    // Directives on the top level itself are not applied (its `_inherit_from`/`_copy` keys are reserved values).
    const data = this.resolveChildren(this.frozen, [])
    for (const source of this.swappedSources) deleteAt(data, source)
    return {data, moves: this.moves, problems: this.problems}
  }

  private resolveChildren(node: Mapping, path: Path): Mapping {
    const out: Mapping = {}
    for (const [key, value] of Object.entries(node)) setKey(out, key, this.resolveValue(value, [...path, key]))
    return out
  }

  private resolveValue(value: unknown, path: Path): unknown {
    if (typeof value === 'string') return this.resolveDirectiveString(value, path)
    if (Array.isArray(value)) return value.map((item, index) => (isMapping(item) ? this.resolveListItem(item, [...path, index]) : item))
    if (isMapping(value)) return this.resolveMapping(value, path)
    return value
  }

  /** Gym only descends into list items: directives written on the item itself are left as they are. */
  private resolveListItem(item: Mapping, path: Path): Mapping {
    for (const key of [INHERIT_FROM, COPY, DELETE_KEY]) {
      if (hasKey(item, key)) this.warn(`${key} on a list item is not applied by NeMo Gym (only mapping values are); move it into a mapping`, [...path, key])
    }
    return this.resolveChildren(item, path)
  }

  private resolveMapping(node: Mapping, path: Path): unknown {
    const local: Mapping = {...node}
    const pendingDeletes = this.takeDeletes(local, path)
    const directive = this.takeDirective(local, path)
    const resolved = this.resolveChildren(local, path)
    if (!directive) {
      for (const key of pendingDeletes) this.warn(`_delete_key names '${key}', which is not a key here; nothing was deleted`, [...path, DELETE_KEY])
      return resolved
    }
    const source = this.sourceValue(directive, path)
    if (isMissing(source)) return MISSING
    if (!isMapping(source)) {
      throw this.error(`${directiveName(directive)} source '${directive.source.join('.')}' is not a mapping, so it cannot be merged under the keys of ${toDotted(path)}`, directive.at)
    }
    const result = mergeValues(source, resolved) as Mapping
    for (const key of pendingDeletes) {
      if (!hasKey(result, key)) {
        throw this.error(`_delete_key names '${key}', which ${toDotted(path)} neither sets nor inherits from '${directive.source.join('.')}'`, [...path, DELETE_KEY])
      }
      delete result[key]
    }
    return result
  }

  private resolveDirectiveString(value: string, path: Path): unknown {
    if (!value.startsWith('${inherit_from:') && !value.startsWith('${copy:')) return value
    const match = DIRECTIVE_STRING.exec(value)
    if (!match) throw this.error(`malformed directive '${value}': expected \${inherit_from:dotted.path} or \${copy:dotted.path}`, path)
    const directive: Directive = {kind: match[1] === 'copy' ? 'copy' : 'inherit', source: splitSourcePath(match[2]), at: path}
    return deepClone(this.sourceValue(directive, path))
  }

  /** Removes `_delete_key` and the local keys it names; returns the names still to delete after the merge. */
  private takeDeletes(local: Mapping, path: Path): string[] {
    if (!hasKey(local, DELETE_KEY)) return []
    const spec = local[DELETE_KEY]
    delete local[DELETE_KEY]
    if (typeof spec !== 'string') throw this.error(`_delete_key must be a comma-separated string of keys, e.g. "a,b"; got ${JSON.stringify(spec)}`, [...path, DELETE_KEY])
    const names = [...new Set(spec.split(',').map((name) => name.trim()).filter((name) => name !== ''))]
    const pending = names.filter((name) => !hasKey(local, name))
    for (const name of names) delete local[name]
    return pending
  }

  private takeDirective(local: Mapping, path: Path): Directive | null {
    const inherit = hasKey(local, INHERIT_FROM)
    const copy = hasKey(local, COPY)
    if (!inherit && !copy) return null
    if (inherit && copy) throw this.error('a node cannot have both _inherit_from and _copy', [...path, COPY])
    const key = inherit ? INHERIT_FROM : COPY
    const spec = local[key]
    delete local[key]
    if (typeof spec !== 'string' || spec.trim() === '') throw this.error(`${key} must be a dotted path such as other_server or a.b.c; got ${JSON.stringify(spec)}`, [...path, key])
    return {kind: inherit ? 'inherit' : 'copy', source: splitSourcePath(spec), at: [...path, key]}
  }

  /** The source value, itself fully resolved; `???` when the source (or an ancestor) is unset. */
  private sourceValue(directive: Directive, requester: Path): unknown {
    this.resolving.push(requester)
    try {
      if (this.resolving.some((inProgress) => startsWithPath(inProgress, directive.source))) {
        const chain = [...this.resolving.map(toDotted), directive.source.join('.')].join(' -> ')
        throw this.error(`${directiveName(directive)} cycle: ${chain}`, directive.at, 'inherit-cycle')
      }
      const value = this.resolveSource(directive)
      this.moves.push({target: requester, source: directive.source, kind: directive.kind})
      if (directive.kind === 'inherit') this.swappedSources.push(directive.source)
      return value
    } finally {
      this.resolving.pop()
    }
  }

  private resolveSource(directive: Directive): unknown {
    const key = toPointer(directive.source)
    if (this.resolvedSources.has(key)) return deepClone(this.resolvedSources.get(key))
    let node: unknown = this.frozen
    for (const segment of directive.source) {
      if (isMissing(node)) return MISSING
      if (!isMapping(node) || !hasKey(node, segment)) {
        throw this.error(`${directiveName(directive)} '${directive.source.join('.')}' does not exist in the merged config`, directive.at, 'directive', 'The path is dotted from the top level, e.g. math_with_judge or math_with_judge.resources_servers.math_with_judge.')
      }
      node = node[segment]
    }
    const resolved = isMissing(node) ? MISSING : this.resolveValue(node, directive.source)
    this.resolvedSources.set(key, resolved)
    return deepClone(resolved)
  }

  private warn(message: string, path: Path): void {
    this.problems.push({severity: 'warning', message, pointer: toPointer(path), ...this.locate(path)})
  }

  private error(message: string, path: Path, reason: 'directive' | 'inherit-cycle' = 'directive', hint?: string) {
    return gymConfigError(reason, message, {...this.locate(path), pointer: toPointer(path)}, hint)
  }
}

function directiveName(directive: Directive): string {
  return directive.kind === 'inherit' ? '_inherit_from' : '_copy'
}

function splitSourcePath(spec: string): string[] {
  return spec.trim().split('.')
}

function deleteAt(root: Mapping, path: string[]): void {
  let node: unknown = root
  for (const segment of path.slice(0, -1)) {
    if (!isMapping(node) || !hasKey(node, segment)) return
    node = node[segment]
  }
  if (isMapping(node)) delete node[path[path.length - 1]]
}
