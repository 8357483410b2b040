import {FieldError, isJsonObject, type JsonObject, type JsonValue, parseJson} from '../../json/index.js'

/**
 * Source paths of the task spec: `a.b.c` walks a row's objects. A string met
 * after the first part is decoded as JSON before descending, so a column that
 * holds a JSON document can be addressed inside. Lists are not indexable.
 */

/** Decode a JSON string value losslessly; `field` names the spec entry for the error. */
export function decodeJsonText(text: string, what: string, field: string): JsonValue {
  try {
    return parseJson(text)
  } catch {
    throw new FieldError(field, `${what} must contain valid JSON`)
  }
}

/** The value at path, or undefined when the path does not exist (a final null is returned as null). */
export function lookupSourcePath(row: JsonObject, path: string, field: string): JsonValue | undefined {
  const parts = path.split('.')
  let current: JsonValue = row
  for (const [i, part] of parts.entries()) {
    if (i > 0 && typeof current === 'string') current = decodeJsonText(current, parts.slice(0, i).join('.'), field)
    if (!isJsonObject(current) || !Object.hasOwn(current, part)) return undefined
    current = current[part]
  }
  return current
}

/** The value at path; a missing path is an error naming the spec field. */
export function resolveSourcePath(row: JsonObject, path: string, field: string): JsonValue {
  const value = lookupSourcePath(row, path, field)
  if (value === undefined) throw new FieldError(field, `missing source path: ${path}`)
  return value
}
