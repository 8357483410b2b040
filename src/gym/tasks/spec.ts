import type {ErrorObject} from 'ajv'
import {LineCounter} from 'yaml'

import {ExitCode, GymError} from '../../errors.js'
import {INPUT_LIMITS, readInputText} from '../../runtime/read-input.js'
import {FieldError, type JsonObject, type JsonValue, LosslessNumber, setMember} from '../../json/index.js'
import {compareCodePoints, pythonFloatRepr, pythonStrip} from './python.js'
import {MANAGED_TASK_FIELDS} from './task.js'
import {ajvCompiler, schemaValidator} from '../../precompiled.js'
import {parseYamlDocument, yamlValue} from '../../yaml-value.js'
import {fieldName, pointerPath, schemaProblems, yamlLineOf} from '../../schema-errors.js'

/**
 * The task spec of `tasks build`: the Data Designer Gym processor config
 * (GymTaskProcessorConfig), read from YAML or JSON. Field names mirror the
 * Python config so a spec can be copied between the two; its `name` and
 * `processor_type` keys are accepted for that reason and otherwise unused.
 */
export interface TaskSpec {
  task_column?: string
  messages: {role: string; content_column: string}[]
  tools_column?: string
  tool_fields?: string[]
  response_params: JsonObject
  task_columns: Record<string, string>
  task_values: JsonObject
  scenario_id_column?: string
  include?: string
  provenance_columns: string[]
  scenario_namespace: string
}

const columnPath = {type: 'string', description: 'a column path (a string such as "reference_plan.tool_calls")'}
const optionalColumnPath = {type: ['string', 'null'], description: columnPath.description}

/** Shapes and types; each `description` is what the error message says the value must be. */
export const TASK_SPEC_SCHEMA = {
  type: 'object',
  description: 'a mapping of task spec fields',
  additionalProperties: false,
  properties: {
    name: {type: 'string', minLength: 1, description: 'a non-empty string'},
    processor_type: {const: 'gym', description: '"gym"'},
    task_column: optionalColumnPath,
    messages: {
      type: 'array',
      description: 'a list of {role, content_column} mappings',
      items: {
        type: 'object',
        description: 'a mapping with role and content_column',
        additionalProperties: false,
        required: ['role', 'content_column'],
        properties: {
          role: {type: 'string', minLength: 1, description: 'a non-empty string'},
          content_column: {...columnPath, minLength: 1},
        },
      },
    },
    tools_column: optionalColumnPath,
    tool_fields: {type: ['array', 'null'], description: 'a list of tool field names', items: {type: 'string', description: 'a tool field name (a string)'}},
    response_params: {type: 'object', description: 'a mapping of extra responses_create_params'},
    task_columns: {type: 'object', description: 'a mapping of task field to column path', additionalProperties: columnPath},
    task_values: {type: 'object', description: 'a mapping of task field to JSON value'},
    scenario_id_column: optionalColumnPath,
    include: optionalColumnPath,
    provenance_columns: {type: 'array', description: 'a list of column paths', items: columnPath},
    scenario_namespace: {
      type: 'string',
      pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$',
      description: 'letters, digits, ".", "_" or "-", starting with a letter or digit',
    },
  },
} as const

export const TASK_SPEC_AJV_OPTIONS = {allErrors: true, verbose: true, allowUnionTypes: true} as const
const validateShape = schemaValidator<Record<string, unknown>>('task-spec-validator', TASK_SPEC_SCHEMA, () => {
  return new (ajvCompiler())(TASK_SPEC_AJV_OPTIONS).compile<Record<string, unknown>>(TASK_SPEC_SCHEMA)
})

const RESERVED_TASK_FIELDS = [...MANAGED_TASK_FIELDS, 'responses_create_params']

/** Where the task spec says more than the shared wording. */
function specWording(error: ErrorObject): string | undefined {
  const path = pointerPath(error.instancePath)
  if (error.keyword === 'minLength' && path[0] === 'messages') return 'message mapping values must not be empty'
  const description = (error.parentSchema as {description?: unknown} | undefined)?.description
  if (path.length === 0 && typeof description === 'string' && error.keyword === 'type') return `the task spec must be ${description}`
  return undefined
}

/** YAML values as lossless JSON: integers exact, floats with Python's spelling, nothing that is not JSON. */
function toJsonValue(value: unknown, field: string): JsonValue {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value
  if (typeof value === 'bigint') return new LosslessNumber(value.toString())
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new FieldError(field, 'must be a finite number (NaN and Infinity are not JSON)')
    return new LosslessNumber(pythonFloatRepr(value))
  }
  if (Array.isArray(value)) return value.map((item, i) => toJsonValue(item, `${field}[${i}]`))
  if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    const object: JsonObject = {}
    for (const [key, item] of Object.entries(value)) setMember(object, key, toJsonValue(item, `${field}.${key}`))
    return object
  }
  throw new FieldError(field, 'must contain JSON-compatible data')
}

function isSourcePath(path: string): boolean {
  return path.split('.').every((part) => part.length > 0 && part === pythonStrip(part))
}

function duplicates(values: string[]): boolean {
  return new Set(values).size !== values.length
}

function sortedList(values: string[]): string {
  return [...values].sort(compareCodePoints).join(', ')
}

/** The plugin's model validator, in its order: the first rule that fails wins (messages as in the plugin). */
function checkRules(spec: TaskSpec): void {
  const declarative = spec.messages.length > 0
  if ((spec.task_column === undefined) === !declarative) {
    throw new FieldError(spec.task_column === undefined ? undefined : 'task_column', 'configure exactly one of task_column or messages')
  }
  if (spec.task_column !== undefined) {
    const used = (
      [
        ['tools_column', Boolean(spec.tools_column)],
        ['tool_fields', Boolean(spec.tool_fields?.length)],
        ['response_params', Object.keys(spec.response_params).length > 0],
        ['task_columns', Object.keys(spec.task_columns).length > 0],
        ['task_values', Object.keys(spec.task_values).length > 0],
      ] as const
    ).find(([, set]) => set)
    if (used) throw new FieldError(used[0], 'declarative task fields cannot be used with task_column')
  }
  if (spec.tool_fields !== undefined && spec.tools_column === undefined) throw new FieldError('tool_fields', 'tool_fields requires tools_column')
  const overridden = ['input', 'tools'].find((key) => Object.hasOwn(spec.response_params, key))
  if (overridden) throw new FieldError(`response_params.${overridden}`, 'response_params cannot override input or tools')

  const sourcePaths: [string, string][] = [
    ...spec.provenance_columns.map((path, i): [string, string] => [`provenance_columns[${i}]`, path]),
    ...Object.entries(spec.task_columns).map(([key, path]): [string, string] => [`task_columns.${key}`, path]),
    ...spec.messages.map((message, i): [string, string] => [`messages[${i}].content_column`, message.content_column]),
    ...(['task_column', 'tools_column', 'scenario_id_column', 'include'] as const)
      .filter((key) => spec[key] !== undefined)
      .map((key): [string, string] => [key, spec[key] as string]),
  ]
  const badPath = sourcePaths.find(([, path]) => !isSourcePath(path))
  if (badPath) throw new FieldError(badPath[0], 'column paths must contain non-empty dot-separated names')

  const taskFields = [...Object.keys(spec.task_columns), ...Object.keys(spec.task_values)]
  const blankField = taskFields.find((key) => pythonStrip(key) === '')
  if (blankField !== undefined) throw new FieldError(Object.hasOwn(spec.task_columns, blankField) ? 'task_columns' : 'task_values', 'task field names must not be empty')
  const reserved = taskFields.filter((key) => RESERVED_TASK_FIELDS.includes(key))
  if (reserved.length > 0) throw new FieldError(undefined, `task fields are plugin-managed: ${sortedList([...new Set(reserved)])}`)
  const both = Object.keys(spec.task_columns).filter((key) => Object.hasOwn(spec.task_values, key))
  if (both.length > 0) throw new FieldError('task_values', `task fields cannot have both a column and value: ${sortedList(both)}`)
  if (duplicates(spec.provenance_columns)) throw new FieldError('provenance_columns', 'provenance_columns must not contain duplicates')
  if (spec.tool_fields?.some((name) => pythonStrip(name) === '')) throw new FieldError('tool_fields', 'tool_fields must not contain empty names')
  if (spec.tool_fields && duplicates(spec.tool_fields)) throw new FieldError('tool_fields', 'tool_fields must not contain duplicates')
}

function orUndefined<T>(value: T | null | undefined): T | undefined {
  return value ?? undefined
}

/** Validate a parsed spec document (plain JS values; integers as bigint). Throws FieldError. */
export function taskSpecFrom(raw: unknown): TaskSpec {
  const validate = validateShape()
  if (!validate(raw)) {
    const [first] = schemaProblems(validate.errors ?? [], specWording)
    throw new FieldError(first.path.length > 0 ? fieldName(first.path) : undefined, first.expected)
  }
  // The schema has admitted it: TaskSpec's fields, each optional or null, the JSON ones not yet converted.
  type Nullable<T> = {[K in keyof T]?: T[K] | null}
  const input = raw as Nullable<Omit<TaskSpec, 'response_params' | 'task_values'>> & {response_params?: unknown; task_values?: unknown}
  const messages = (input.messages ?? []) as TaskSpec['messages']
  const blankRole = messages.findIndex((message) => pythonStrip(message.role) === '' || pythonStrip(message.content_column) === '')
  if (blankRole !== -1) throw new FieldError(`messages[${blankRole}]`, 'message mapping values must not be empty')
  const spec: TaskSpec = {
    task_column: orUndefined(input.task_column),
    messages,
    tools_column: orUndefined(input.tools_column),
    tool_fields: orUndefined(input.tool_fields),
    response_params: toJsonValue(input.response_params ?? {}, 'response_params') as JsonObject,
    task_columns: input.task_columns ?? {},
    task_values: toJsonValue(input.task_values ?? {}, 'task_values') as JsonObject,
    scenario_id_column: orUndefined(input.scenario_id_column),
    include: orUndefined(input.include),
    provenance_columns: input.provenance_columns ?? [],
    scenario_namespace: input.scenario_namespace ?? 'gym',
  }
  checkRules(spec)
  return spec
}

function fieldPath(field: string): (string | number)[] {
  return [...field.matchAll(/[^.[\]]+|\[(\d+)\]/g)].map((match) => (match[1] === undefined ? match[0] : Number(match[1])))
}

function specError(message: string, file: string, line: number | undefined, field?: string): GymError {
  return new GymError(field ? `${field}: ${message}` : message, {
    code: 'E_SPEC_INVALID',
    exit: ExitCode.usage,
    hint: 'See `gymrecipe tasks build --help` for the spec fields and an example.',
    location: {file, line, field},
  })
}

/** Read and validate a task spec file (YAML or JSON); errors name the file, line and field. */
export async function loadTaskSpec(file: string): Promise<TaskSpec> {
  const text = await readInputText(file, {what: 'the task spec', maxBytes: INPUT_LIMITS.taskSpec, strictText: true, hint: 'Check the path given to --spec.'})
  if (text === undefined) throw new GymError(`cannot read task spec ${file}: ENOENT`, {code: 'E_SPEC_MISSING', exit: ExitCode.usage, hint: 'Check the path given to --spec.', location: {file, field: '--spec'}})
  const lines = new LineCounter()
  const doc = parseYamlDocument(text, {intAsBigInt: true, lineCounter: lines})
  if (doc.errors.length > 0) {
    const [error] = doc.errors
    const summary = error.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '')
    throw specError(`invalid YAML: ${summary}`, file, error.linePos?.[0].line)
  }
  try {
    return taskSpecFrom(yamlValue(doc, file))
  } catch (error) {
    if (!(error instanceof FieldError)) throw error
    throw specError(error.message, file, yamlLineOf(doc, lines, error.field ? fieldPath(error.field) : []), error.field)
  }
}
