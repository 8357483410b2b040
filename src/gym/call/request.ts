import {isLosslessNumber} from 'lossless-json'

import {isPlainObject, parseLossless, stringifyLossless} from './json.js'
import {PathError, resolvePath} from './paths.js'
import type {CallConfig} from './types.js'

/** Everything a row needs before any network call; built without I/O. */
export interface RowPlan {
  rowId: unknown
  provenance: Record<string, unknown>
  /** Serialized execute request body. */
  body: string
  /** Serialized bodies of the session initialize and cleanup steps. */
  initializeBodies: string[]
  cleanupBodies: string[]
}

export type RowPlanResult =
  | {ok: true; plan: RowPlan}
  | {ok: false; rowId: unknown; provenance: Record<string, unknown>; route: string | null; reason: string}

/** The row id: the value at row_id_column (string or number), or the 1-based input line number. */
export function rowIdOf(config: CallConfig, row: Record<string, unknown>, line: number): {ok: true; id: unknown} | {ok: false; reason: string} {
  if (!config.row_id_column) return {ok: true, id: line}
  try {
    const id = resolvePath(row, config.row_id_column)
    if (typeof id === 'string' ? id.trim() === '' : !isLosslessNumber(id) && typeof id !== 'number') {
      return {ok: false, reason: `row id at ${config.row_id_column} must be a non-empty string or a number`}
    }
    return {ok: true, id}
  } catch (error) {
    return {ok: false, reason: error instanceof PathError ? `row id: ${error.message}` : String(error)}
  }
}

function objectFrom(row: Record<string, unknown>, path: string): Record<string, unknown> {
  let value = resolvePath(row, path)
  if (typeof value === 'string') {
    try {
      value = parseLossless(value)
    } catch {
      throw new PathError(`${path} must contain a JSON object (the string does not decode)`)
    }
  }
  if (!isPlainObject(value)) throw new PathError(`${path} must contain a JSON object or a JSON string of one`)
  return value
}

/**
 * Assemble the row's requests. The execute body is the preassembled
 * `request_column` object, or the `request_columns` fields, plus the literal
 * `request_values`. A request_values key already present in a preassembled
 * object is a request error (row data is never silently overwritten).
 * Attempt ids are not injected into requests.
 */
export function buildRowPlan(config: CallConfig, row: Record<string, unknown>, line: number): RowPlanResult {
  const id = rowIdOf(config, row, line)
  const rowId = id.ok ? id.id : null
  const provenance: Record<string, unknown> = {}
  const fail = (route: string | null, reason: string): RowPlanResult => ({ok: false, rowId, provenance, route, reason})
  if (!id.ok) return fail(null, id.reason)
  try {
    for (const path of config.provenance_columns) {
      const value = resolvePath(row, path)
      if (value !== null && value !== undefined) provenance[path] = value
    }
  } catch (error: any) {
    return fail(null, `provenance: ${error.message}`)
  }
  let body: Record<string, unknown>
  try {
    body = config.request_column ? {...objectFrom(row, config.request_column)} : {}
    for (const [field, path] of Object.entries(config.request_columns)) body[field] = resolvePath(row, path)
    for (const [field, value] of Object.entries(config.request_values)) {
      if (Object.prototype.hasOwnProperty.call(body, field)) throw new PathError(`request_values.${field} would overwrite the field ${field} of ${config.request_column}`)
      body[field] = value
    }
  } catch (error: any) {
    return fail(config.route, error.message)
  }
  const stepBodies = (steps: {route: string; request_column?: string}[]): string[] | {route: string; reason: string} => {
    const out: string[] = []
    for (const step of steps) {
      try {
        out.push(step.request_column ? stringifyLossless(objectFrom(row, step.request_column)) : '{}')
      } catch (error: any) {
        return {route: step.route, reason: error.message}
      }
    }
    return out
  }
  const initializeBodies = stepBodies(config.session?.initialize ?? [])
  if (!Array.isArray(initializeBodies)) return fail(initializeBodies.route, initializeBodies.reason)
  const cleanupBodies = stepBodies(config.session?.cleanup ?? [])
  if (!Array.isArray(cleanupBodies)) return fail(cleanupBodies.route, cleanupBodies.reason)
  return {ok: true, plan: {rowId, provenance, body: stringifyLossless(body), initializeBodies, cleanupBodies}}
}
