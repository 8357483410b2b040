// Run by `npm run build` after tsc: writes dist/generated/ with the JSON Schema validators as Ajv
// standalone code, the data rung's string skipper assembled from its WebAssembly text and the
// Handlebars templates precompiled, each with the hash of its source
// (src/precompiled.ts checks it and compiles instead when they differ).
import {_, Ajv} from 'ajv'
import standaloneCode from 'ajv/dist/standalone/index.js'
import Handlebars from 'handlebars'
import wabtInit from 'wabt'
import {mkdirSync, writeFileSync} from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const dist = path.join(repo, 'dist')
const out = path.join(dist, 'generated')
mkdirSync(out, {recursive: true})

const {contentHash} = await import(path.join(dist, 'precompiled.js'))
const {recipeSchema} = await import(path.join(dist, 'contract', 'schema.js'))
const {RECIPE_AJV_OPTIONS} = await import(path.join(dist, 'contract', 'load.js'))
const {TASK_SPEC_SCHEMA, TASK_SPEC_AJV_OPTIONS} = await import(path.join(dist, 'gym', 'tasks', 'spec.js'))
const {callConfigSchema, CALL_AJV_OPTIONS, CALL_CONFIG_FORMATS} = await import(path.join(dist, 'gym', 'call', 'config.js'))
const {STRING_SKIP_WAT} = await import(path.join(dist, 'ladder', 'data', 'string-skip-wat.js'))
const {readTemplateSources, TEMPLATE_OPTIONS} = await import(path.join(dist, 'scaffold', 'render.js'))

function validator(name, schema, options) {
  const ajv = new Ajv({...options, code: {source: true}})
  const code = standaloneCode(ajv, ajv.compile(schema))
  writeFileSync(path.join(out, `${name}.cjs`), `${code}\nmodule.exports.schemaHash = ${JSON.stringify(contentHash(JSON.stringify(schema)))};\n`)
}

/** A validator whose formats are passed in at run time: the module exports create(formats). */
function formatValidator(name, schema, options, formats) {
  const ajv = new Ajv({...options, code: {source: true, formats: _`formats`}})
  for (const [format, definition] of Object.entries(formats)) ajv.addFormat(format, definition)
  const code = standaloneCode(ajv, ajv.compile(schema))
  const create = `function create(formats) {\nconst module = {exports: {}};\n${code}\nreturn module.exports;\n}`
  writeFileSync(path.join(out, `${name}.cjs`), `"use strict";\n${create}\nmodule.exports = {create, schemaHash: ${JSON.stringify(contentHash(JSON.stringify(schema)))}};\n`)
}

validator('recipe-validator', recipeSchema, RECIPE_AJV_OPTIONS)
validator('task-spec-validator', TASK_SPEC_SCHEMA, TASK_SPEC_AJV_OPTIONS)
for (const kind of ['resource', 'harness']) formatValidator(`call-${kind}-validator`, callConfigSchema(kind), CALL_AJV_OPTIONS, CALL_CONFIG_FORMATS)

// The data rung's string skipper, assembled from its WebAssembly text.
const wabt = await wabtInit()
const wat = wabt.parseWat('string-skip.wat', STRING_SKIP_WAT, {simd: true})
wat.validate()
const {buffer: wasm} = wat.toBinary({})
wat.destroy()
writeFileSync(path.join(out, 'string-skip.cjs'), `module.exports = {sourceHash: ${JSON.stringify(contentHash(STRING_SKIP_WAT))}, wasm: ${JSON.stringify(Buffer.from(wasm).toString('base64'))}};\n`)

const sources = await readTemplateSources()
const specs = (entries) => `{${Object.entries(entries).map(([name, text]) => `${JSON.stringify(name)}: ${Handlebars.precompile(text, TEMPLATE_OPTIONS)}`).join(',\n')}}`
writeFileSync(path.join(out, 'templates.cjs'), `module.exports = {hash: ${JSON.stringify(sources.hash)},\npartials: ${specs(sources.partials)},\ntemplates: ${specs(sources.templates)}};\n`)
console.log(`precompiled: recipe, task-spec and call-config validators, the string skipper (${wasm.length} bytes of WebAssembly), ${Object.keys(sources.templates).length} templates and ${Object.keys(sources.partials).length} partials → dist/generated/`)
