// Run by `npm run build` after precompile, in a process of its own (so the generated modules are
// what it loads): runs each generated module the way a command does (every built-in recipe
// validated and rendered, a sample config of each call kind and a task spec validated), then
// writes V8's code cache beside it, holding the functions those calls compiled
// (src/precompiled.ts uses a cache only for the exact source it was made from).
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const dist = path.join(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..'), 'dist')
const load = (file) => import(path.join(dist, file))

const {writeCodeCaches} = await load('precompiled.js')
const {listBuiltins, loadBuiltin} = await load('contract/builtin.js')
const {renderRecipe} = await load('scaffold/render.js')
const {parseCallConfig} = await load('gym/call/config.js')
const {taskSpecFrom} = await load('gym/tasks/spec.js')

for (const name of await listBuiltins()) await renderRecipe(await loadBuiltin(name))
parseCallConfig('name: executed\nendpoint: http://127.0.0.1:9\nroute: /execute\nrow_id_column: id\nrequest_columns: {sql: sql}\n', 'resource')
parseCallConfig('name: answer\nevidence_column: harness_evidence\nendpoint: http://127.0.0.1:9\nrow_id_column: id\nrequest_columns: {input: prompt}\n', 'harness')
taskSpecFrom({name: 'tasks', processor_type: 'gym', messages: [{role: 'user', content_column: 'prompt'}], task_columns: {ground_truth: 'answer'}})

const caches = writeCodeCaches()
console.log(`code cache: ${caches.map(({file, bytes}) => `${path.basename(file, '.cjs')} ${Math.round(bytes / 1024)} KB`).join(', ')} → dist/generated/`)
