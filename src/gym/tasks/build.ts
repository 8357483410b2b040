import {POLICY_MESSAGES} from '../../json/input-policy.js'
import {
  FieldError,
  findNonFinite,
  isJsonObject,
  type JsonObject,
  type JsonValue,
  locate,
  parseLosslessObjectLine,
  type ReadProgress,
  readJsonlLines,
  setMember,
  stringifyJson,
  valueKind,
  withJsonlOutput,
} from '../../json/index.js'
import {defaultScenarioId, isEncodableId} from './identity.js'
import {decodeJsonText, lookupSourcePath, resolveSourcePath} from './paths.js'
import {pythonStr, pythonStrip, pythonTruthy} from './python.js'
import type {TaskSpec} from './spec.js'
import {checkGymTask, dumpTask, kindsOfValue} from './task.js'

/** One line of scenarios.jsonl. */
export type ScenarioBundle = {
  schema_version: '1'
  scenario_id: string
  task: JsonObject
  provenance: JsonObject
}

/** Decode a column that may hold a JSON document as a string. */
function decoded(value: JsonValue, path: string, field: string): JsonValue {
  return typeof value === 'string' ? decodeJsonText(value, path, field) : value
}

function toolsOf(row: JsonObject, spec: TaskSpec, toolsColumn: string): JsonValue[] {
  const tools = decoded(resolveSourcePath(row, toolsColumn, 'tools_column'), toolsColumn, 'tools_column')
  if (!Array.isArray(tools) || !tools.every((tool) => isJsonObject(tool))) {
    throw new FieldError('tools_column', `${toolsColumn} must contain a JSON list of objects`)
  }
  const fields = spec.tool_fields
  if (!fields) return tools
  return tools.map((tool) => {
    const kept: JsonObject = {}
    for (const name of fields) if (Object.hasOwn(tool, name)) setMember(kept, name, tool[name])
    return kept
  })
}

/** Declarative mode: task_values, then task_columns, then responses_create_params built from messages and tools. */
function declarativeTask(row: JsonObject, spec: TaskSpec): JsonObject {
  const params: JsonObject = {}
  for (const [key, value] of Object.entries(spec.response_params)) setMember(params, key, value)
  params.input = spec.messages.map((message, i) => ({
    role: message.role,
    content: resolveSourcePath(row, message.content_column, `messages[${i}].content_column`),
  }))
  if (spec.tools_column !== undefined) params.tools = toolsOf(row, spec, spec.tools_column)
  const task: JsonObject = {}
  for (const [key, value] of Object.entries(spec.task_values)) setMember(task, key, value)
  for (const [key, path] of Object.entries(spec.task_columns)) setMember(task, key, resolveSourcePath(row, path, `task_columns.${key}`))
  setMember(task, 'responses_create_params', params)
  return task
}

function columnTask(row: JsonObject, taskColumn: string): JsonValue {
  return decoded(resolveSourcePath(row, taskColumn, 'task_column'), taskColumn, 'task_column')
}

function explicitScenarioId(row: JsonObject, column: string): string {
  const value = resolveSourcePath(row, column, 'scenario_id_column')
  if (value === null) throw new FieldError('scenario_id_column', `${column} must contain a non-missing scenario ID`)
  const text = pythonStr(value)
  if (text === undefined) throw new FieldError('scenario_id_column', `${column} must contain a string or a number, got ${valueKind(value)}`)
  const id = pythonStrip(text)
  if (id === '') throw new FieldError('scenario_id_column', 'scenario_id must not be empty')
  if (!isEncodableId(id)) throw new FieldError('scenario_id_column', `${column} must be valid Unicode (it contains a lone surrogate)`)
  return id
}

function provenanceOf(row: JsonObject, spec: TaskSpec): JsonObject {
  const provenance: JsonObject = {}
  for (const path of spec.provenance_columns) {
    const value = resolveSourcePath(row, path, 'provenance_columns')
    if (value !== null) setMember(provenance, path, value)
  }
  return provenance
}

function assertFinite(value: JsonValue, field: string): void {
  const nonFinite = findNonFinite(value, field)
  if (nonFinite) throw new FieldError(nonFinite, POLICY_MESSAGES.nonFinite)
}

/**
 * One row → one scenario bundle, or undefined when `include` skips the row
 * (a missing, null or falsy include value). Throws FieldError.
 */
export function scenarioFromRow(row: JsonObject, spec: TaskSpec): ScenarioBundle | undefined {
  if (spec.include !== undefined && !pythonTruthy(lookupSourcePath(row, spec.include, 'include'))) return undefined
  const built = spec.task_column === undefined ? declarativeTask(row, spec) : columnTask(row, spec.task_column)
  checkGymTask(isJsonObject(built) ? kindsOfValue(built) : undefined, 'task')
  const task = dumpTask(built as JsonObject)
  assertFinite(task, 'task')
  const scenarioId = spec.scenario_id_column === undefined ? defaultScenarioId(task, spec.scenario_namespace) : explicitScenarioId(row, spec.scenario_id_column)
  const provenance = provenanceOf(row, spec)
  assertFinite(provenance, 'provenance')
  return {schema_version: '1', scenario_id: scenarioId, task, provenance}
}

export interface BuildSummary {
  input: string
  /** The file written; null on a dry run without --output. */
  output: string | null
  dryRun: boolean
  rows: number
  skipped: number
  bundles: number
  /** Bundles whose scenario_id an earlier bundle already had (the same task, or a repeated explicit ID). */
  repeatedScenarioIds: number
}

/** Stream rows.jsonl into scenarios.jsonl; nothing is written unless every row is valid. */
export async function buildScenarios(options: {input: string; spec: TaskSpec; output: string; dryRun: boolean; onProgress?: (progress: ReadProgress) => void}): Promise<BuildSummary> {
  const {input, spec, output, dryRun} = options
  const seen = new Set<string>()
  const summary: BuildSummary = {input, output: output || null, dryRun, rows: 0, skipped: 0, bundles: 0, repeatedScenarioIds: 0}
  await withJsonlOutput(output, dryRun, async (out) => {
    for await (const line of readJsonlLines(input, 'ROWS', options.onProgress)) {
      summary.rows++
      const row = parseLosslessObjectLine(line, input)
      let bundle: ScenarioBundle | undefined
      try {
        bundle = scenarioFromRow(row, spec)
      } catch (error) {
        throw locate(error, 'E_ROW_INVALID', input, line.line, 'Check the row against the task spec; `gymrecipe tasks build --help` describes the fields.')
      }
      if (!bundle) {
        summary.skipped++
        continue
      }
      if (seen.has(bundle.scenario_id)) summary.repeatedScenarioIds++
      else seen.add(bundle.scenario_id)
      await out.write(stringifyJson(bundle))
      summary.bundles++
    }
  })
  return summary
}
