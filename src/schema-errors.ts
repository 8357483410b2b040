/**
 * Schema errors of a user's YAML file (recipe.yaml, a call config, a task spec) in one wording:
 * which field (a JSON pointer and its path), what was expected, and the line it is on. Each
 * reader adds its own hints; the sentence for a given Ajv keyword is the same everywhere.
 */
import type {ErrorObject} from 'ajv'
import {isMap, isScalar, isSeq, type Document, type LineCounter, type Node} from 'yaml'

export type FieldPath = Array<string | number>

export interface SchemaProblem {
  /** JSON pointer of the field ('' for the whole document). */
  pointer: string
  path: FieldPath
  /** What the field must be, e.g. `is required`, `must be one of "a", "b"`. */
  expected: string
  /** The Ajv error it came from, for a reader's own hint. */
  error: ErrorObject
}

export function pointerPath(pointer: string): FieldPath {
  if (pointer === '' || pointer === '/') return []
  return pointer
    .slice(1)
    .split('/')
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
    .map((part) => (/^\d+$/.test(part) ? Number(part) : part))
}

function pointerOf(path: FieldPath): string {
  return path.map((part) => `/${String(part).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('')
}

/** `messages[0].role`: a path as a person writes it. */
export function fieldName(path: FieldPath): string {
  return path.map((part, i) => (typeof part === 'number' ? `[${part}]` : i === 0 ? part : `.${part}`)).join('')
}

function param(error: ErrorObject, name: string): unknown {
  return (error.params as Record<string, unknown>)[name]
}

/** The field an error is about: a missing or unknown key is named inside its parent. */
function fieldOf(error: ErrorObject): FieldPath {
  const base = pointerPath(error.instancePath)
  if (error.keyword === 'required') return [...base, String(param(error, 'missingProperty'))]
  if (error.keyword === 'additionalProperties') return [...base, String(param(error, 'additionalProperty'))]
  if (error.keyword === 'propertyNames') return [...base, String(param(error, 'propertyName'))]
  return base
}

/** What a failing keyword expected, as the end of a sentence that starts with the field. */
function expectation(error: ErrorObject): string {
  // A schema may say in words what a value must be (`description`): that beats a keyword's own sentence.
  const description = (error.parentSchema as {description?: unknown} | undefined)?.description
  if (typeof description === 'string' && ['type', 'const', 'enum', 'format', 'pattern'].includes(error.keyword)) return `must be ${description}`
  switch (error.keyword) {
    case 'required':
      return 'is required'
    case 'additionalProperties': {
      const known = Object.keys((error.parentSchema as {properties?: object} | undefined)?.properties ?? {})
      return known.length > 0 ? `is not a known field here (known: ${known.join(', ')})` : 'is not a known field here'
    }
    case 'propertyNames':
      return 'is not a valid name here'
    case 'enum':
      return `must be one of ${(param(error, 'allowedValues') as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`
    case 'const':
      return `must be exactly ${JSON.stringify(param(error, 'allowedValue'))}`
    case 'type':
      return `must be of type ${String(param(error, 'type'))}`
    case 'pattern':
      return `must match ${String(param(error, 'pattern'))}`
    case 'format':
      return `must be a ${String(param(error, 'format'))}`
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return `must be ${String(param(error, 'comparison'))} ${String(param(error, 'limit'))}`
    case 'minItems':
      return `must have at least ${String(param(error, 'limit'))} item(s)`
    case 'maxItems':
      return `must have at most ${String(param(error, 'limit'))} item(s)`
    case 'minLength':
      return Number(param(error, 'limit')) === 1 ? 'must not be empty' : `must be at least ${String(param(error, 'limit'))} characters`
    case 'maxLength':
      return `must be at most ${String(param(error, 'limit'))} characters`
    case 'uniqueItems':
      return 'must not hold duplicate items'
    default:
      return typeof description === 'string' ? `must be ${description}` : `is invalid (${error.message ?? error.keyword})`
  }
}

/**
 * One problem per field, most specific first: anyOf/oneOf/if errors only where no branch said
 * more, unknown fields and wrong types before the rest. `wording` overrides the sentence for
 * errors a reader can say better (e.g. a named format).
 */
export function schemaProblems(errors: readonly ErrorObject[], wording: (error: ErrorObject) => string | undefined = () => undefined): SchemaProblem[] {
  const combinators = new Set(['anyOf', 'oneOf', 'if'])
  const all = errors.map((error) => ({error, path: fieldOf(error)}))
  const specific = all.filter((e) => !combinators.has(e.error.keyword))
  const general = all.filter((e) => combinators.has(e.error.keyword) && !specific.some((s) => pointerOf(s.path).startsWith(pointerOf(e.path))))
  const rank = (keyword: string) => {
    const i = ['additionalProperties', 'type', 'required'].indexOf(keyword)
    return i === -1 ? 3 : i
  }
  const seen = new Set<string>()
  const problems: SchemaProblem[] = []
  for (const {error, path} of [...specific.sort((a, b) => rank(a.error.keyword) - rank(b.error.keyword)), ...general]) {
    const pointer = pointerOf(path)
    const expected = wording(error) ?? expectation(error)
    const key = `${pointer}\u0000${expected}`
    if (seen.has(key)) continue
    seen.add(key)
    problems.push({pointer, path, expected, error})
  }
  return problems
}

/**
 * 1-based line of a field in a parsed YAML document: the key's line for a mapping entry, an
 * item's line in a sequence; for a field that is not there, the line of its deepest parent.
 */
export function yamlLineOf(doc: Document, lineCounter: LineCounter, path: FieldPath): number {
  let node: unknown = doc.contents
  let offset = (doc.contents as Node | null)?.range?.[0] ?? 0
  for (const part of path) {
    if (isMap(node)) {
      const pair = node.items.find((item) => isScalar(item.key) && String(item.key.value) === String(part))
      if (!pair) break
      offset = (pair.key as Node).range?.[0] ?? offset
      node = pair.value
    } else if (isSeq(node) && typeof part === 'number' && node.items[part]) {
      node = node.items[part]
      offset = (node as Node).range?.[0] ?? offset
    } else {
      break
    }
  }
  return lineCounter.linePos(offset).line
}
