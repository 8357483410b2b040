import {type Path, startsWithPath, toPointer} from './tree.js'
import type {ParsedConfigFile} from './yaml-file.js'

export interface Origin {
  file?: string
  line?: number
}

/** A node that `_inherit_from`/`_copy` filled from another place: its content was written at `source`. */
export interface Move {
  target: Path
  source: Path
  /** `_inherit_from` removes the source after the merge; `_copy` keeps it. */
  kind: 'inherit' | 'copy'
}

/**
 * Where each value of the merged config was written: the last file (in merge order) that set
 * that key, and its line. Used to point errors and problems at a file and line.
 */
export class Provenance {
  private readonly origins = new Map<string, Required<Origin>>()
  private readonly moves: Move[] = []

  constructor(files: ParsedConfigFile[]) {
    for (const {file, lines, missing} of files) {
      for (const [pointer, line] of lines) {
        // Merging `???` keeps the earlier value, so the earlier file stays its origin.
        if (missing.has(pointer) && this.origins.has(pointer)) continue
        this.origins.set(pointer, {file, line})
      }
    }
  }

  recordMoves(moves: Move[]): void {
    this.moves.push(...moves)
  }

  /** The closest written ancestor of path, also looking through `_inherit_from`/`_copy` sources. */
  locate(path: Path): Origin {
    let best = this.deepest(path, path.length)
    for (const {target, source} of this.moves) {
      if (!startsWithPath(path, target)) continue
      const translated = this.deepest([...source, ...path.slice(target.length)], path.length - target.length + source.length)
      const gained = translated.depth - source.length + target.length
      if (translated.origin && translated.depth >= source.length && gained > best.depth) best = {origin: translated.origin, depth: gained}
    }
    return best.origin ?? {}
  }

  private deepest(path: Path, length: number): {origin?: Required<Origin>; depth: number} {
    for (let depth = length; depth > 0; depth--) {
      const origin = this.origins.get(toPointer(path.slice(0, depth)))
      if (origin) return {origin, depth}
    }
    return {depth: 0}
  }
}
