import type {GymProblem} from './types.js'
import {gymConfigError} from './errors.js'
import type {Origin} from './provenance.js'
import {deepClone, getAt, hasKey, isMapping, isMissing, type Mapping, type Path, setKey, toDotted, toPointer} from './tree.js'

/** `${ref}` without nesting; a `:` inside marks a resolver call (`${oc.env:HOME}`), which only runs in Gym. */
const INTERPOLATION = /\$\{([^${}]*)\}/g
const WHOLE_INTERPOLATION = /^\$\{([^${}]*)\}$/

/** Characters and nodes interpolation may add to a config: a reference doubling itself 40 times is refused, not built. */
export const INTERPOLATION_BUDGET = 8 * 1024 * 1024
/** References resolved inside one another, at most (a chain this deep is not a config). */
export const INTERPOLATION_DEPTH = 256

/** Why a reference stays unresolved: nothing sets it, it is `???`, a cycle, or its target is itself left for Gym to resolve. */
type Lookup = {found: true; value: unknown} | {found: false; reason: 'unset' | 'missing' | 'cycle' | 'deferred'}

/**
 * Resolve OmegaConf references (`${a.b}`, relative `${.x}` / `${..x}`, list indexes `${a.0}` or
 * `${a[0]}`, and references embedded in longer strings) in place, against the final config.
 * Resolver calls and references to keys no loaded config sets (typically `policy_base_url` and
 * friends from env.yaml) are left as written; the latter are reported as warnings.
 */
export function resolveInterpolations(root: Mapping, locate: (path: Path) => Origin): GymProblem[] {
  return new InterpolationResolver(root, locate).run()
}

class InterpolationResolver {
  private readonly visiting = new Set<string>()
  private readonly done = new Set<string>()
  private readonly problems: GymProblem[] = []
  /** Characters and nodes added so far. */
  private spent = 0

  constructor(
    private readonly root: Mapping,
    private readonly locate: (path: Path) => Origin,
  ) {}

  run(): GymProblem[] {
    this.resolveTree(this.root, [])
    return this.problems
  }

  private resolveTree(node: unknown, path: Path): void {
    if (Array.isArray(node)) node.forEach((_, index) => this.resolveTree(node[index], [...path, index]))
    else if (isMapping(node)) for (const key of Object.keys(node)) this.resolveTree(node[key], [...path, key])
    else if (typeof node === 'string') this.resolveLeaf(path)
  }

  /** Resolve the string at path and write the result back; an unresolvable one is left as written. */
  private resolveLeaf(path: Path): void {
    const pointer = toPointer(path)
    if (this.done.has(pointer) || this.visiting.has(pointer)) return
    const value = getAt(this.root, path)
    if (typeof value !== 'string' || !value.includes('${') || value.includes('\\${')) return
    if (this.visiting.size >= INTERPOLATION_DEPTH) {
      throw gymConfigError('interpolation', `interpolations refer through more than ${INTERPOLATION_DEPTH} other interpolations`, {...this.locate(path), pointer}, 'Refer to the value itself rather than through a long chain of references.')
    }
    this.visiting.add(pointer)
    try {
      const resolved = this.interpolate(value, path)
      if (resolved.found) writeAt(this.root, path, resolved.value)
    } finally {
      this.visiting.delete(pointer)
      this.done.add(pointer)
    }
  }

  private interpolate(text: string, path: Path): Lookup {
    const whole = WHOLE_INTERPOLATION.exec(text)
    if (whole) return isResolverCall(whole[1]) ? {found: false, reason: 'deferred'} : this.reference(whole[1], path)
    let unresolved = false
    const replaced = text.replace(INTERPOLATION, (match, expression: string) => {
      if (isResolverCall(expression)) {
        unresolved = true
        return match
      }
      const target = this.reference(expression, path)
      if (!target.found || isMapping(target.value) || Array.isArray(target.value)) {
        unresolved = true
        return match
      }
      const piece = pythonString(target.value)
      this.spend(piece.length, path)
      return piece
    })
    return unresolved ? {found: false, reason: 'deferred'} : {found: true, value: replaced}
  }

  private reference(expression: string, path: Path): Lookup {
    const target = referencedPath(expression.trim(), path)
    const result = target ? this.valueAt(target) : {found: false as const, reason: 'unset' as const}
    if (!result.found && result.reason === 'cycle') {
      this.problems.push({severity: 'warning', message: `\${${expression}} is part of an interpolation cycle; it is left unresolved`, pointer: toPointer(path), ...this.locate(path)})
    } else if (!result.found && result.reason === 'unset') {
      // Gym resolves every reference when it starts: one no config sets must come from the command line or env.yaml.
      const key = target ? toDotted(target) : undefined
      this.problems.push({severity: 'warning', ...(key ? {kind: 'unset-reference' as const, key} : {}), message: `\${${expression}} refers to a key that no loaded config sets; it is left unresolved`, pointer: toPointer(path), ...this.locate(path)})
    }
    return result
  }

  /** The fully resolved value at target, resolving interpolations met on the way. */
  private valueAt(target: Path): Lookup {
    let node: unknown = this.root
    for (let depth = 0; depth < target.length; depth++) {
      const segment = target[depth]
      const child = childOf(node, segment)
      if (child === undefined) return {found: false, reason: 'unset'}
      if (typeof child === 'string' && child.includes('${')) {
        const childPath = target.slice(0, depth + 1)
        if (this.visiting.has(toPointer(childPath))) return {found: false, reason: 'cycle'}
        this.resolveLeaf(childPath)
      }
      node = childOf(node, segment)
      if (typeof node === 'string' && node.includes('${')) return {found: false, reason: 'deferred'}
    }
    if (isMissing(node)) return {found: false, reason: 'missing'}
    if (isMapping(node) || Array.isArray(node)) {
      if (this.visiting.size > 0 && [...this.visiting].some((pointer) => pointer.startsWith(`${toPointer(target)}/`))) {
        return {found: false, reason: 'cycle'}
      }
      this.resolveTree(node, target)
    }
    this.spend(sizeOf(node), target)
    return {found: true, value: deepClone(node)}
  }

  private spend(amount: number, path: Path): void {
    this.spent += amount
    if (this.spent > INTERPOLATION_BUDGET) {
      throw gymConfigError('interpolation', `interpolations expand the config by more than ${INTERPOLATION_BUDGET} characters and values`, {...this.locate(path), pointer: toPointer(path)}, 'A value that refers to itself several times over doubles at every level; write the values out.')
    }
  }
}

/** Values and characters in a node (a string counts its length). */
function sizeOf(node: unknown): number {
  let size = 0
  const stack = [node]
  while (stack.length > 0) {
    const item = stack.pop()
    size += typeof item === 'string' ? item.length + 1 : 1
    if (Array.isArray(item)) for (const child of item) stack.push(child)
    else if (isMapping(item)) for (const child of Object.values(item)) stack.push(child)
  }
  return size
}

function isResolverCall(expression: string): boolean {
  return expression.includes(':')
}

/** OmegaConf reference syntax -> absolute path; relative references start from the node's parent. */
function referencedPath(expression: string, from: Path): Path | null {
  const dots = /^\.*/.exec(expression)![0].length
  const rest = expression.slice(dots)
  const segments: Path = []
  for (const part of rest.split('.')) {
    if (part === '') continue
    const bracket = /^([^[\]]*)((?:\[[^[\]]+\])*)$/.exec(part)
    if (!bracket) return null
    if (bracket[1] !== '') segments.push(bracket[1])
    for (const index of bracket[2].matchAll(/\[([^[\]]+)\]/g)) segments.push(index[1])
  }
  if (dots === 0) return segments
  if (dots > from.length) return null
  return [...from.slice(0, from.length - dots), ...segments]
}

function childOf(node: unknown, segment: string | number): unknown {
  if (Array.isArray(node)) {
    const index = Number(segment)
    return Number.isInteger(index) ? node[index] : undefined
  }
  if (isMapping(node) && hasKey(node, String(segment))) return node[String(segment)]
  return undefined
}

function writeAt(root: Mapping, path: Path, value: unknown): void {
  const parent = getAt(root, path.slice(0, -1))
  const last = path[path.length - 1]
  if (Array.isArray(parent)) parent[Number(last)] = value
  else if (isMapping(parent)) setKey(parent, String(last), value)
}

/** How Python's str() prints scalars, since Gym builds these strings in Python. */
function pythonString(value: unknown): string {
  if (value === true) return 'True'
  if (value === false) return 'False'
  if (value === null) return 'None'
  return String(value)
}
