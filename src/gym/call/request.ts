import {isLosslessNumber} from 'lossless-json'

import {isJsonObject, parseJson, stringifyJson} from '../../json/index.js'
import {PathError, resolveParts} from './paths.js'
import type {CallConfig} from './types.js'
import {messageOf} from '../../errors.js'

/** Everything a row needs before any network call; built without I/O. */
export interface RowPlan {
  rowId: unknown
  /** rowId as JSON text. */
  rowIdText: string
  provenance: Record<string, unknown>
  /** provenance as JSON text. */
  provenanceText: string
  /** Serialized execute request body. */
  body: string
  /** Serialized bodies of the session initialize and cleanup steps. */
  initializeBodies: string[]
  cleanupBodies: string[]
}

export type RowPlanResult =
  | {ok: true; plan: RowPlan}
  | {ok: false; rowId: unknown; provenance: Record<string, unknown>; route: string | null; reason: string}

interface CompiledPath {
  path: string
  parts: readonly string[]
}

/** A config's paths split once, and its literal request values serialized once. */
interface CompiledConfig {
  rowId?: CompiledPath
  provenance: CompiledPath[]
  requestColumn?: CompiledPath
  /** request_columns: field, field as a JSON string, path */
  requestColumns: [string, string, CompiledPath][]
  requestValues: [string, unknown][]
  /** request_values as `"field":value` members, comma-separated */
  requestValuesText: string
  initialize: {route: string; column?: CompiledPath}[]
  cleanup: {route: string; column?: CompiledPath}[]
  /** Bodies of steps without a request_column ('{}'), shared. */
  constantInitialize?: string[]
  constantCleanup?: string[]
}

const compiledConfigs = new WeakMap<CallConfig, CompiledConfig>()

function compiledPath(path: string): CompiledPath {
  return {path, parts: path.split('.')}
}

function compile(config: CallConfig): CompiledConfig {
  let compiled = compiledConfigs.get(config)
  if (compiled) return compiled
  const steps = (list: {route: string; request_column?: string}[] | undefined) => (list ?? []).map((s) => ({route: s.route, ...(s.request_column ? {column: compiledPath(s.request_column)} : {})}))
  const values = Object.entries(config.request_values)
  compiled = {
    ...(config.row_id_column ? {rowId: compiledPath(config.row_id_column)} : {}),
    provenance: config.provenance_columns.map(compiledPath),
    ...(config.request_column ? {requestColumn: compiledPath(config.request_column)} : {}),
    requestColumns: Object.entries(config.request_columns).map(([field, path]) => [field, JSON.stringify(field), compiledPath(path)]),
    requestValues: values,
    requestValuesText: values.map(([field, value]) => `${JSON.stringify(field)}:${stringifyJson(value)}`).join(','),
    initialize: steps(config.session?.initialize),
    cleanup: steps(config.session?.cleanup),
  }
  if (compiled.initialize.every((s) => !s.column)) compiled.constantInitialize = compiled.initialize.map(() => '{}')
  if (compiled.cleanup.every((s) => !s.column)) compiled.constantCleanup = compiled.cleanup.map(() => '{}')
  compiledConfigs.set(config, compiled)
  return compiled
}

/** The row id: the value at row_id_column (string or number), or the 1-based input line number. */
export function rowIdOf(config: CallConfig, row: Record<string, unknown>, line: number): {ok: true; id: unknown} | {ok: false; reason: string} {
  const path = compile(config).rowId
  if (!path) return {ok: true, id: line}
  try {
    const id = resolveParts(row, path.parts, path.path)
    if (typeof id === 'string' ? id.trim() === '' : !isLosslessNumber(id) && typeof id !== 'number') {
      return {ok: false, reason: `row id at ${path.path} must be a non-empty string or a number`}
    }
    return {ok: true, id}
  } catch (error) {
    return {ok: false, reason: error instanceof PathError ? `row id: ${error.message}` : String(error)}
  }
}

function objectFrom(row: Record<string, unknown>, {path, parts}: CompiledPath): Record<string, unknown> {
  let value = resolveParts(row, parts, path)
  if (typeof value === 'string') {
    try {
      value = parseJson(value)
    } catch {
      throw new PathError(`${path} must contain a JSON object (the string does not decode)`)
    }
  }
  if (!isJsonObject(value)) throw new PathError(`${path} must contain a JSON object or a JSON string of one`)
  return value
}

function stepBodies(row: Record<string, unknown>, steps: {route: string; column?: CompiledPath}[]): string[] | {route: string; reason: string} {
  const out: string[] = []
  for (const step of steps) {
    try {
      out.push(step.column ? stringifyJson(objectFrom(row, step.column)) : '{}')
    } catch (error) {
      return {route: step.route, reason: messageOf(error)}
    }
  }
  return out
}

/**
 * Assemble the row's requests. The execute body is the preassembled
 * `request_column` object, or the `request_columns` fields, plus the literal
 * `request_values`. A request_values key already present in a preassembled
 * object is a request error (row data is never silently overwritten).
 * Attempt ids are not injected into requests.
 */
export function buildRowPlan(config: CallConfig, row: Record<string, unknown>, line: number): RowPlanResult {
  const compiled = compile(config)
  const id = rowIdOf(config, row, line)
  const rowId = id.ok ? id.id : null
  const provenance: Record<string, unknown> = {}
  let provenanceCount = 0
  const fail = (route: string | null, reason: string): RowPlanResult => ({ok: false, rowId, provenance, route, reason})
  if (!id.ok) return fail(null, id.reason)
  try {
    for (const {path, parts} of compiled.provenance) {
      const value = resolveParts(row, parts, path)
      if (value !== null && value !== undefined) {
        provenance[path] = value
        provenanceCount++
      }
    }
  } catch (error) {
    return fail(null, `provenance: ${messageOf(error)}`)
  }
  let body: string
  try {
    if (compiled.requestColumn) {
      const object: Record<string, unknown> = {...objectFrom(row, compiled.requestColumn)}
      for (const [field, value] of compiled.requestValues) {
        if (Object.prototype.hasOwnProperty.call(object, field)) throw new PathError(`request_values.${field} would overwrite the field ${field} of ${config.request_column}`)
        object[field] = value
      }
      body = stringifyJson(object)
    } else {
      // request_columns then request_values (their fields never overlap), written member by member
      body = '{'
      for (const [, fieldJson, {path, parts}] of compiled.requestColumns) {
        body += `${body.length > 1 ? ',' : ''}${fieldJson}:${stringifyJson(resolveParts(row, parts, path))}`
      }
      if (compiled.requestValuesText !== '') body += `${body.length > 1 ? ',' : ''}${compiled.requestValuesText}`
      body += '}'
    }
  } catch (error) {
    return fail(config.route, messageOf(error))
  }
  const initializeBodies = compiled.constantInitialize ?? stepBodies(row, compiled.initialize)
  if (!Array.isArray(initializeBodies)) return fail(initializeBodies.route, initializeBodies.reason)
  const cleanupBodies = compiled.constantCleanup ?? stepBodies(row, compiled.cleanup)
  if (!Array.isArray(cleanupBodies)) return fail(cleanupBodies.route, cleanupBodies.reason)
  const rowIdText = typeof rowId === 'string' ? JSON.stringify(rowId) : stringifyJson(rowId)
  const provenanceText = provenanceCount === 0 ? '{}' : stringifyJson(provenance)
  return {ok: true, plan: {rowId, rowIdText, provenance, provenanceText, body, initializeBodies, cleanupBodies}}
}
