#!/usr/bin/env node
// Benchmark of the Gym task pipeline against a Python baseline, in one run:
//   - `gymrecipe rollouts ingest`: 1,000,000 rollouts joined onto 100,000 tasks
//     (and a quarter of the rollouts, to show memory follows the task table,
//     not the rollout count);
//   - `gymrecipe tasks export`: 1,000,000 scenario bundles (and a quarter of them, to show
//     memory does not follow the input).
// The baseline is python3 with the standard json module doing the same join and
// export, streaming line by line. Both run as fresh processes; wall time
// includes start-up. Peak RSS: the CLI's own maxRSS (reported by a preload on
// exit) and Python's ru_maxrss.
//
//   node bench/tasks.mjs                        # full size (needs ~3 GB in os.tmpdir())
//   GYMRECIPE_BENCH_SCALE=0.05 node bench/tasks.mjs   # quick run
//   node bench/tasks.mjs --base <checkout>      # also runs another build (before/after), same inputs
//
// Run `npm run build` first: the CLI is run from dist/ (without the oclif manifest the build
// writes, every command would load all the others at start-up).

import {spawn, spawnSync} from 'node:child_process'
import {createHash} from 'node:crypto'
import {createReadStream, createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const baseAt = process.argv.indexOf('--base')
const baseRoot = baseAt === -1 ? undefined : path.resolve(process.argv[baseAt + 1])
for (const root of [repoRoot, baseRoot]) {
  if (root && !existsSync(path.join(root, 'oclif.manifest.json'))) throw new Error(`${root} is not built: run \`npm run build\` there first`)
}
const scale = Number(process.env.GYMRECIPE_BENCH_SCALE ?? '1')
if (!(scale > 0)) throw new Error('GYMRECIPE_BENCH_SCALE must be a positive number')
const TASKS = Math.max(1, Math.round(100_000 * scale))
const ROLLOUTS = Math.max(1, Math.round(1_000_000 * scale))
const BUNDLES = Math.max(1, Math.round(1_000_000 * scale))

const work = mkdtempSync(path.join(os.tmpdir(), 'gymrecipe-bench-'))
const file = (name) => path.join(work, name)

// ---------------------------------------------------------------------------
// Input generation (deterministic).

function taskIndexOf(scenarioId) {
  return BigInt(`0x${createHash('sha256').update(scenarioId).digest('hex').slice(0, 15)}`)
}

function taskOf(i) {
  return {
    responses_create_params: {
      input: [
        {role: 'system', content: 'You are a careful assistant. Answer with a number.'},
        {role: 'user', content: `Question ${i}: what is ${i} + ${(i * 7) % 1000}? Réponse attendue ✓`},
      ],
      temperature: 1.0,
    },
    ground_truth: {answer: i + ((i * 7) % 1000), tolerance: 0.5},
    environment_name: 'bench_math',
  }
}

// JSON text with 60-bit integers and float spellings (1.0) kept, as Gym writes them.
function json(value) {
  return JSON.stringify(value, (_key, v) => (typeof v === 'bigint' ? `__big${v}` : v))
    .replace(/"__big(\d+)"/g, '$1')
    .replace(/"temperature":1(?=[,}])/g, '"temperature":1.0')
}

async function writeLines(target, count, lineOf) {
  const out = createWriteStream(target)
  let chunk = ''
  for (let i = 0; i < count; i++) {
    chunk += `${lineOf(i)}\n`
    if (chunk.length > 1 << 20) {
      if (!out.write(chunk)) await new Promise((resolve) => out.once('drain', resolve))
      chunk = ''
    }
  }
  out.end(chunk)
  await new Promise((resolve, reject) => out.on('finish', resolve).on('error', reject))
}

const scenarioIds = Array.from({length: TASKS}, (_, i) => `bench-${i.toString(16).padStart(16, '0')}`)
const indices = scenarioIds.map(taskIndexOf)

function exportedTaskLine(i) {
  const index = indices[i]
  return json({...taskOf(i), id: index, _ng_task_index: index, _dd_scenario_id: scenarioIds[i], _dd_provenance: {seed_id: i, source: 'bench'}})
}

function rolloutLine(n) {
  const i = (n * 7919) % TASKS
  const reward = n % 3 === 0 ? 0.0 : 1.0
  const text = `${json({
    responses_create_params: taskOf(i).responses_create_params,
    response: {
      id: `resp_${n.toString(16)}`,
      object: 'response',
      created_at: 1764000000 + n,
      model: 'policy',
      output: [{id: `msg_${n}`, type: 'message', role: 'assistant', status: 'completed', content: [{type: 'output_text', text: `The answer is ${i + ((i * 7) % 1000)}.`, annotations: []}]}],
      usage: {input_tokens: 61, output_tokens: 9, total_tokens: 70},
    },
    reward: `__reward`,
    _ng_task_index: indices[i],
    _ng_rollout_index: n % 4,
    agent_ref: {type: 'responses_api_agents', name: 'bench_simple_agent'},
  })}`
  return text.replace('"__reward"', reward === 0 ? '0.0' : '1.0')
}

function bundleLine(n) {
  return json({schema_version: '1', scenario_id: `bench-b${n}`, task: {...taskOf(n), agent_ref: null}, provenance: n % 2 === 0 ? {seed_id: n} : {}})
}

// ---------------------------------------------------------------------------
// Python baseline: the same join and export with the standard json module.

const PYTHON = String.raw`
import hashlib, json, os, resource, sys

def rows(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)

def ingest(tasks_path, rollouts_path, out_path):
    tasks = {}
    for task in rows(tasks_path):
        index = task["_ng_task_index"] if "_ng_task_index" in task else task.get("id")
        tasks[index] = task
    with open(out_path, "w", encoding="utf-8") as out:
        for record in rows(rollouts_path):
            task = tasks[record.get("_ng_task_index")]
            out.write(json.dumps({
                "scenario_id": task["_dd_scenario_id"],
                "task_index": record["_ng_task_index"],
                "rollout_index": record.get("_ng_rollout_index"),
                "status": "completed",
                "reward": record.get("reward"),
                "provenance": task.get("_dd_provenance") or {},
                "agent_ref": record["agent_ref"] if "agent_ref" in record else task.get("agent_ref"),
                "failure_class": record.get("_ng_failure_class"),
                "failure_terminal": record.get("_ng_failure_terminal", False),
                "failure_reason": record.get("failure_reason", record.get("_ng_failure_message")),
                "failure_stage": record.get("failure_stage", record.get("_ng_failure_stage")),
                "rollout_id": record.get("_ng_rollout_id"),
                "attempt": record.get("_ng_attempt_index"),
                "task_id": record.get("_ng_task_id"),
                "environment_server": record.get("_ng_environment_server"),
                "task": task,
                "rollout": record,
            }) + "\n")
        out.flush()
        os.fsync(out.fileno())

def export(bundles_path, out_path):
    with open(out_path, "w", encoding="utf-8") as out:
        for bundle in rows(bundles_path):
            scenario_id = bundle["scenario_id"]
            task = {k: v for k, v in bundle["task"].items() if v is not None}
            index = int(hashlib.sha256(scenario_id.encode("utf-8")).hexdigest()[:15], 16)
            if "id" not in task:
                task["id"] = index
            task["_ng_task_index"] = index
            task["_dd_scenario_id"] = scenario_id
            if bundle.get("provenance"):
                task["_dd_provenance"] = bundle["provenance"]
            out.write(json.dumps(task) + "\n")
        out.flush()
        os.fsync(out.fileno())

if sys.argv[1] == "ingest":
    ingest(*sys.argv[2:5])
else:
    export(*sys.argv[2:4])
usage = resource.getrusage(resource.RUSAGE_SELF)
with open("/proc/self/status") as status:
    hwm_kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
with open(sys.argv[-1], "w") as f:
    json.dump({"rss": hwm_kb * 1024, "cpu": usage.ru_utime + usage.ru_stime}, f)
`

// ---------------------------------------------------------------------------
// Running and measuring.

// Preloaded into the CLI process: on exit, write its VmHWM and CPU time where the bench can read them.
const PROBE = `data:text/javascript,${encodeURIComponent(`
import {readFileSync, writeFileSync} from 'node:fs'
process.on('exit', () => {
  const hwmKb = Number(/VmHWM:\\s+(\\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1])
  const {userCPUTime, systemCPUTime} = process.resourceUsage()
  writeFileSync(process.env.BENCH_PROBE_FILE, JSON.stringify({rss: hwmKb * 1024, cpu: (userCPUTime + systemCPUTime) / 1e6}))
})`)}`

function run(command, args, env = {}) {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint()
    const child = spawn(command, args, {stdio: ['ignore', 'ignore', 'pipe'], env: {...process.env, ...env}})
    let stderr = ''
    child.stderr.on('data', (data) => (stderr += data))
    child.on('error', reject)
    child.on('close', (code) => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9
      if (code === 0) resolve(seconds)
      else reject(new Error(`${command} ${args.join(' ')} exited ${code}: ${stderr}`))
    })
  })
}

async function measure(command, args, probeFile, env) {
  rmSync(probeFile, {force: true})
  const seconds = await run(command, args, env)
  return {seconds, ...JSON.parse(readFileSync(probeFile, 'utf8'))}
}

function gymrecipe(args, root = repoRoot) {
  const probeFile = file('gymrecipe.probe')
  return measure(process.execPath, ['--import', PROBE, path.join(root, 'bin', 'run.js'), ...args], probeFile, {BENCH_PROBE_FILE: probeFile})
}

/** The base build on the same command, when --base is given: its figures and this build's ratio to it. */
async function againstBase(name, rows, ours, args) {
  if (!baseRoot) return
  const before = await gymrecipe(args, baseRoot)
  console.log(
    [
      `${name} (base)`.padEnd(30),
      `${rows.toLocaleString('en-US').padStart(10)} rows`,
      `base ${before.seconds.toFixed(2)}s (cpu ${before.cpu.toFixed(2)}s) ${mib(before.rss).padStart(6)} MB`,
      `this/base: time ${(ours.seconds / before.seconds).toFixed(2)} cpu ${(ours.cpu / before.cpu).toFixed(2)} RSS ${(ours.rss / before.rss).toFixed(2)}`,
    ].join(' | '),
  )
}

function python(args) {
  const probeFile = file('python.probe')
  return measure('python3', [file('baseline.py'), ...args, probeFile], probeFile)
}

async function countLines(target) {
  let lines = 0
  for await (const chunk of createReadStream(target)) {
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++
  }
  return lines
}

const mb = (bytes) => (bytes / 2 ** 20).toFixed(0)
const rate = (rows, seconds) => Math.round(rows / seconds).toLocaleString('en-US')

const mib = (bytes) => (bytes / 2 ** 20).toFixed(1)
const results = {}

async function report(name, rows, ours, theirs, outputs) {
  results[name] = {ours, theirs}
  const [ourOut, theirOut] = await Promise.all(outputs.map(countLines))
  if (ourOut !== rows || theirOut !== rows) throw new Error(`${name}: expected ${rows} output lines, got ${ourOut} (gymrecipe) and ${theirOut} (python)`)
  console.log(
    [
      name.padEnd(30),
      `${rows.toLocaleString('en-US').padStart(10)} rows`,
      `gymrecipe ${ours.seconds.toFixed(2)}s (cpu ${ours.cpu.toFixed(2)}s) ${rate(rows, ours.seconds).padStart(9)} rows/s ${mib(ours.rss).padStart(6)} MB`,
      `python ${theirs.seconds.toFixed(2)}s (cpu ${theirs.cpu.toFixed(2)}s) ${rate(rows, theirs.seconds).padStart(9)} rows/s ${mib(theirs.rss).padStart(6)} MB`,
      `gymrecipe/python: time ${(ours.seconds / theirs.seconds).toFixed(2)} cpu ${(ours.cpu / theirs.cpu).toFixed(2)} RSS ${(ours.rss / theirs.rss).toFixed(2)}`,
    ].join(' | '),
  )
}

try {
  console.log(`scale ${scale}: ${TASKS} tasks, ${ROLLOUTS} rollouts, ${BUNDLES} bundles in ${work}`)
  const quarter = Math.max(1, Math.round(ROLLOUTS / 4))
  await writeLines(file('tasks.jsonl'), TASKS, exportedTaskLine)
  await writeLines(file('rollouts.jsonl'), ROLLOUTS, rolloutLine)
  await writeLines(file('rollouts-quarter.jsonl'), quarter, rolloutLine)
  await writeLines(file('bundles.jsonl'), BUNDLES, bundleLine)
  const quarterBundles = Math.max(1, Math.round(BUNDLES / 4))
  await writeLines(file('bundles-quarter.jsonl'), quarterBundles, bundleLine)
  writeFileSync(file('baseline.py'), PYTHON)
  for (const name of ['tasks.jsonl', 'rollouts.jsonl', 'bundles.jsonl']) console.log(`  ${name}: ${mb(statSync(file(name)).size)} MB`)
  // the inputs go to disk before anything is timed, so the first run does not pay for writing back 1 GB of them
  spawnSync('sync', {stdio: 'inherit'})

  for (const [label, rollouts, rows] of [
    ['rollouts ingest', 'rollouts.jsonl', ROLLOUTS],
    ['rollouts ingest (1/4 rollouts)', 'rollouts-quarter.jsonl', quarter],
  ]) {
    const args = ['rollouts', 'ingest', '--tasks', file('tasks.jsonl'), '--rollouts', file(rollouts), '--output', file('ours-normalized.jsonl')]
    const ours = await gymrecipe(args)
    const theirs = await python(['ingest', file('tasks.jsonl'), file(rollouts), file('py-normalized.jsonl')])
    await report(label, rows, ours, theirs, [file('ours-normalized.jsonl'), file('py-normalized.jsonl')])
    await againstBase(label, rows, ours, args)
  }
  for (const [label, bundles, rows] of [
    ['tasks export', 'bundles.jsonl', BUNDLES],
    ['tasks export (1/4 bundles)', 'bundles-quarter.jsonl', quarterBundles],
  ]) {
    const args = ['tasks', 'export', file(bundles), '--output', file('ours-tasks.jsonl')]
    const ours = await gymrecipe(args)
    const theirs = await python(['export', file(bundles), file('py-tasks.jsonl')])
    await report(label, rows, ours, theirs, [file('ours-tasks.jsonl'), file('py-tasks.jsonl')])
    await againstBase(label, rows, ours, args)
  }
  const verdict = (met) => (met ? 'met' : 'NOT met')
  const ingest = results['rollouts ingest']
  const exported = results['tasks export']
  const exportedQuarter = results['tasks export (1/4 bundles)']
  const faster = (name) => results[name].theirs.seconds / results[name].ours.seconds
  console.log(`aim: ingest >= 3x python -> ${faster('rollouts ingest').toFixed(2)}x ${verdict(faster('rollouts ingest') >= 3)}`)
  console.log(`aim: ingest RSS <= python's -> ${mib(ingest.ours.rss)} against ${mib(ingest.theirs.rss)} MB ${verdict(ingest.ours.rss <= ingest.theirs.rss)}`)
  console.log(`aim: export >= 2x python -> ${faster('tasks export').toFixed(2)}x ${verdict(faster('tasks export') >= 2)}`)
  console.log(`aim: export RSS < 64 MB -> ${mib(exported.ours.rss)} MB (${mib(exportedQuarter.ours.rss)} MB for a quarter of the bundles) ${verdict(exported.ours.rss < 64 * 2 ** 20)}`)
} finally {
  rmSync(work, {recursive: true, force: true})
}
