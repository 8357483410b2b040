#!/usr/bin/env node
/**
 * How many environments of a NeMo Gym checkout gymrecipe turns into a recipe, as a new user
 * would try it: `gymrecipe new <id> --gym-config <config>` for every config under
 * environments/*\/config.yaml, resources_servers/*\/configs/*.yaml and benchmarks/*\/config.yaml;
 * where a config declares no train split, again with `--data <the example rows the refusal names>`. With
 * --static, the static rung then runs on every recipe made. Prints a table of outcomes by reason.
 *
 *   npm run build && node scripts/sweep-gym.mjs --gym-root ~/Gym [--static] [--json] [--jobs 8]
 *
 * Nothing is written outside a temporary folder of Relax checkouts (one per config), removed at the end.
 */
import {execFile} from 'node:child_process'
import {copyFile, cp, mkdir, mkdtemp, readdir, rm, stat} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import {parseArgs} from 'node:util'

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const {values} = parseArgs({options: {'gym-root': {type: 'string'}, static: {type: 'boolean', default: false}, data: {type: 'boolean', default: false}, json: {type: 'boolean', default: false}, jobs: {type: 'string', default: String(Math.max(2, os.cpus().length))}}})
if (!values['gym-root']) {
  console.error('usage: node scripts/sweep-gym.mjs --gym-root <NeMo Gym checkout> [--static] [--data] [--json] [--jobs N]')
  process.exit(2)
}
const gym = path.resolve(values['gym-root'])

function cli(args, env = {}) {
  return new Promise((resolve) => {
    // `new` and the static rung never need Docker; the data rung's shared-storage probe does.
    const docker = args[0] === 'verify' && args.includes('data') ? {} : {DOCKER_HOST: 'unix:///nonexistent/docker.sock'}
    execFile(process.execPath, [path.join(repo, 'bin/run.js'), ...args], {env: {...process.env, NO_COLOR: '1', ...docker, ...env}, maxBuffer: 64 << 20, timeout: 300_000}, (error, stdout) => {
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

async function sweep(config, index, scratch) {
  // A Relax checkout per config, as a user trying one environment has: 260 recipes in one checkout
  // would run out of free port blocks, which says nothing about any of them.
  const relax = path.join(scratch, String(index))
  await cp(path.join(repo, 'test/fixtures/relax-checkout/scripts/models'), path.join(relax, 'scripts/models'), {recursive: true})
  const id = `sweep-${index}`
  const base = ['new', id, '--gym-root', gym, '--gym-config', config, '--relax-root', relax, '--json']
  let r = await cli(base)
  let withData = false
  if (r.exit !== 0 && /declares no train dataset/.test(r.doc?.error?.message ?? '')) {
    // The refusal names the checkout's example rows for this agent, as it does for a user.
    const rows = r.doc?.error?.details?.example_rows
    if (rows) {
      withData = true
      r = await cli([...base, '--data', rows])
    }
  }
  const out = {config, withData, made: r.exit === 0, verifier: r.exit === 0 ? r.doc.result.contract.verifier.kind : null, reason: r.exit === 0 ? null : `${r.doc?.error?.code ?? `exit ${r.exit}`}: ${(r.doc?.error?.message ?? '').split('\n')[0].replaceAll(gym, '<gym>').slice(0, 600)}`}
  if (out.made && values.static) {
    const v = await cli(['verify', id, '--level', 'static', '--relax-root', relax, '--gym-root', gym, '--json'])
    out.static = v.exit === 0 ? 'pass' : (v.doc?.error?.message ?? `exit ${v.exit}`).split('\n')[0].slice(0, 160)
  }
  if (out.made && values.data) Object.assign(out, await dataRung(id, r.doc.result.contract, relax))
  return out
}

/**
 * The data rung on the rows prepare would publish: the --data file itself, or for a recipe on
 * the config's own train split (downloaded by prepare, not here) the checkout's example rows
 * standing in for it. The file is placed at a raw path named as recipe.yaml says.
 */
async function dataRung(id, contract, relax) {
  const source = contract.data.source
  const rows = source.type === 'file' ? source.path : await standInRows(contract)
  if (!rows) return {data: 'no rows here to check (the train split is downloaded by prepare)', data_rows: null}
  const dir = path.join(relax, 'shared-data', id)
  await mkdir(dir, {recursive: true})
  const raw = path.join(dir, contract.data.raw_filename)
  await copyFile(rows, raw)
  const v = await cli(['verify', id, '--level', 'data', '--relax-root', relax, '--gym-root', gym, '--json'], {NEMO_GYM_SOURCE_DATA: raw})
  const failed = (v.doc?.result?.rungs ?? []).flatMap((rung) => (rung.checks ?? []).filter((c) => c.status !== 'pass'))
  const standIn = source.type !== 'file'
  // A handful of example rows cannot fill a rollout step of the real train split they stand in for.
  const onlyRowCount = standIn && failed.length > 0 && failed.every((c) => c.id === 'data.enough-rows')
  const data = v.exit === 0 ? 'pass' : onlyRowCount ? 'pass-stand-in' : (failed.map((c) => `${c.id}: ${c.status}: ${c.message}`)[0] ?? v.doc?.error?.message ?? `exit ${v.exit}`).split('\n')[0].slice(0, 200)
  return {data, data_rows: standIn ? 'example rows standing in for the train split' : '--data file'}
}

async function standInRows(contract) {
  const implementation = contract.gym.resources_server?.implementation
  const file = implementation ? path.join(gym, 'resources_servers', implementation, 'data', 'example.jsonl') : undefined
  return file && (await stat(file).then((s) => s.isFile() && s.size > 0, () => false)) ? file : undefined
}

const relax = await mkdtemp(path.join(os.tmpdir(), 'gymrecipe-sweep-'))
try {
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
    const key = r.made ? `${r.withData ? 'made, with --data <example rows>' : 'made'}${r.verifier === 'pending' ? ', verifier pending' : ''}` : r.reason.split(':')[0]
    byReason.set(key, (byReason.get(key) ?? 0) + 1)
  }
  const made = results.filter((r) => r.made).length
  const pending = results.filter((r) => r.verifier === 'pending').length
  const staticPassed = results.filter((r) => r.static === 'pass').length
  const dataPassed = results.filter((r) => r.data === 'pass').length
  const dataStandIn = results.filter((r) => r.data === 'pass-stand-in').length
  const withAgent = results.filter((r) => !/^E_NO_AGENT/.test(r.reason ?? '')).length
  if (values.json) {
    console.log(JSON.stringify({gym_root: gym, configs: all.length, with_agent: withAgent, made, verifier_pending: pending, static_passed: values.static ? staticPassed : null, data_passed: values.data ? dataPassed : null, data_passed_on_stand_in_rows: values.data ? dataStandIn : null, by_outcome: Object.fromEntries(byReason), results}, null, 2))
  } else {
    console.log(`${all.length} configs in ${gym}`)
    for (const [key, count] of [...byReason].sort((a, b) => b[1] - a[1])) console.log(`  ${String(count).padStart(4)}  ${key}`)
    console.log(`made: ${made} of ${all.length} (${((100 * made) / all.length).toFixed(1)}%); of the ${withAgent} that define an agent: ${((100 * made) / withAgent).toFixed(1)}%`)
    console.log(`  of which the verifier is pending (no example known; the service rung and train refuse until given): ${pending}; with examples: ${made - pending} (${((100 * (made - pending)) / withAgent).toFixed(1)}% of those with an agent)`)
    if (values.static) console.log(`static rung passed: ${staticPassed}`)
    if (values.data) {
      console.log(`data rung passed: ${dataPassed}; on example rows standing in for a train split every check but data.enough-rows passed: ${dataStandIn}`)
      const dataFailed = results.filter((r) => r.data && r.data !== 'pass' && r.data !== 'pass-stand-in')
      for (const r of dataFailed.slice(0, 20)) console.log(`  data: ${r.config}: ${r.data}`)
    }
    const examples = new Map()
    for (const r of results) if (!r.made && !examples.has(r.reason.split(':')[0])) examples.set(r.reason.split(':')[0], r)
    for (const [code, r] of examples) console.log(`  e.g. ${code}: ${r.config}: ${r.reason.slice(code.length + 2)}`)
  }
} finally {
  await rm(relax, {recursive: true, force: true})
}
