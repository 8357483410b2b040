/** The contract being read from a hand-written recipe, value by value, with where each came from and why the rest is missing. */
import type {AdoptedField} from './types.js'

export type Tree = Record<string, unknown>

/** The contract being read, with where each value came from. */
export class Reading {
  readonly tree: Tree = {}
  readonly read: AdoptedField[] = []
  readonly why = new Map<string, string>()
  readonly notes: string[] = []

  readonly filled: AdoptedField[] = []

  /** A value read from the recipe's files. */
  set(pointer: string, value: unknown, from: string): void {
    if (value === undefined) return
    this.put(pointer, value)
    this.read.push({pointer, from})
  }

  /** A value the recipe's files do not hold, given by the user (the draft) or --fill-from. */
  fill(pointer: string, value: unknown, from: string): void {
    this.put(pointer, value)
    this.filled.push({pointer, from})
  }

  private put(pointer: string, value: unknown): void {
    const keys = pointer.split('/').slice(1)
    let at = this.tree
    for (const key of keys.slice(0, -1)) at = (at[key] ??= {}) as Tree
    at[keys.at(-1)!] = value
    this.why.delete(pointer)
  }

  /** Record why a value could not be read (the first reason given wins). */
  missing(pointer: string, why: string): void {
    if (!this.has(pointer) && !this.why.has(pointer)) this.why.set(pointer, why)
  }

  has(pointer: string): boolean {
    return valueAt(this.tree, pointer) !== undefined
  }
}

export function valueAt(tree: unknown, pointer: string): unknown {
  let at: unknown = tree
  for (const key of pointer.split('/').slice(1)) {
    if (!at || typeof at !== 'object' || Array.isArray(at)) return undefined
    at = (at as Tree)[key]
  }
  return at
}

/** Values recorded as one piece (a list, a union, a block that is null or whole). */
export const WHOLE = new Set(['/data/source', '/verifier/task', '/verifier/payload', '/trial', '/gateway/cleanup', '/gym/resources_server', '/service/error_probe', '/gym/agent'])

/** Every value pointer a contract has, taken from a built-in's shape. */
export function leafPointers(value: unknown, prefix = ''): string[] {
  if (WHOLE.has(prefix) || !value || typeof value !== 'object' || Array.isArray(value)) return [prefix]
  return Object.entries(value as Tree).flatMap(([k, v]) => (k === 'generated' ? [] : leafPointers(v, `${prefix}/${k}`)))
}

export const numberOf = (text: string | undefined) => (text !== undefined && /^-?\d+(?:\.\d+)?(?:e-?\d+)?$/i.test(text.trim()) ? Number(text) : undefined)
export const intOf = (text: string | undefined) => {
  const n = numberOf(text)
  return n !== undefined && Number.isInteger(n) ? n : undefined
}
