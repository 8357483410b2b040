// Run by `npm run build` after precompile, bundle and `oclif manifest`, in a process of its own
// (so the generated modules are what it loads): runs each generated module the way a command does
// (every built-in recipe validated and rendered, a sample config of each call kind and a task spec
// validated; oclif's bundle loading the CLI's config, every command's bundle and parsing flags;
// `new` and `call resource` run as users start them), then writes V8's code cache beside each,
// holding the functions those calls compiled (src/precompiled.ts uses a cache only for the exact
// source it was made from).
import {existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const dist = path.join(repo, 'dist')
const load = (file) => import(path.join(dist, file))

const precompiled = await load('precompiled.js')
const {listBuiltins, loadBuiltin} = await load('contract/builtin.js')
const {renderRecipe} = await load('scaffold/render.js')
const {parseCallConfig} = await load('gym/call/config.js')
const {taskSpecFrom} = await load('gym/tasks/spec.js')

for (const name of await listBuiltins()) await renderRecipe(await loadBuiltin(name))
parseCallConfig('name: executed\nendpoint: http://127.0.0.1:9\nroute: /execute\nrow_id_column: id\nrequest_columns: {sql: sql}\n', 'resource')
parseCallConfig('name: answer\nevidence_column: harness_evidence\nendpoint: http://127.0.0.1:9\nrow_id_column: id\nrequest_columns: {input: prompt}\n', 'harness')
taskSpecFrom({name: 'tasks', processor_type: 'gym', messages: [{role: 'user', content_column: 'prompt'}], task_columns: {ground_truth: 'answer'}})

const oclif = await load('oclif-core.js')
const config = await oclif.Config.load({root: repo})
// every command's bundle, as oclif loads one (from the manifest, which the build wrote before this)
for (const command of config.commands) await command.load()
const newCommand = await config.findCommand('new', {must: true}).load()
await oclif.Parser.parse(['recipe', '--gym-root', repo, '--dry-run'], {flags: newCommand.flags, args: newCommand.args, strict: true})

// The commands users start most, run once with their output discarded (`new` on the repository's
// Gym fixtures, when present), so their caches hold what a run compiles too.
const scratch = mkdtempSync(path.join(os.tmpdir(), 'gymrecipe-build-'))
const write = process.stdout.write
process.stdout.write = () => true
try {
  const gym = path.join(repo, 'test/fixtures/nemo-gym-snapshot')
  if (existsSync(gym)) {
    await config.runCommand('new', ['warm', '--gym-root', gym, '--gym-config', 'environments/calendar/config.yaml', '--relax-root', scratch, '--dry-run', '--json'])
  }
  const callConfig = path.join(scratch, 'call.yaml')
  const rows = path.join(scratch, 'rows.jsonl')
  writeFileSync(callConfig, 'name: executed\nendpoint: http://127.0.0.1:9\nroute: /execute\nrow_id_column: id\nrequest_columns: {sql: sql}\n')
  writeFileSync(rows, '{"id": "row-1", "sql": "select 1"}\n')
  await config.runCommand('call:resource', [rows, '--config', callConfig, '--dry-run', '--json'])
} finally {
  process.stdout.write = write
  rmSync(scratch, {recursive: true, force: true})
}

// and the chunks only a later step loads (execa, the Handlebars compiler, listr2's output), for
// their top level at least
const chunks = path.join(dist, 'bundles', 'chunks')
for (const chunk of readdirSync(chunks).filter((file) => file.endsWith('.cjs'))) {
  precompiled.loadCommonJs(path.join(chunks, chunk), {'#oclif-core': oclif, '#precompiled': precompiled})
}

const caches = precompiled.writeCodeCaches()
// One line: the files are listed with --verbose.
const total = caches.reduce((sum, {bytes}) => sum + bytes, 0)
console.log(`code cache: ${caches.length} modules, ${Math.round(total / 1024)} KB`)
if (process.argv.includes('--verbose')) for (const {file, bytes} of caches) console.log(`  ${path.relative(dist, file)} ${Math.round(bytes / 1024)} KB`)
