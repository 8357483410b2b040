/**
 * The keys of gymrecipe's --json documents are snake_case, like the NeMo Gym configs, Ray's job
 * API and the Gateway they sit beside; the code that builds them is camelCase TypeScript. The
 * conversion happens once, where a document is printed (`snakeCaseKeys`). Data carried inside a
 * document whose keys are not gymrecipe's own (a request body built from a user's row, a body a
 * service answered) is marked `verbatim` where it is put in, and printed exactly as it is.
 */

const kept = new WeakSet<object>()

/** Mark a value whose keys belong to someone else: snakeCaseKeys leaves it, and everything in it, as it is. */
export function verbatim<T>(value: T): T {
  if (value && typeof value === 'object') kept.add(value)
  return value
}

/** Whether a value was marked verbatim; a copy of it (e.g. with secrets redacted) should be marked too. */
export function isVerbatim(value: unknown): boolean {
  return Boolean(value) && typeof value === 'object' && kept.has(value as object)
}

const CAMEL = /^[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*$/

/** `dryRun` → `dry_run`, `gymURL` → `gym_url`; keys that are not lowerCamelCase (`HF_TOKEN`, `static.env-sh`) are kept. */
export function snakeCaseKey(key: string): string {
  if (!CAMEL.test(key)) return key
  return key
    .replaceAll(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replaceAll(/([A-Z])([A-Z][a-z])/g, '$1_$2')
    .toLowerCase()
}

/** A copy of a JSON-able value with every plain object's keys in snake_case (undefined properties dropped), verbatim values untouched. */
export function snakeCaseKeys<T>(value: T): T {
  return walk(value) as T
}

function walk(value: unknown): unknown {
  if (!value || typeof value !== 'object' || kept.has(value)) return value
  if (Array.isArray(value)) return value.map(walk)
  if (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null) return value
  const out: Record<string, unknown> = {}
  for (const [key, inner] of Object.entries(value)) {
    // As JSON.stringify does: a property that is undefined is not printed at all.
    if (inner === undefined) continue
    const name = snakeCaseKey(key)
    if (name !== key && Object.hasOwn(value, name)) throw new Error(`document has both ${key} and ${name}`)
    out[name] = walk(inner)
  }
  return out
}
