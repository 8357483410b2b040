import type {ErrorObject} from 'ajv'
import {LineCounter, type Document} from 'yaml'

import {GymError, ExitCode} from '../errors.js'
import {INPUT_LIMITS, readInputText} from '../runtime/read-input.js'
import {checkContractInvariants} from './invariants.js'
import {recipeSchema} from './schema.js'
import type {RecipeContract} from './types.js'
import {ajvCompiler, schemaValidator} from '../precompiled.js'
import {pointerPath, schemaProblems, yamlLineOf} from '../schema-errors.js'
import {parseYamlDocument, yamlValue} from '../yaml-value.js'

export interface ContractProblem {
  file: string
  line: number | null
  pointer: string
  message: string
  expected: string
  hint: string
}

export const RECIPE_AJV_OPTIONS = {allErrors: true, strict: true, allowUnionTypes: true, verbose: true} as const
// Generated at build time; compiled here only when the build has none (or an older schema).
const validateSchema = schemaValidator<RecipeContract>('recipe-validator', recipeSchema, () => {
  return new (ajvCompiler())(RECIPE_AJV_OPTIONS).compile<RecipeContract>(recipeSchema)
})

function hintFor(error: ErrorObject): string {
  const p = error.params as Record<string, unknown>
  if (error.keyword === 'additionalProperties') return `Remove "${String(p.additionalProperty)}" or check its spelling.`
  if (error.keyword === 'pattern') return 'This value reaches shell scripts and paths, so only the characters the pattern shown allows are accepted.'
  if (error.keyword === 'required') return `Add "${String(p.missingProperty)}"; see the built-in recipes in recipes/ for complete examples.`
  return 'See the recipe contract reference in README.md.'
}

function lineOf(doc: Document | undefined, lineCounter: LineCounter | undefined, pointer: string): number | null {
  return doc && lineCounter ? yamlLineOf(doc, lineCounter, pointerPath(pointer)) : null
}

export function problemsFromSchema(errors: ErrorObject[], file: string, doc?: Document, lineCounter?: LineCounter): ContractProblem[] {
  return schemaProblems(errors).map((problem) => ({
    file,
    line: lineOf(doc, lineCounter, problem.pointer),
    pointer: problem.pointer || '/',
    message: `${problem.pointer || '/'} ${problem.expected}`,
    expected: problem.expected,
    hint: hintFor(problem.error),
  }))
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
  const validate = validateSchema()
  if (!validate(value)) return problemsFromSchema(validate.errors ?? [], file, doc, lineCounter)
  return checkContractInvariants(value).map((v) => ({
    file,
    line: lineOf(doc, lineCounter, v.pointer),
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
  const doc = parseYamlDocument(text, {lineCounter, prettyErrors: true, uniqueKeys: true})
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
  const text = await readInputText(file, {what: 'recipe.yaml', maxBytes: INPUT_LIMITS.recipeYaml, strictText: true, hint: 'Regenerate it with `gymrecipe new <recipe> --update`, or restore it from git.'})
  if (text === undefined) {
    throw new GymError(`cannot read recipe contract ${file}: ENOENT`, {
      code: 'E_CONTRACT_MISSING',
      exit: ExitCode.usage,
      hint: 'Create the recipe with `gymrecipe new <recipe>`, or pass --relax-root pointing at the Relax checkout that holds it.',
      location: {file},
    })
  }
  return parseContract(text, file)
}
