/**
 * The committed JSON Schemas of the --json documents (schemas/): the envelope every command
 * prints, and per command the top-level shape of its `result` (each key's JSON type; a key added
 * or removed is a failing test and, once rewritten with GYMRECIPE_UPDATE_EXPECTED=1, a visible
 * diff). Nested values are typed, not spelled out.
 */
import {Ajv} from 'ajv'
import {existsSync} from 'node:fs'
import {readFile, writeFile} from 'node:fs/promises'
import path from 'node:path'

import {repoRoot} from '../helpers/cli.js'

export const SCHEMAS = path.join(repoRoot, 'schemas')

type JsonType = 'null' | 'boolean' | 'number' | 'string' | 'array' | 'object'

function typeOf(value: unknown): JsonType {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'array'
  return typeof value as JsonType
}

/** The schema of a command's result as seen in one document. */
export function resultSchema(command: string, result: unknown): Record<string, unknown> {
  const base = {$schema: 'http://json-schema.org/draft-07/schema#', title: `gymrecipe ${command} --json result`}
  if (typeOf(result) !== 'object') return {...base, type: typeOf(result)}
  const record = result as Record<string, unknown>
  const keys = Object.keys(record).sort()
  return {
    ...base,
    type: 'object',
    additionalProperties: false,
    required: keys,
    properties: Object.fromEntries(keys.map((k) => [k, {type: typeOf(record[k]) === 'null' ? ['array', 'boolean', 'null', 'number', 'object', 'string'] : typeOf(record[k])}])),
  }
}

type ObjectSchema = {type: unknown; required?: string[]; properties?: Record<string, {type: string | string[]}>}

/** Two documents of one command (e.g. a pass and a fail): a key's types are united, a key is required when both have it. */
function mergeSchemas(known: ObjectSchema, seen: ObjectSchema): ObjectSchema {
  if (!known.properties || !seen.properties) return seen
  const keys = [...new Set([...Object.keys(known.properties), ...Object.keys(seen.properties)])].sort()
  const types = (k: string) => [known.properties![k]?.type, seen.properties![k]?.type].flat().filter((t): t is string => typeof t === 'string')
  return {
    ...known,
    required: keys.filter((k) => known.required?.includes(k) && seen.required?.includes(k)),
    properties: Object.fromEntries(keys.map((k) => {
      const union = [...new Set(types(k))].sort()
      return [k, {type: union.length === 1 ? union[0] : union}]
    })),
  }
}

const ajv = new Ajv({allErrors: true, strict: false})

/** Problems of a --json document against schemas/envelope.schema.json and, on success, the command's result schema. */
export async function schemaProblems(command: string, document: unknown): Promise<string[]> {
  const envelope = JSON.parse(await readFile(path.join(SCHEMAS, 'envelope.schema.json'), 'utf8'))
  const problems: string[] = []
  const checkEnvelope = ajv.compile(envelope)
  if (!checkEnvelope(document)) problems.push(...(checkEnvelope.errors ?? []).map((e) => `envelope${e.instancePath} ${e.message}`))
  const doc = document as {result?: unknown; error?: unknown}
  if (doc.error) return problems
  const file = path.join(SCHEMAS, `${command.replaceAll(' ', '-')}.schema.json`)
  if (process.env.GYMRECIPE_UPDATE_EXPECTED === '1' || !existsSync(file)) {
    if (!process.env.GYMRECIPE_UPDATE_EXPECTED && (process.env.CI || process.env.GYMRECIPE_REQUIRE_DOCKER)) return [...problems, `${file} is missing: run with GYMRECIPE_UPDATE_EXPECTED=1 and commit it`]
    const seen = resultSchema(command, doc.result)
    const known = existsSync(file) && process.env.GYMRECIPE_UPDATE_EXPECTED === '1' ? JSON.parse(await readFile(file, 'utf8')) : undefined
    await writeFile(file, `${JSON.stringify(known ? mergeSchemas(known, seen) : seen, null, 2)}\n`)
  }
  const check = ajv.compile(JSON.parse(await readFile(file, 'utf8')))
  if (!check(doc.result)) problems.push(...(check.errors ?? []).map((e) => `result${e.instancePath} ${e.message}${e.params && 'additionalProperty' in e.params ? `: ${e.params.additionalProperty}` : ''}`))
  return problems
}
