/**
 * The build precompiles the validators and templates (scripts/precompile.mjs): a built gymrecipe
 * renders and validates without loading the Ajv or Handlebars compilers, produces exactly what the
 * compilers produce, and falls back to compiling when what it was built from has changed.
 */
import {execa} from 'execa'
import {mkdir, mkdtemp, readFile, rm, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {describe, expect, it} from 'vitest'

import {loadBuiltin} from '../../src/contract/builtin.js'
import {parseCallConfig} from '../../src/gym/call/config.js'
import {renderRecipe} from '../../src/scaffold/render.js'
import {repoRoot} from '../helpers/cli.js'

const dist = path.join(repoRoot, 'dist')

/** Run a snippet against the built modules; prints JSON. */
async function inBuild(body: string, nodeFlags: string[] = []): Promise<any> {
  const script = `import {createRequire} from 'node:module'\nconst require = createRequire(${JSON.stringify(path.join(dist, 'index.js'))})\n${body}`
  const r = await execa(process.execPath, [...nodeFlags, '--input-type=module', '-e', script], {cwd: repoRoot})
  return JSON.parse(r.stdout)
}

describe('precompiled validators and templates', () => {
  it('a built gymrecipe renders and validates a recipe without loading either compiler, and renders what the compiler renders', async () => {
    const built = await inBuild(`
      const {renderRecipe} = await import(${JSON.stringify(path.join(dist, 'scaffold/render.js'))})
      const {loadBuiltin} = await import(${JSON.stringify(path.join(dist, 'contract/builtin.js'))})
      const {contractProblems} = await import(${JSON.stringify(path.join(dist, 'contract/load.js'))})
      const out = {}
      for (const b of ['calendar', 'workplace-assistant', 'r2e-gym']) {
        const c = await loadBuiltin(b)
        out[b] = {files: (await renderRecipe(c)).map((f) => [f.name, f.content]), problems: contractProblems(c).length, bad: contractProblems({...c, id: 'Bad Id'}).map((p) => p.pointer)}
      }
      const loaded = Object.keys(require.cache)
      out.compilers = loaded.filter((k) => /node_modules\\/(ajv\\/dist\\/(core|ajv|compile)|handlebars\\/(lib\\/index|dist\\/cjs\\/handlebars\\.js|dist\\/cjs\\/handlebars\\/compiler))/.test(k))
      out.runtime = loaded.some((k) => k.includes('handlebars/dist/cjs/handlebars.runtime.js'))
      console.log(JSON.stringify(out))`)
    expect(built.compilers).toEqual([])
    expect(built.runtime).toBe(true)
    for (const b of ['calendar', 'workplace-assistant', 'r2e-gym'] as const) {
      // The source tree has no generated code: these come from the compilers.
      const compiled = (await renderRecipe(await loadBuiltin(b))).map((f) => [f.name, f.content])
      expect(built[b].files).toEqual(compiled)
      expect(built[b].problems).toBe(0)
      expect(built[b].bad).toContain('/id')
    }
  })

  it('compiles instead when the schema is not the one the validator was generated from', async () => {
    const result = await inBuild(`
      const {schemaValidator} = await import(${JSON.stringify(path.join(dist, 'precompiled.js'))})
      const {recipeSchema} = await import(${JSON.stringify(path.join(dist, 'contract/schema.js'))})
      let compiled = 0
      const fake = () => { compiled++; return Object.assign(() => true, {errors: null}) }
      const validators = [
        schemaValidator('recipe-validator', recipeSchema, fake),
        schemaValidator('recipe-validator', {...recipeSchema, required: [...recipeSchema.required, 'extra']}, fake),
        schemaValidator('no-such-validator', recipeSchema, fake),
      ]
      const beforeUse = compiled
      for (const validator of validators) { validator(); validator() }
      console.log(JSON.stringify({beforeUse, compiled}))`)
    // Nothing is compiled until a validator is used, and each once; the unchanged schema uses the
    // generated validator, the changed one and a missing one compile.
    expect(result).toEqual({beforeUse: 0, compiled: 2})
  })

  it('a built gymrecipe validates call configs without the Ajv compiler, with the compiler\'s verdicts', async () => {
    const configs: Array<[string, 'resource' | 'harness']> = [
      ['name: execution\nendpoint: http://127.0.0.1:8000\nroute: /execute\nrequest_columns: {sql: candidate.sql}\n', 'resource'],
      ['name: x\nendpoint: ftp://host\nroute: nope\nrow_id_column: " a"\nmax_parallel_requests: 0\n', 'resource'],
      ['name: x\nendpoint: http://u:p@host\nroute: /execute\nsession: {initialize: [{route: /seed, response_headers: {"bad header": a..b}}]}\n', 'resource'],
      ['name: answer\nendpoint: http://127.0.0.1:8000\nevidence_column: evidence\nresponse_protocol: gym-episode\n', 'harness'],
      ['name: answer\nendpoint: http://127.0.0.1:8000\nevidence_column: evidence\nrequest_column: prompt\n', 'harness'],
    ]
    /** What parseCallConfig made of a config: the config, or the error's message and problems. */
    const verdictScript = (parse: string) => `
      const verdicts = []
      for (const [text, kind] of ${JSON.stringify(configs)}) {
        try {
          verdicts.push({config: JSON.parse(JSON.stringify(${parse}(text, kind)))})
        } catch (error) {
          verdicts.push({message: error.message, problems: error.details?.problems})
        }
      }`
    const built = await inBuild(`
      const {parseCallConfig} = await import(${JSON.stringify(path.join(dist, 'gym/call/config.js'))})
      ${verdictScript('parseCallConfig')}
      const compilers = Object.keys(require.cache).filter((k) => /node_modules\\/ajv\\/dist\\/(core|ajv|compile)/.test(k))
      console.log(JSON.stringify({verdicts, compilers}))`)
    expect(built.compilers).toEqual([])
    // The source tree has no generated code: parseCallConfig compiles the schema there.
    const compiled = configs.map(([text, kind]) => {
      try {
        return {config: JSON.parse(JSON.stringify(parseCallConfig(text, kind)))}
      } catch (error) {
        return {message: (error as Error).message, problems: (error as {details?: {problems?: unknown}}).details?.problems}
      }
    })
    expect(built.verdicts).toEqual(compiled)
    expect(compiled[0].config).toBeDefined()
    expect(compiled[4].config).toBeDefined()
    for (const k of [1, 2, 3]) expect(compiled[k].problems?.length).toBeGreaterThan(0)
    expect(JSON.stringify(compiled[1].problems)).toContain('/endpoint')
    expect(JSON.stringify(compiled[1].problems)).toContain('/row_id_column')
  })

  it('builds a call-config validator from its formats, and compiles instead for a changed or missing one', async () => {
    const result = await inBuild(`
      const {formatValidator} = await import(${JSON.stringify(path.join(dist, 'precompiled.js'))})
      const {callConfigSchema, CALL_CONFIG_FORMATS} = await import(${JSON.stringify(path.join(dist, 'gym/call/config.js'))})
      let compiled = 0
      const fake = () => { compiled++; return Object.assign(() => true, {errors: null}) }
      const schema = callConfigSchema('resource')
      const generated = formatValidator('call-resource-validator', schema, CALL_CONFIG_FORMATS, fake)
      // the formats passed in are the ones the generated code calls
      let dotPathCalls = 0
      const counting = {...CALL_CONFIG_FORMATS, 'dot-path': {type: 'string', validate: (v) => (dotPathCalls++, v === 'ok')}}
      const withCounting = formatValidator('call-resource-validator', schema, counting, fake)
      const verdicts = [
        withCounting({name: 'n', endpoint: 'http://h', route: '/r', row_id_column: 'ok'}),
        withCounting({name: 'n', endpoint: 'http://h', route: '/r', row_id_column: 'candidate.id'}),
      ]
      formatValidator('call-resource-validator', {...schema, required: ['name']}, CALL_CONFIG_FORMATS, fake)
      formatValidator('no-such-validator', schema, CALL_CONFIG_FORMATS, fake)
      console.log(JSON.stringify({compiled, generatedRejects: generated({}), verdicts, dotPathCalls}))`)
    expect(result.compiled).toBe(2)
    expect(result.generatedRejects).toBe(false)
    expect(result.verdicts).toEqual([true, false])
    expect(result.dotPathCalls).toBe(2)
  })

  it('a built gymrecipe scans JSONL with the string skipper it assembled, with the verdicts of the JavaScript path', async () => {
    const result = await inBuild(`
      const {writeFileSync, mkdtempSync, rmSync} = await import('node:fs')
      const {builtStringSkipper} = await import(${JSON.stringify(path.join(dist, 'ladder/data/string-skip.js'))})
      const {scanJsonlFile} = await import(${JSON.stringify(path.join(dist, 'ladder/data/jsonl-scan.js'))})
      const dir = mkdtempSync(${JSON.stringify(path.join(os.tmpdir(), 'gr-built-skip-'))})
      const file = dir + '/rows.jsonl'
      const rows = []
      for (let k = 0; k < 300; k++) rows.push(JSON.stringify({input: 'a "quoted" \\\\ text\\n'.repeat(k % 7), exp_cal_state: {k}}) + (k % 5 === 0 ? ',' : ''))
      rows.push('{"input": "bad \\\\q escape", "exp_cal_state": 1}', '{"input": "raw \t tab"}')
      writeFileSync(file, rows.join('\\n') + '\\n')
      const options = {fields: ['input', 'exp_cal_state'], maxProblems: 1000, chunkBytes: 64}
      const built = await scanJsonlFile(file, options)
      const plain = await scanJsonlFile(file, {...options, wasm: null})
      rmSync(dir, {recursive: true, force: true})
      console.log(JSON.stringify({assembled: builtStringSkipper() !== undefined, same: JSON.stringify(built) === JSON.stringify(plain), bad: built.badRows}))`)
    expect(result.assembled).toBe(true)
    expect(result.same).toBe(true)
    expect(result.bad).toBe(62)
  })

  it('the build was made from the templates in the checkout', async () => {
    const result = await inBuild(`
      const {readTemplateSources} = await import(${JSON.stringify(path.join(dist, 'scaffold/render.js'))})
      const generated = require(${JSON.stringify(path.join(dist, 'generated/templates.cjs'))})
      console.log(JSON.stringify({now: (await readTemplateSources()).hash, built: generated.hash}))`)
    expect(result.built).toBe(result.now)
  })

  it('a built gymrecipe loads its generated modules with the code cache the build made for them', async () => {
    const result = await inBuild(`
      const {generatedModule, loadCommonJs} = await import(${JSON.stringify(path.join(dist, 'precompiled.js'))})
      const names = ['recipe-validator', 'templates', 'call-resource-validator', 'call-harness-validator', 'task-spec-validator']
      for (const name of names) generatedModule(name)
      const uses = Object.fromEntries(names.map((name) => [name, loadCommonJs(${JSON.stringify(path.join(dist, 'generated'))} + '/' + name + '.cjs').codeCache]))
      // oclif, as bin/run.js starts it
      const oclif = await import(${JSON.stringify(path.join(dist, 'oclif-core.js'))})
      uses.oclif = loadCommonJs(${JSON.stringify(path.join(dist, 'oclif.cjs'))}).codeCache
      uses.oclifRuns = typeof oclif.execute === 'function' && typeof oclif.Command === 'function'
      // every command, as oclif imports it: its facade runs its bundle
      const {readdirSync} = await import('node:fs')
      const commands = readdirSync(${JSON.stringify(path.join(dist, 'commands'))}, {recursive: true, encoding: 'utf8'}).filter((file) => file.endsWith('.js'))
      uses.bundles = {}
      for (const file of commands) {
        const command = (await import(${JSON.stringify(path.join(dist, 'commands'))} + '/' + file)).default
        const bundle = ${JSON.stringify(path.join(dist, 'bundles'))} + '/' + file.slice(0, -'.js'.length) + '.cjs'
        uses.bundles[file] = command.prototype instanceof oclif.Command ? loadCommonJs(bundle).codeCache : 'not a command of this oclif'
      }
      // and their chunks, those a command loads later included
      const chunks = ${JSON.stringify(path.join(dist, 'bundles/chunks'))}
      for (const file of readdirSync(chunks).filter((file) => file.endsWith('.cjs'))) uses.bundles[file] = loadCommonJs(chunks + '/' + file, {'#oclif-core': oclif}).codeCache
      console.log(JSON.stringify(uses))`)
    const {bundles, ...modules} = result
    expect(modules).toEqual({'recipe-validator': 'used', templates: 'used', 'call-resource-validator': 'used', 'call-harness-validator': 'used', 'task-spec-validator': 'used', oclif: 'used', oclifRuns: true})
    expect(Object.keys(bundles).length).toBeGreaterThan(17)
    expect(Object.values(bundles).filter((use) => use !== 'used')).toEqual([])
  })

  it('hands a module what it is given for a name, its relative requires loaded the same way, and Node the rest', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'gr-code-cache-'))
    const file = path.join(dir, 'provided.cjs')
    try {
      await mkdir(path.join(dir, 'chunks'))
      await writeFile(file, 'exports.early = 1\nconst chunk = require("./chunks/a.cjs")\nmodule.exports = {given: require("#given").value, builtin: require("node:path").sep, chunk}\n')
      // a cycle back to the first file sees what it had exported so far; the chunk is given the same
      await writeFile(path.join(dir, 'chunks/a.cjs'), 'exports.sawEarly = require("../provided.cjs").early\nexports.given = require("#given").value\n')
      const result = await inBuild(`
        const {loadCommonJs} = await import(${JSON.stringify(path.join(dist, 'precompiled.js'))})
        const {exports} = loadCommonJs(${JSON.stringify(file)}, {'#given': {value: 42}})
        const chunk = loadCommonJs(${JSON.stringify(path.join(dir, 'chunks/a.cjs'))}).exports
        console.log(JSON.stringify({...exports, once: chunk === exports.chunk}))`)
      expect(result).toEqual({given: 42, builtin: '/', chunk: {sawEarly: 1, given: 42}, once: true})
    } finally {
      await rm(dir, {recursive: true, force: true})
    }
  })

  it('uses a code cache only for the source it was made from, whole, and runs the source whatever the cache holds', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'gr-code-cache-'))
    const file = path.join(dir, 'answer.cjs')
    const cacheFile = `${file}.v8-cache`
    const load = (write = false, nodeFlags: string[] = []) =>
      inBuild(
        `
      const {loadCommonJs, writeCodeCaches} = await import(${JSON.stringify(path.join(dist, 'precompiled.js'))})
      const {exports, codeCache} = loadCommonJs(${JSON.stringify(file)})
      const answer = await exports.answer()
      ${write ? 'writeCodeCaches()' : ''}
      console.log(JSON.stringify({answer, codeCache}))`,
        nodeFlags,
      )
    try {
      // import() through the loader's importModule works from a cached compile too
      await writeFile(file, 'module.exports.answer = async () => (await importModule("node:path")).basename("/x/AAA")\n')
      expect(await load(true)).toEqual({answer: 'AAA', codeCache: 'none'})
      expect(await load()).toEqual({answer: 'AAA', codeCache: 'used'})
      // Same length, other code: V8 alone would take the old cache for it.
      await writeFile(file, 'module.exports.answer = async () => (await importModule("node:path")).basename("/x/BBB")\n')
      expect(await load()).toEqual({answer: 'BBB', codeCache: 'stale'})
      await writeFile(file, 'module.exports.answer = async () => (await importModule("node:path")).basename("/x/AAA")\n')
      const cache = await readFile(cacheFile)
      const damaged = Buffer.from(cache)
      damaged[damaged.length - 9] ^= 0x5a
      await writeFile(cacheFile, damaged)
      expect(await load()).toEqual({answer: 'AAA', codeCache: 'damaged'})
      await writeFile(cacheFile, cache.subarray(0, 100))
      expect(await load()).toEqual({answer: 'AAA', codeCache: 'damaged'})
      // Made by a process with other V8 flags: whole and of this source, and V8 refuses it.
      await rm(cacheFile)
      await load(true, ['--no-opt'])
      expect(await load()).toEqual({answer: 'AAA', codeCache: 'rejected'})
    } finally {
      await rm(dir, {recursive: true, force: true})
    }
  })
})
