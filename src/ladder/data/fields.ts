/**
 * Verifier fields as dot paths (`responses_create_params.input`, `exp_cal_state`), compiled
 * into a trie the streaming scanner walks while it reads object keys, so a field is found
 * without ever building the row.
 */
export class FieldTrie {
  /** Children of each node by key; node 0 is the row object itself. */
  readonly children: Array<Map<string, number>> = [new Map()]
  /** Index into `fields` of the path ending at each node, or -1. */
  readonly fieldAt: number[] = [-1]
  /** The same children as UTF-8 bytes, so keys are matched without decoding them. */
  private readonly childBytes: Array<Array<{key: Uint8Array; node: number}>> = [[]]

  constructor(readonly fields: readonly string[]) {
    fields.forEach((field, index) => {
      let node = 0
      for (const segment of field.split('.')) {
        let next = this.children[node].get(segment)
        if (next === undefined) {
          next = this.children.length
          this.children.push(new Map())
          this.fieldAt.push(-1)
          this.childBytes.push([])
          this.children[node].set(segment, next)
          this.childBytes[node].push({key: new TextEncoder().encode(segment), node: next})
        }
        node = next
      }
      this.fieldAt[node] = index
    })
    this.fieldsUnder = this.children.map(() => [])
    const collect = (node: number): number[] => {
      const own = [...(this.fieldAt[node] >= 0 ? [this.fieldAt[node]] : []), ...[...this.children[node].values()].flatMap(collect)]
      this.fieldsUnder[node] = own
      return own
    }
    collect(0)
  }

  /** The fields at or below each node: a key given again replaces them all (JSON's last value wins). */
  readonly fieldsUnder: number[][]

  child(node: number, key: string): number {
    return this.children[node].get(key) ?? -1
  }

  /** child() for a key given as the raw bytes bytes[start, end) of a JSON string without escapes. */
  childByBytes(node: number, bytes: Uint8Array, start: number, end: number): number {
    const length = end - start
    for (const candidate of this.childBytes[node]) {
      const key = candidate.key
      if (key.length !== length) continue
      let k = 0
      while (k < length && key[k] === bytes[start + k]) k++
      if (k === length) return candidate.node
    }
    return -1
  }

  hasChildren(node: number): boolean {
    return this.children[node].size > 0
  }
}

/** Value at a dot path of a parsed row (objects only, never into arrays); undefined when absent. */
export function valueAt(row: unknown, field: string): unknown {
  let node: unknown = row
  for (const segment of field.split('.')) {
    if (typeof node !== 'object' || node === null || Array.isArray(node) || !Object.hasOwn(node, segment)) return undefined
    node = (node as Record<string, unknown>)[segment]
  }
  return node
}

/**
 * Fields a recipe without recipe.yaml must keep, taken from its first row: the prompt always,
 * tools when the row has them, and every environment-specific top-level field (ids, state,
 * answers). Internal Gym keys (`agent_ref`, `_ng_*`) are not verifier fields.
 */
export function fieldsFromRow(row: Record<string, unknown>): string[] {
  const rcp = row.responses_create_params
  const hasTools = typeof rcp === 'object' && rcp !== null && Object.hasOwn(rcp, 'tools')
  const own = Object.keys(row).filter((key) => key !== 'responses_create_params' && key !== 'agent_ref' && !key.startsWith('_ng_'))
  if (typeof rcp !== 'object' || rcp === null) return own
  return ['responses_create_params.input', ...(hasTools ? ['responses_create_params.tools'] : []), ...own]
}
