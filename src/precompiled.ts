/**
 * Code generated at build time (`npm run build` runs scripts/precompile.mjs): the recipe,
 * task-spec and call-config validators as Ajv standalone code, the data rung's string skipper as
 * WebAssembly and the templates precompiled by Handlebars, so no command compiles them on every
 * run. Each generated module carries the hash of what it was made from; when that differs from
 * the source in use (a template edited after the build), the caller compiles instead (the
 * string skipper: uses its JavaScript twin), so a stale build can be slower but never wrong.
 */
import type {FormatDefinition, ValidateFunction} from 'ajv'
import {createHash} from 'node:crypto'
import {existsSync} from 'node:fs'
import {createRequire} from 'node:module'
import {fileURLToPath} from 'node:url'

export function contentHash(text: string): string {
  return createHash('sha256').update(text).digest('hex')
}

/** The default export of dist/generated/<name>.cjs, or undefined when it was not generated. */
export function generatedModule(name: string): unknown {
  const file = fileURLToPath(new URL(`./generated/${name}.cjs`, import.meta.url))
  if (!existsSync(file)) return undefined
  // require, not import: an ESM import of CommonJS scans the whole file for its export names first.
  return createRequire(import.meta.url)(file) as unknown
}

/** The generated validator `name` when it was made from this schema, else `compile()`. */
export async function schemaValidator<T>(name: string, schema: object, compile: () => Promise<ValidateFunction<T>>): Promise<ValidateFunction<T>> {
  const generated = generatedModule(name)
  if (typeof generated === 'function' && (generated as {schemaHash?: unknown}).schemaHash === contentHash(JSON.stringify(schema))) return generated as ValidateFunction<T>
  return compile()
}

/**
 * The same for a schema with formats of its own, synchronously: the generated module exports
 * `create(formats)`, which builds the validator around the format definitions given here (so
 * their code is not copied into the build).
 */
export function formatValidator<T>(name: string, schema: object, formats: Record<string, FormatDefinition<string>>, compile: () => ValidateFunction<T>): ValidateFunction<T> {
  const generated = generatedModule(name) as {schemaHash?: unknown; create?: unknown} | undefined
  if (generated && typeof generated.create === 'function' && generated.schemaHash === contentHash(JSON.stringify(schema))) {
    return (generated.create as (f: typeof formats) => ValidateFunction<T>)(formats)
  }
  return compile()
}
