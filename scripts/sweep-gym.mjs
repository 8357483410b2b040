#!/usr/bin/env node
/**
 * How many environments of a NeMo Gym checkout gymrecipe turns into a recipe, as a new user
 * would try it: `gymrecipe new <id> --gym-config <config>` for every config under
 * environments/*\/config.yaml, resources_servers/*\/configs/*.yaml and benchmarks/*\/config.yaml;
 * where a config declares no train split, again with `--data <its agent's example rows>`. With
 * --static, the static rung then runs on every recipe made. Prints a table of outcomes by reason.
 *
 *   npm run build && node scripts/sweep-gym.mjs --gym-root ~/Gym [--static] [--json] [--jobs 8]
 *
 * Nothing is written outside a temporary Relax checkout, which is removed at the end.
 */
import {execFile} from 'node:child_process'
import {cp, mkdtemp, readdir, rm, stat} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import {parseArgs} from 'node:util'

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const {values} = parseArgs({options: {'gym-root': {type: 'string'}, static: {type: 'boolean', default: false}, json: {type: 'boolean', default: false}, jobs: {type: 'string', default: String(Math.max(2, os.cpus().length))}}})
if (!values['gym-root']) {
  console.error('usage: node scripts/sweep-gym.mjs --gym-root <NeMo Gym checkout> [--static] [--json] [--jobs N]')
  process.exit(2)
}
const gym = path.resolve(values['gym-root'])

function cli(args) {
  return new Promise((resolve) => {
    execFile(process.execPath, [path.join(repo, 'bin/run.js'), ...args], {env: {...process.env, NO_COLOR: '1', DOCKER_HOST: 'unix:///nonexistent/docker.sock'}, maxBuffer: 64 << 20, timeout: 300_000}, (error, stdout) => {
      let doc
      try {
        doc = JSON.parse(stdout)
      } catch {
        doc = undefined
      }
      resolve({exit: error ? (typeof error.code === 'number' ? error.code : -1) : 0, doc})
    })
  })
}

async function configs() {
  const found = []
  const under = async (dir, pick) => (await readdir(path.join(gym, dir)).catch(() => [])).sort().flatMap(pick)
  for (const env of await under('environments', (d) => [`environments/${d}/config.yaml`])) found.push(env)
  for (const server of await readdir(path.join(gym, 'resources_servers')).catch(() => [])) {
    for (const file of (await readdir(path.join(gym, 'resources_servers', server, 'configs')).catch(() => [])).sort()) {
      if (/\.ya?ml$/.test(file)) found.push(`resources_servers/${server}/configs/${file}`)
    }
  }
  for (const bench of await under('benchmarks', (d) => [`benchmarks/${d}/config.yaml`])) found.push(bench)
  const exists = await Promise.all(found.map((f) => stat(path.join(gym, f)).then((s) => s.isFile(), () => false)))
  return found.filter((_, i) => exists[i])
}

/** The example rows of the config's agent, for a --data retry (absolute path), if the checkout has them. */
async function exampleRows(config) {
  const r = await cli(['inspect', '--gym-root', gym, '--gym-config', config, '--json'])
  const agents = r.doc?.result?.agents ?? []
  for (const agent of agents) {
    for (const ds of agent.datasets ?? []) {
      const file = ds.jsonl_fpath ? path.resolve(gym, ds.jsonl_fpath) : undefined
      if (file && (await stat(file).then((s) => s.isFile() && s.size > 0, () => false))) return file
    }
  }
  return undefined
}

async function sweep(config, index, relax) {
  const id = `sweep-${index}`
  const base = ['new', id, '--gym-root', gym, '--gym-config', config, '--relax-root', relax, '--json']
  let r = await cli(base)
  let withData = false
  if (r.exit !== 0 && /declares no train dataset/.test(r.doc?.error?.message ?? '')) {
    const rows = await exampleRows(config)
    if (rows) {
      withData = true
      r = await cli([...base, '--data', rows])
    }
  }
  const out = {config, withData, made: r.exit === 0, reason: r.exit === 0 ? null : `${r.doc?.error?.code ?? `exit ${r.exit}`}: ${(r.doc?.error?.message ?? '').split('\n')[0].replaceAll(gym, '<gym>').slice(0, 600)}`}
  if (out.made && values.static) {
    const v = await cli(['verify', id, '--level', 'static', '--relax-root', relax, '--gym-root', gym, '--json'])
    out.static = v.exit === 0 ? 'pass' : (v.doc?.error?.message ?? `exit ${v.exit}`).split('\n')[0].slice(0, 160)
  }
  return out
}

const relax = await mkdtemp(path.join(os.tmpdir(), 'gymrecipe-sweep-'))
try {
  await cp(path.join(repo, 'test/fixtures/relax-checkout/scripts/models'), path.join(relax, 'scripts/models'), {recursive: true})
  const all = await configs()
  const results = new Array(all.length)
  let next = 0
  const jobs = Math.max(1, Number(values.jobs))
  await Promise.all(Array.from({length: jobs}, async () => {
    while (next < all.length) {
      const i = next++
      results[i] = await sweep(all[i], i, relax)
      if (!values.json) process.stderr.write(`\r${results.filter(Boolean).length}/${all.length}`)
    }
  }))
  if (!values.json) process.stderr.write('\n')
  const byReason = new Map()
  for (const r of results) {
    const key = r.made ? (r.withData ? 'made, with --data <example rows>' : 'made') : r.reason.split(':')[0]
    byReason.set(key, (byReason.get(key) ?? 0) + 1)
  }
  const made = results.filter((r) => r.made).length
  const staticPassed = results.filter((r) => r.static === 'pass').length
  if (values.json) {
    console.log(JSON.stringify({gym_root: gym, configs: all.length, made, static_passed: values.static ? staticPassed : null, by_outcome: Object.fromEntries(byReason), results}, null, 2))
  } else {
    console.log(`${all.length} configs in ${gym}`)
    for (const [key, count] of [...byReason].sort((a, b) => b[1] - a[1])) console.log(`  ${String(count).padStart(4)}  ${key}`)
    console.log(`made: ${made} of ${all.length} (${((100 * made) / all.length).toFixed(1)}%)${values.static ? `; static rung passed: ${staticPassed}` : ''}`)
    const examples = new Map()
    for (const r of results) if (!r.made && !examples.has(r.reason.split(':')[0])) examples.set(r.reason.split(':')[0], r)
    for (const [code, r] of examples) console.log(`  e.g. ${code}: ${r.config}: ${r.reason.slice(code.length + 2)}`)
  }
} finally {
  await rm(relax, {recursive: true, force: true})
}
