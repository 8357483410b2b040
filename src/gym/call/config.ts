import type {ErrorObject, FormatDefinition, ValidateFunction} from 'ajv'
import {LosslessNumber} from 'lossless-json'
import {LineCounter} from 'yaml'

import {GymError, ExitCode} from '../../errors.js'
import {INPUT_LIMITS, readInputText} from '../../runtime/read-input.js'
import {isDotPath} from './paths.js'
import type {CallConfig, CallKind, SessionConfig, SessionStepConfig} from './types.js'
import {parseYamlDocument, yamlValue} from '../../yaml-value.js'
import {pointerPath, schemaProblems, yamlLineOf} from '../../schema-errors.js'
import {ajvCompiler, formatValidator} from '../../precompiled.js'

/** Defaults for what the contract leaves open (documented in docs/gym-workflow.md). */
export const CALL_DEFAULTS = {
  harnessRoute: '/v1/responses',
  maxParallelRequests: 4,
  timeoutSeconds: 60,
  cleanupTimeoutSeconds: 30,
} as const

const FORBIDDEN_SESSION_HEADERS = new Set(['host', 'content-length', 'content-type', 'cookie', 'connection', 'transfer-encoding', 'authorization'])

const dotPath = {type: 'string', format: 'dot-path'}
const envName = {type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$'}
const route = {type: 'string', pattern: '^/'}
/** Node timers overflow above 2^31-1 ms (~24.8 days); 1e6 s (~11.6 days) is plenty. */
const seconds = {type: 'number', exclusiveMinimum: 0, maximum: 1_000_000}

function stepSchema(withHeaders: boolean): Record<string, unknown> {
  const properties: Record<string, unknown> = {
    endpoint: {type: 'string', format: 'http-url'},
    route,
    request_column: dotPath,
    bearer_token_env: envName,
  }
  if (withHeaders) {
    properties.response_headers = {
      type: 'object',
      propertyNames: {pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"},
      additionalProperties: dotPath,
    }
  }
  return {type: 'object', additionalProperties: false, required: ['route'], properties}
}

/** The JSON Schema of a call config; `kind` adds the resource- or harness-only fields. */
export function callConfigSchema(kind: CallKind): Record<string, unknown> {
  const properties: Record<string, unknown> = {
    name: {type: 'string', minLength: 1},
    endpoint: {type: 'string', format: 'http-url'},
    route,
    row_id_column: dotPath,
    request_columns: {type: 'object', propertyNames: {minLength: 1}, additionalProperties: dotPath},
    request_values: {type: 'object', propertyNames: {minLength: 1}},
    request_column: dotPath,
    provenance_columns: {type: 'array', items: dotPath, uniqueItems: true},
    max_parallel_requests: {type: 'integer', minimum: 1, maximum: 1024},
    timeout: seconds,
    queue_timeout: {anyOf: [seconds, {type: 'null'}]},
    session: {
      type: 'object',
      additionalProperties: false,
      properties: {
        initialize: {type: 'array', items: stepSchema(true)},
        cleanup: {type: 'array', items: stepSchema(false)},
        cleanup_timeout: seconds,
      },
    },
    bearer_token_env: envName,
    response_fields: {type: 'object', propertyNames: {minLength: 1}, additionalProperties: dotPath},
  }
  const required = ['name', 'endpoint']
  if (kind === 'resource') {
    properties.response_protocol = {enum: ['gym-episode']}
    required.push('route')
  } else {
    properties.evidence_column = {type: 'string', minLength: 1}
    required.push('evidence_column')
  }
  return {
    $id: `gymrecipe/call-${kind}.json`,
    type: 'object',
    additionalProperties: false,
    required,
    properties,
  }
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value)
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.username === '' && url.password === '' && url.search === '' && url.hash === ''
  } catch {
    return false
  }
}

/** The config schema's own formats; the build's generated validators take them at run time. */
export const CALL_CONFIG_FORMATS: Record<string, FormatDefinition<string>> = {
  'dot-path': {type: 'string', validate: isDotPath},
  'http-url': {type: 'string', validate: isHttpUrl},
}

export const CALL_AJV_OPTIONS = {allErrors: true, strict: true, allowUnionTypes: true, verbose: true} as const

const validators = new Map<CallKind, ValidateFunction>()

/** The kind's validator: generated at build time, compiled here only when the build has none (or an older schema). */
function validatorOf(kind: CallKind): ValidateFunction {
  let validate = validators.get(kind)
  if (!validate) {
    validate = formatValidator(`call-${kind}-validator`, callConfigSchema(kind), CALL_CONFIG_FORMATS, () => {
      const ajv = new (ajvCompiler())(CALL_AJV_OPTIONS)
      for (const [name, format] of Object.entries(CALL_CONFIG_FORMATS)) ajv.addFormat(name, format)
      return ajv.compile(callConfigSchema(kind))
    })
    validators.set(kind, validate)
  }
  return validate
}

/** One config problem, located by JSON pointer and, when known, line. */
export interface ConfigProblem {
  pointer: string
  line?: number
  expected: string
  hint: string
}

const FIELD_HINTS: Record<string, string> = {
  name: 'name is the output column that receives the envelope, e.g. `name: execution`',
  endpoint: 'endpoint is the service base URL, e.g. `endpoint: http://127.0.0.1:8000` (no credentials, query or fragment)',
  route: 'route is the HTTP path called for each row, e.g. `route: /execute`',
  evidence_column: 'call harness writes the answer to `name` and the evidence envelope to `evidence_column`, e.g. `evidence_column: harness_evidence`',
  response_protocol: 'the only protocol is `gym-episode`; omit it for a plain resource response',
  bearer_token_env: 'give the NAME of an environment variable holding the token, never the token itself',
  timeout: 'seconds for initialize plus execute of one row, e.g. `timeout: 60`',
  queue_timeout: 'seconds a row may wait for a free slot before it fails with admission_timeout',
  cleanup_timeout: 'seconds for each cleanup step, e.g. `cleanup_timeout: 30`',
  max_parallel_requests: 'how many row lifecycles (initialize, execute, cleanup) run at once, 1 to 1024',
}

function hintFor(pointer: string): string {
  const parts = pointer.split('/').filter(Boolean)
  for (let i = parts.length - 1; i >= 0; i--) {
    const hint = FIELD_HINTS[parts[i]]
    if (hint) return hint
  }
  if (pointer.includes('/session')) return 'session has `initialize` and `cleanup` step lists (each step: endpoint, route, request_column, response_headers, bearer_token_env) and `cleanup_timeout`'
  if (/request_columns|response_fields|provenance_columns|row_id_column|request_column/u.test(pointer)) return 'paths are dot-separated names such as `candidate.sql`'
  return 'see `gymrecipe call resource --help` and "Calling Gym services" in docs/gym-workflow.md'
}

/** What the call config's own formats and fields mean, where the shared wording would be vaguer. */
function callWording(error: ErrorObject): string | undefined {
  const base = error.instancePath
  if (error.keyword === 'format' && param(error, 'format') === 'dot-path') return 'must be a dot path like `candidate.sql` (non-empty parts, no surrounding spaces)'
  if (error.keyword === 'format' && param(error, 'format') === 'http-url') return 'must be an http:// or https:// URL without credentials, query or fragment'
  if (error.keyword === 'pattern' && base.endsWith('/route')) return 'must be an HTTP path starting with "/"'
  if (error.keyword === 'pattern' && base.endsWith('bearer_token_env')) return 'must be an environment variable name (letters, digits, underscore)'
  if (error.keyword === 'exclusiveMinimum') return 'must be a number of seconds greater than 0'
  if (error.keyword === 'anyOf') return 'must be a number of seconds greater than 0, or null'
  return undefined
}

/** Convert YAML bigints: inside request_values they become lossless numbers; elsewhere plain numbers. */
function normalizeNumbers(value: unknown, lossless: boolean): unknown {
  if (typeof value === 'bigint') return lossless ? new LosslessNumber(value.toString()) : Number(value)
  if (Array.isArray(value)) return value.map((v) => normalizeNumbers(v, lossless))
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = normalizeNumbers(v, lossless || k === 'request_values')
    return out
  }
  return value
}

/** Reads and validates a call config file; throws a GymError (exit 2) naming file, pointer, line and hint. */
export async function loadCallConfig(file: string, kind: CallKind): Promise<CallConfig> {
  const text = await readInputText(file, {what: 'the call config', maxBytes: INPUT_LIMITS.callConfig, strictText: true, hint: 'pass --config with the path of a YAML file'})
  if (text === undefined) {
    throw new GymError(`cannot read config ${file}: ENOENT`, {
      code: 'E_CALL_CONFIG_UNREADABLE',
      exit: ExitCode.usage,
      hint: 'pass --config with the path of a YAML file',
      location: {file},
    })
  }
  return parseCallConfig(text, kind, file)
}

/** Validate config text (YAML or JSON). */
export function parseCallConfig(text: string, kind: CallKind, file = '<config>'): CallConfig {
  const lineCounter = new LineCounter()
  const doc = parseYamlDocument(text, {lineCounter, intAsBigInt: true, uniqueKeys: true, prettyErrors: false})
  if (doc.errors.length > 0) {
    const first = doc.errors[0]
    const line = lineCounter.linePos(first.pos[0]).line
    throw new GymError(`not valid YAML: ${first.message.split('\n')[0]}`, {
      code: 'E_CALL_CONFIG_INVALID',
      exit: ExitCode.usage,
      hint: 'fix the YAML syntax (duplicate keys are rejected)',
      location: {file, line},
    })
  }
  const raw = normalizeNumbers(yamlValue(doc, file), false)
  const problems: ConfigProblem[] = []
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    problems.push({pointer: '', expected: 'must be a mapping of config fields', hint: 'start from the example in "Calling Gym services" in docs/gym-workflow.md'})
  } else {
    const validate = validatorOf(kind)
    if (!validate(raw)) {
      for (const problem of schemaProblems(validate.errors ?? [], callWording)) {
        problems.push({pointer: problem.pointer, expected: problem.expected, hint: otherKindHint(kind, problem.pointer) ?? hintFor(problem.pointer)})
      }
    }
    if (problems.length === 0) problems.push(...semanticProblems(raw as RawCallConfig, kind))
  }
  if (problems.length > 0) {
    for (const p of problems) p.line = yamlLineOf(doc, lineCounter, pointerPath(p.pointer))
    const first = problems[0]
    const lines = problems.slice(0, 8).map((p) => `  ${p.pointer || '/'}${p.line === undefined ? '' : ` (line ${p.line})`}: ${p.expected}`)
    throw new GymError(`invalid call ${kind} config:\n${lines.join('\n')}`, {
      code: 'E_CALL_CONFIG_INVALID',
      exit: ExitCode.usage,
      hint: first.hint,
      location: {file, line: first.line, pointer: first.pointer || '/'},
      details: {problems},
    })
  }
  return normalizeConfig(raw as RawCallConfig, kind)
}

function otherKindHint(kind: CallKind, pointer: string): string | undefined {
  if (kind === 'resource' && pointer === '/evidence_column') return 'evidence_column belongs to `call harness` configs; `call resource` writes one envelope column'
  if (kind === 'harness' && pointer === '/response_protocol') return 'response_protocol: gym-episode belongs to `call resource` (a whole-episode endpoint is a resource call)'
  return undefined
}

/** One parameter of an Ajv error (its shape depends on the keyword). */
function param(error: ErrorObject, name: string): unknown {
  return (error.params as Record<string, unknown>)[name]
}

/** A session step as the config file gives it (the schema has admitted it; no defaults yet). */
type RawSessionStep = Omit<SessionStepConfig, 'endpoint'> & {endpoint?: string}

/** A call config as the file gives it, once the schema has admitted it: CallConfig before its defaults. */
type RawCallConfig = Partial<Omit<CallConfig, 'kind' | 'session' | 'queue_timeout'>> & {
  name: string
  endpoint: string
  queue_timeout?: number | null
  session?: {initialize?: RawSessionStep[]; cleanup?: RawSessionStep[]; cleanup_timeout?: number}
}

function semanticProblems(raw: RawCallConfig, kind: CallKind): ConfigProblem[] {
  const problems: ConfigProblem[] = []
  const columns = Object.keys(raw.request_columns ?? {})
  const values = Object.keys(raw.request_values ?? {})
  if (raw.request_column !== undefined && columns.length > 0) {
    problems.push({
      pointer: '/request_columns',
      expected: 'cannot be combined with request_column',
      hint: 'use request_column for a preassembled request object, or request_columns to build one field by field (request_values may add literal fields to either)',
    })
  }
  const both = columns.filter((c) => values.includes(c))
  if (both.length > 0) {
    problems.push({
      pointer: `/request_values/${both[0]}`,
      expected: `request fields cannot have both a column and a value: ${both.sort().join(', ')}`,
      hint: 'keep each request field in either request_columns or request_values',
    })
  }
  if (raw.request_column === undefined && columns.length === 0 && values.length === 0) {
    problems.push({
      pointer: '/request_columns',
      expected: 'one of request_columns, request_column or request_values is required',
      hint: 'say where the request body comes from, e.g. `request_columns: {sql: candidate.sql}`',
    })
  }
  const session = raw.session
  if (session) {
    const init = session.initialize ?? []
    const cleanup = session.cleanup ?? []
    if (init.length > 0 && cleanup.length === 0) {
      problems.push({
        pointer: '/session/cleanup',
        expected: 'is required when session.initialize is set (stateful initialization requires cleanup)',
        hint: 'add the route that releases the session, e.g. `cleanup: [{route: /cleanup}]`; stateless calls omit `session`',
      })
    }
    init.forEach((step, i) => {
      for (const header of Object.keys(step.response_headers ?? {})) {
        if (FORBIDDEN_SESSION_HEADERS.has(header.toLowerCase())) {
          problems.push({
            pointer: `/session/initialize/${i}/response_headers/${header}`,
            expected: `cannot set the ${header} header`,
            hint: 'map the token to a custom header such as X-Session-Token; cookies are kept automatically and bearer tokens come from bearer_token_env',
          })
        }
      }
    })
  }
  if (kind === 'harness' && raw.evidence_column === raw.name) {
    problems.push({pointer: '/evidence_column', expected: 'must differ from name', hint: FIELD_HINTS.evidence_column})
  }
  return problems
}

function trimSlash(url: string): string {
  return url.endsWith('/') ? url.slice(0, -1) : url
}

function normalizeConfig(raw: RawCallConfig, kind: CallKind): CallConfig {
  const endpoint = trimSlash(raw.endpoint)
  const step = (s: RawSessionStep): SessionStepConfig => ({
    endpoint: s.endpoint === undefined ? endpoint : trimSlash(s.endpoint),
    route: s.route,
    ...(s.request_column === undefined ? {} : {request_column: s.request_column}),
    ...(s.response_headers === undefined ? {} : {response_headers: s.response_headers}),
    ...(s.bearer_token_env === undefined ? {} : {bearer_token_env: s.bearer_token_env}),
  })
  let session: SessionConfig | undefined
  if (raw.session && ((raw.session.initialize ?? []).length > 0 || (raw.session.cleanup ?? []).length > 0)) {
    session = {
      initialize: (raw.session.initialize ?? []).map(step),
      cleanup: (raw.session.cleanup ?? []).map(step),
      cleanup_timeout: raw.session.cleanup_timeout ?? CALL_DEFAULTS.cleanupTimeoutSeconds,
    }
  }
  return {
    kind,
    name: raw.name,
    endpoint,
    route: raw.route ?? CALL_DEFAULTS.harnessRoute,
    ...(raw.row_id_column === undefined ? {} : {row_id_column: raw.row_id_column}),
    request_columns: raw.request_columns ?? {},
    request_values: raw.request_values ?? {},
    ...(raw.request_column === undefined ? {} : {request_column: raw.request_column}),
    provenance_columns: raw.provenance_columns ?? [],
    max_parallel_requests: raw.max_parallel_requests ?? CALL_DEFAULTS.maxParallelRequests,
    timeout: raw.timeout ?? CALL_DEFAULTS.timeoutSeconds,
    ...(raw.queue_timeout === undefined || raw.queue_timeout === null ? {} : {queue_timeout: raw.queue_timeout}),
    ...(session ? {session} : {}),
    ...(raw.bearer_token_env === undefined ? {} : {bearer_token_env: raw.bearer_token_env}),
    ...(raw.response_protocol === undefined ? {} : {response_protocol: raw.response_protocol}),
    ...(raw.response_fields === undefined ? {} : {response_fields: raw.response_fields}),
    ...(raw.evidence_column === undefined ? {} : {evidence_column: raw.evidence_column}),
  }
}

export interface MissingToken {
  /** The environment variable's name (never a value). */
  name: string
  pointer: string
  endpoint: string
}

function missingTokenError(missing: MissingToken): GymError {
  return new GymError(`environment variable ${missing.name} (${missing.pointer}) is not set or empty`, {
    code: 'E_CALL_TOKEN_MISSING',
    exit: ExitCode.usage,
    hint: `export ${missing.name}=<token> before running; the token is read once at start-up and sent only to ${missing.endpoint}`,
    location: {pointer: missing.pointer},
  })
}

/**
 * Bearer tokens are read once at start-up. Each token is bound to the endpoint
 * that declared it: the column's token goes only to `endpoint`, a step's token
 * only to that step's endpoint. Variables that are unset or empty are listed
 * (by name) in `missing`; two tokens for one endpoint are a usage error.
 */
export function bearerTokens(config: CallConfig, env: NodeJS.ProcessEnv = process.env): {tokens: Map<string, string>; missing: MissingToken[]} {
  const tokens = new Map<string, string>()
  const missing: MissingToken[] = []
  const bind = (endpoint: string, name: string | undefined, pointer: string) => {
    if (!name) return
    const value = env[name]
    if (value === undefined || value === '') {
      missing.push({name, pointer, endpoint})
      return
    }
    const existing = tokens.get(endpoint)
    if (existing !== undefined && existing !== value) {
      throw new GymError(`two different bearer tokens are configured for ${endpoint}`, {
        code: 'E_CALL_CONFIG_INVALID',
        exit: ExitCode.usage,
        hint: 'declare one bearer_token_env per endpoint',
        location: {pointer},
      })
    }
    tokens.set(endpoint, value)
  }
  bind(config.endpoint, config.bearer_token_env, '/bearer_token_env')
  config.session?.initialize.forEach((s, i) => bind(s.endpoint, s.bearer_token_env, `/session/initialize/${i}/bearer_token_env`))
  config.session?.cleanup.forEach((s, i) => bind(s.endpoint, s.bearer_token_env, `/session/cleanup/${i}/bearer_token_env`))
  return {tokens, missing}
}

/** The tokens a real run sends: a missing variable is a usage error naming the variable, never a value. */
export function readBearerTokens(config: CallConfig, env: NodeJS.ProcessEnv = process.env): Map<string, string> {
  const {tokens, missing} = bearerTokens(config, env)
  if (missing.length > 0) throw missingTokenError(missing[0])
  return tokens
}

/** The configured services: the only origins a row's cookies and session headers are sent to. */
export function configuredEndpoints(config: CallConfig): string[] {
  const set = new Set<string>([config.endpoint])
  for (const s of config.session?.initialize ?? []) set.add(s.endpoint)
  for (const s of config.session?.cleanup ?? []) set.add(s.endpoint)
  return [...set]
}
