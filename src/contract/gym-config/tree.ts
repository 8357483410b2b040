/** Plain data as read from YAML: the only shapes a Gym config can hold after parsing. */
export type Mapping = Record<string, unknown>

/** OmegaConf's marker for a mandatory value that nobody has set yet. */
export const MISSING = '???'

export type Path = Array<string | number>

export function isMapping(value: unknown): value is Mapping {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

export function isMissing(value: unknown): boolean {
  return value === MISSING
}

export function hasKey(mapping: Mapping, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(mapping, key)
}

/** Set an own property even for keys like `__proto__`, which a plain assignment would turn into prototype access. */
export function setKey(mapping: Mapping, key: string, value: unknown): void {
  Object.defineProperty(mapping, key, {value, enumerable: true, writable: true, configurable: true})
}

export function deepClone<T>(value: T): T {
  if (Array.isArray(value)) return value.map((item) => deepClone(item)) as T
  if (isMapping(value)) {
    const copy: Mapping = {}
    for (const [key, item] of Object.entries(value)) setKey(copy, key, deepClone(item))
    return copy as T
  }
  return value
}

/** RFC 6901 JSON pointer, e.g. ["a/b", 0] -> "/a~1b/0". */
export function toPointer(path: Path): string {
  return path.map((segment) => `/${String(segment).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('')
}

/** Dotted form used by Gym overrides (`++a.b.c=value`) and by `_inherit_from` paths. */
export function toDotted(path: Path): string {
  return path.map(String).join('.')
}

/** Walk a path through mappings and lists; undefined when any step is absent. */
export function getAt(root: unknown, path: Path): unknown {
  let node: unknown = root
  for (const segment of path) {
    if (Array.isArray(node) && typeof segment === 'number') node = node[segment]
    else if (isMapping(node) && hasKey(node, String(segment))) node = node[String(segment)]
    else return undefined
  }
  return node
}

export function startsWithPath(path: Path, prefix: Path): boolean {
  return prefix.length <= path.length && prefix.every((segment, index) => String(segment) === String(path[index]))
}

/** Visit every leaf (non-container value) with its path. */
export function forEachLeaf(node: unknown, visit: (value: unknown, path: Path) => void, path: Path = []): void {
  if (Array.isArray(node)) node.forEach((item, index) => forEachLeaf(item, visit, [...path, index]))
  else if (isMapping(node)) for (const [key, item] of Object.entries(node)) forEachLeaf(item, visit, [...path, key])
  else visit(node, path)
}
