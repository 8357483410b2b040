import {Ajv, type ErrorObject} from 'ajv'
import {promises as fsp} from 'node:fs'
import {isMap, isScalar, isSeq, LineCounter, parseDocument, type Document} from 'yaml'

import {codeOf, GymError, messageOf, ExitCode} from '../errors.js'
import {checkContractInvariants} from './invariants.js'
import {recipeSchema} from './schema.js'
import type {RecipeContract} from './types.js'
import {yamlValue} from '../yaml-value.js'

export interface ContractProblem {
  file: string
  line: number | null
  pointer: string
  message: string
  expected: string
  hint: string
}

const ajv = new Ajv({allErrors: true, strict: true, allowUnionTypes: true})
const validateSchema = ajv.compile<RecipeContract>(recipeSchema as any)

/** What a failing keyword expected, in words a user can act on. */
function describeExpectation(error: ErrorObject): string {
  const p = error.params as Record<string, unknown>
  switch (error.keyword) {
    case 'required':
      return `a "${p.missingProperty}" field`
    case 'additionalProperties':
      return `no field "${p.additionalProperty}" (not part of the recipe contract)`
    case 'pattern':
      return `a value matching ${p.pattern}`
    case 'enum':
      return `one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`
    case 'const':
      return `exactly ${JSON.stringify(p.allowedValue)}`
    case 'type':
      return `a value of type ${p.type}`
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return `a number ${p.comparison} ${p.limit}`
    case 'minItems':
      return `at least ${p.limit} item(s)`
    case 'maxLength':
      return `at most ${p.limit} characters`
    case 'minLength':
      return `at least ${p.limit} character(s)`
    case 'uniqueItems':
      return 'no duplicate items'
    default:
      return error.message ?? error.keyword
  }
}

function hintFor(error: ErrorObject): string {
  const p = error.params as Record<string, unknown>
  if (error.keyword === 'additionalProperties') return `Remove "${p.additionalProperty}" or check its spelling.`
  if (error.keyword === 'pattern') return 'Only letters, digits and . _ - / are allowed here; values reach shell scripts and paths.'
  if (error.keyword === 'required') return `Add "${p.missingProperty}"; see the built-in recipes in recipes/ for complete examples.`
  return 'See the recipe contract reference in README.md.'
}

/** Keep the most specific error per location; oneOf/anyOf add noise on top of their branch errors. */
function usefulErrors(errors: ErrorObject[]): ErrorObject[] {
  const specific = errors.filter((e) => !['anyOf', 'oneOf', 'if'].includes(e.keyword))
  const chosen = specific.length > 0 ? specific : errors
  const seen = new Set<string>()
  return chosen.filter((e) => {
    const key = `${e.instancePath}|${e.keyword}|${JSON.stringify(e.params)}`
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}

function pointerSegments(pointer: string): string[] {
  if (!pointer) return []
  return pointer
    .split('/')
    .slice(1)
    .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'))
}

/** 1-based line of the node at a JSON pointer, or of its nearest existing parent. */
export function lineOfPointer(doc: Document | undefined, lineCounter: LineCounter | undefined, pointer: string): number | null {
  if (!doc || !lineCounter) return null
  const segments = pointerSegments(pointer)
  for (let n = segments.length; n >= 0; n--) {
    const path = segments.slice(0, n).map((s) => (/^\d+$/.test(s) ? Number(s) : s))
    const node: any = n === 0 ? doc.contents : doc.getIn(path, true)
    if (node && (isMap(node) || isSeq(node) || isScalar(node)) && node.range) {
      // For a map entry, point at the key line rather than the value.
      if (n > 0 && n === segments.length) {
        const parent: any = n === 1 ? doc.contents : doc.getIn(path.slice(0, -1), true)
        if (isMap(parent)) {
          const pair = parent.items.find((it: any) => isScalar(it.key) && String(it.key.value) === String(path.at(-1)))
          if (pair && isScalar(pair.key) && pair.key.range) return lineCounter.linePos(pair.key.range[0]).line
        }
      }
      return lineCounter.linePos(node.range[0]).line
    }
  }
  return null
}

export function problemsFromSchema(errors: ErrorObject[], file: string, doc?: Document, lineCounter?: LineCounter): ContractProblem[] {
  return usefulErrors(errors).map((error) => {
    const pointer = error.keyword === 'required' ? error.instancePath : error.instancePath || ''
    const fieldPointer =
      error.keyword === 'additionalProperties' ? `${error.instancePath}/${String((error.params as Record<string, unknown>).additionalProperty)}` : pointer
    return {
      file,
      line: lineOfPointer(doc, lineCounter, fieldPointer),
      pointer: fieldPointer || '/',
      message: `${fieldPointer || '/'}: expected ${describeExpectation(error)}`,
      expected: describeExpectation(error),
      hint: hintFor(error),
    }
  })
}

export function contractError(file: string, problems: ContractProblem[]): GymError {
  const first = problems[0]
  const lines = problems.map((p) => `${p.file}${p.line ? `:${p.line}` : ''}: ${p.message}`)
  return new GymError(`recipe contract ${file} is invalid:\n  ${lines.join('\n  ')}`, {
    code: 'E_CONTRACT_INVALID',
    exit: ExitCode.usage,
    hint: first?.hint,
    location: {file, line: first?.line ?? undefined, pointer: first?.pointer},
    details: {problems},
  })
}

/** Validate an in-memory contract (schema + invariants); returns problems, empty when valid. */
export function contractProblems(value: unknown, file = '<contract>', doc?: Document, lineCounter?: LineCounter): ContractProblem[] {
  if (!validateSchema(value)) return problemsFromSchema(validateSchema.errors ?? [], file, doc, lineCounter)
  return checkContractInvariants(value).map((v) => ({
    file,
    line: lineOfPointer(doc, lineCounter, v.pointer),
    pointer: v.pointer,
    message: `${v.pointer}: ${v.message}`,
    expected: v.expected,
    hint: v.hint,
  }))
}

export function assertValidContract(value: unknown, file = '<contract>'): RecipeContract {
  const problems = contractProblems(value, file)
  if (problems.length > 0) throw contractError(file, problems)
  return value as RecipeContract
}

/** Parse and validate recipe.yaml text; errors name the file, line and JSON pointer. */
export function parseContract(text: string, file: string): RecipeContract {
  const lineCounter = new LineCounter()
  const doc = parseDocument(text, {lineCounter, prettyErrors: true, uniqueKeys: true})
  if (doc.errors.length > 0) {
    const problems = doc.errors.map((e) => ({
      file,
      line: e.linePos?.[0]?.line ?? null,
      pointer: '/',
      message: `YAML syntax: ${e.message.split('\n')[0]}`,
      expected: 'valid YAML',
      hint: 'Fix the YAML syntax at the line shown.',
    }))
    throw contractError(file, problems)
  }
  const value = yamlValue(doc, file)
  const problems = contractProblems(value, file, doc, lineCounter)
  if (problems.length > 0) throw contractError(file, problems)
  return value as RecipeContract
}

export async function loadContractFile(file: string): Promise<RecipeContract> {
  let text: string
  try {
    text = await fsp.readFile(file, 'utf8')
  } catch (error) {
    throw new GymError(`cannot read recipe contract ${file}: ${codeOf(error) ?? messageOf(error)}`, {
      code: 'E_CONTRACT_MISSING',
      exit: ExitCode.usage,
      hint: 'Create the recipe with `gymrecipe new <recipe>`, or pass --relax-root pointing at the Relax checkout that holds it.',
      location: {file},
    })
  }
  return parseContract(text, file)
}
