import {isJsonObject, parseJson} from '../../json/index.js'

/** A row path problem: the path is missing, or an intermediate JSON string does not decode. */
export class PathError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'PathError'
  }
}

const PART = /^[^.\s](?:[^.]*[^.\s])?$/u

/** Paths are dot-separated names; every part is non-empty and has no surrounding whitespace. */
export function isDotPath(path: string): boolean {
  return path.length > 0 && path.split('.').every((part) => PART.test(part))
}

/**
 * Resolve a dot path in a row. After the first part, a string value is decoded
 * as JSON before descending (so `execution.response_json.rows` works on a cell
 * holding a JSON string). Arrays are not indexable. A final null is returned
 * as null; a missing key is a PathError.
 */
export function resolvePath(row: unknown, path: string): unknown {
  return resolveParts(row, path.split('.'), path)
}

/** resolvePath with the path already split (callers that resolve the same path for every row split it once). */
export function resolveParts(row: unknown, parts: readonly string[], path: string): unknown {
  let current: unknown = row
  for (let i = 0; i < parts.length; i++) {
    if (i > 0 && typeof current === 'string') {
      try {
        current = parseJson(current)
      } catch {
        throw new PathError(`${parts.slice(0, i).join('.')} must contain valid JSON (needed for ${path})`)
      }
    }
    if (!isJsonObject(current) || !Object.prototype.hasOwnProperty.call(current, parts[i])) {
      throw new PathError(`missing source path: ${path}`)
    }
    current = current[parts[i]]
  }
  return current
}

/**
 * Projection for response_fields: like resolvePath on a parsed response, but
 * a missing path gives null instead of an error.
 */
export function projectFields(response: unknown, fields: Record<string, string>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [name, path] of Object.entries(fields)) {
    try {
      const value = resolvePath(response, path)
      out[name] = value === undefined ? null : value
    } catch {
      out[name] = null
    }
  }
  return out
}
