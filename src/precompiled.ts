/**
 * Code generated at build time (`npm run build` runs scripts/precompile.mjs): the recipe,
 * task-spec and call-config validators as Ajv standalone code, the data rung's string skipper as
 * WebAssembly and the templates precompiled by Handlebars, so no command compiles them on every
 * run. Each generated module carries the hash of what it was made from; when that differs from
 * the source in use (a template edited after the build), the caller compiles instead (the
 * string skipper: uses its JavaScript twin), so a stale build can be slower but never wrong.
 *
 * Beside each generated module, beside oclif's bundle (dist/oclif.cjs) and each command's
 * (dist/bundles/), the build leaves V8's code cache (`<file>.v8-cache`, written by
 * scripts/code-cache.mjs after running them on the built-in recipes, sample configs, the CLI's own
 * config and its most started commands, so it holds the functions those calls compiled): the first call of a 300 KB validator then costs under a millisecond instead of
 * compiling it. Node 20 keeps no code cache for ES modules or `require`, hence loadCommonJs.
 * A cache is used only for the exact source it was made from and only whole (it is headed by the
 * sha256 of the source and of its own bytes: V8 checks neither, only the source's length), and V8
 * itself refuses one made by another V8 version or with other flags (NODE_OPTIONS included);
 * either way the module is compiled as usual.
 */
import type {FormatDefinition, ValidateFunction} from 'ajv'
import {createHash} from 'node:crypto'
import {existsSync, readFileSync, writeFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import path from 'node:path'
import vm from 'node:vm'

import {builtFile} from './package-root.js'

/** sha256 in hex, of text or of bytes (a file's bytes hash in half the time of its decoded text). */
export function contentHash(content: string | Uint8Array): string {
  return createHash('sha256').update(content).digest('hex')
}

const CODE_CACHE_SUFFIX = '.v8-cache'
const HASH_LENGTH = 64
const HEADER_LENGTH = 2 * HASH_LENGTH

/**
 * What loading a module did with its code cache: there was none, it was made from another source,
 * its bytes are damaged, V8 refused it, or it was used.
 */
export type CodeCacheUse = 'none' | 'stale' | 'damaged' | 'rejected' | 'used'

interface LoadedModule {
  /** sha256 of the file's bytes */
  sourceHash: string
  script: vm.Script
  /** `module` as the file sees it: its exports are what it last assigned */
  commonJs: {exports: unknown}
  codeCache: CodeCacheUse
}

/** The CommonJS files this process loaded through loadCommonJs, by path. */
const loaded = new Map<string, LoadedModule>()

function codeCacheOf(file: string, sourceHash: string): Buffer | 'none' | 'stale' | 'damaged' {
  let cache: Buffer
  try {
    cache = readFileSync(file + CODE_CACHE_SUFFIX)
  } catch {
    return 'none'
  }
  if (cache.length <= HEADER_LENGTH) return 'damaged'
  if (cache.toString('latin1', 0, HASH_LENGTH) !== sourceHash) return 'stale'
  const data = cache.subarray(HEADER_LENGTH)
  return cache.toString('latin1', HASH_LENGTH, HEADER_LENGTH) === contentHash(data) ? data : 'damaged'
}

/**
 * Runs a CommonJS file as `require` would (once per process), through a script compiled with the
 * code cache beside it when that was made from this very source. Its `require(name)` answers
 * `provided[name]` when given (a command's bundle gets the process's one oclif this way), a
 * relative name with that file loaded the same way (a bundle's chunks) and given the same, and
 * anything else as Node's would. The file sees one more name,
 * `importModule(specifier)`, for what it would `import()`: a script run this way may not call
 * `import()` itself (Node allows that only with an experimental flag, and never from a cached
 * compile), so the build rewrites oclif's `import()` calls to it (scripts/bundle.mjs).
 */
export function loadCommonJs(file: string, provided: Record<string, unknown> = {}): {exports: unknown; codeCache: CodeCacheUse} {
  let module = loaded.get(file)
  if (!module) {
    const bytes = readFileSync(file)
    const sourceHash = contentHash(bytes)
    const source = bytes.toString('utf8')
    const cache = codeCacheOf(file, sourceHash)
    const cachedData = typeof cache === 'string' ? undefined : cache
    const script = new vm.Script(`(function (exports, require, module, __filename, __dirname, importModule) {${source}\n})`, {filename: file, cachedData})
    const codeCache = typeof cache === 'string' ? cache : script.cachedDataRejected ? 'rejected' : 'used'
    const commonJs = {exports: {} as unknown}
    // known before it runs, as with require: a cycle of files gets the exports made so far
    module = {sourceHash, script, commonJs, codeCache}
    loaded.set(file, module)
    const wrapper = script.runInThisContext() as (...args: unknown[]) => void
    const importModule = (specifier: string): Promise<unknown> => import(specifier)
    const nodeRequire = createRequire(file)
    const require = (id: string): unknown => {
      if (Object.hasOwn(provided, id)) return provided[id]
      if (id.startsWith('./') || id.startsWith('../')) return loadCommonJs(path.resolve(path.dirname(file), id), provided).exports
      return nodeRequire(id)
    }
    wrapper.call(commonJs.exports, commonJs.exports, require, commonJs, file, path.dirname(file), importModule)
  }
  return {exports: module.commonJs.exports, codeCache: module.codeCache}
}

/**
 * Writes the code cache of every file loadCommonJs ran so far (the build does, once they have
 * run on typical inputs), each headed by the sha256 of its source and of the cache; returns the
 * bytes per file.
 */
export function writeCodeCaches(): Array<{file: string; bytes: number}> {
  return [...loaded].map(([file, module]) => {
    const data = module.script.createCachedData()
    writeFileSync(file + CODE_CACHE_SUFFIX, Buffer.concat([Buffer.from(module.sourceHash + contentHash(data), 'latin1'), data]))
    return {file, bytes: data.length}
  })
}

/** The exports of dist/generated/<name>.cjs, or undefined when it was not generated. */
export function generatedModule(name: string): unknown {
  const file = builtFile(`generated/${name}.cjs`)
  if (file === undefined || !existsSync(file)) return undefined
  return loadCommonJs(file).exports
}

/** Ajv's compiler, for a validator the build did not generate; loaded only then: it is the slow part of start-up. */
export function ajvCompiler(): typeof import('ajv').Ajv {
  return (createRequire(import.meta.url)('ajv') as typeof import('ajv')).Ajv
}

/**
 * The generated validator `name` when it was made from this schema, else `compile()`; resolved on
 * first use, so importing a module that validates costs nothing until it does.
 */
export function schemaValidator<T>(name: string, schema: object, compile: () => ValidateFunction<T>): () => ValidateFunction<T> {
  let validate: ValidateFunction<T> | undefined
  return () => {
    if (!validate) {
      const generated = generatedModule(name)
      const fresh = typeof generated === 'function' && (generated as {schemaHash?: unknown}).schemaHash === contentHash(JSON.stringify(schema))
      validate = fresh ? (generated as ValidateFunction<T>) : compile()
    }
    return validate
  }
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
