#!/usr/bin/env node
// Benchmark of the data rung's row checks against a Python baseline, in one run.
//
// Input: a ~1 GB JSONL made of the real Calendar example rows (NeMo Gym snapshot) repeated,
// written to os.tmpdir() and deleted afterwards. Five contenders, each a fresh process, run
// in turn GYMRECIPE_BENCH_RUNS times (interleaved, so machine load hits them alike):
//   - gymrecipe: the data rung's streaming scan (scanJsonlFile from dist/, with the row sample
//     the conversion check uses): every line checked against the JSON grammar, UTF-8 validated,
//     every verifier field looked up in every row, robust row counts; over 64 MiB the file is
//     split between this thread and worker threads (up to 4, one per available core);
//   - gymrecipe 1 thr: the same scan on one thread, what to expect when the other cores are busy;
//   - node JSON.parse: the plain Node way the hand-written scanner must beat to earn its place:
//     the file read in 1 MiB chunks, split on newlines, each line decoded as strict UTF-8 and
//     given to JSON.parse, then the same object check and field lookups (one thread; it does not
//     hold the input policy: nesting depth, overflowing floats, duplicate keys);
//   - python3: the same per-line work with the standard json module (json.loads of each
//     non-blank line, object check, dot-path lookup of each verifier field);
//   - wc -l: newline counting only, the floor.
// Then a long-line case: one 48 MiB row (under the 64 MiB line limit) among normal rows, read by
// gymrecipe and by node JSON.parse, to show what each holds in memory for a pathological line.
// Throughput is measured inside each process (start-up excluded); peak RSS is the process's
// own maxRSS. The median of the runs is reported, with ratios against Python.
//
//   node bench/data-rung.mjs                              # ~1 GB
//   GYMRECIPE_BENCH_SCALE=0.05 node bench/data-rung.mjs   # ~50 MB quick run
//
// Run `npm run build` first: the scanner is imported from dist/.

import {spawn} from 'node:child_process'
import {closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const scale = Number(process.env.GYMRECIPE_BENCH_SCALE ?? '1')
if (!(scale > 0)) throw new Error('GYMRECIPE_BENCH_SCALE must be a positive number')
const runs = Math.max(1, Number(process.env.GYMRECIPE_BENCH_RUNS ?? '3'))
const TARGET_BYTES = Math.round(1024 * 1024 * 1024 * scale)
const FIELDS = ['responses_create_params.input', 'exp_cal_state']
const SOURCE_ROWS = path.join(repoRoot, 'test/fixtures/nemo-gym-snapshot/environments/calendar/data/example.jsonl')
const SCANNER = path.join(repoRoot, 'dist/ladder/data/parallel-scan.js')
if (!existsSync(SCANNER)) throw new Error('dist/ is missing: run `npm run build` first')

const work = mkdtempSync(path.join(os.tmpdir(), 'gymrecipe-bench-data-'))
const data = path.join(work, 'calendar_train.jsonl')
const cleanup = () => rmSync(work, {recursive: true, force: true})
process.on('exit', cleanup) // also after an uncaught error
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    cleanup()
    process.exit(130)
  })
}

/** Calendar rows repeated up to the target size, written in 8 MiB blocks. */
function generate() {
  const rows = readFileSync(SOURCE_ROWS, 'utf8').split('\n').filter((l) => l.trim() !== '')
  const block = Buffer.from(rows.join('\n') + '\n')
  const copies = Math.max(1, Math.floor((8 * 1024 * 1024) / block.length))
  const chunk = Buffer.concat(Array.from({length: copies}, () => block))
  const fd = openSync(data, 'w')
  let written = 0
  try {
    while (written < TARGET_BYTES) {
      const piece = written + chunk.length <= TARGET_BYTES ? chunk : block
      writeSync(fd, piece)
      written += piece.length
    }
  } finally {
    closeSync(fd)
  }
}

const NODE_SCAN = `
import {scanWithSample} from ${JSON.stringify(SCANNER)}
const started = performance.now()
const {stats, threads} = await scanWithSample(process.argv[1], {fields: ${JSON.stringify(FIELDS)}, threads: Number(process.argv[2]) || undefined})
const seconds = (performance.now() - started) / 1000
const missing = stats.missing.reduce((n, m) => n + m.rows, 0)
console.log(JSON.stringify({seconds, rows: stats.rows, bad: stats.badRows, missing, threads, maxRssKb: process.resourceUsage().maxRSS}))
`

const NODE_JSON_PARSE = `
import {createReadStream} from 'node:fs'
const fields = ${JSON.stringify(FIELDS)}.map((f) => f.split('.'))
const decoder = new TextDecoder('utf-8', {fatal: true})
let rows = 0, bad = 0, missing = 0
const handle = (bytes) => {
  let text
  try {
    text = decoder.decode(bytes)
  } catch {
    rows++
    bad++
    return
  }
  if (text.trim() === '') return
  rows++
  let row
  try {
    row = JSON.parse(text)
  } catch {
    bad++
    return
  }
  if (!row || typeof row !== 'object' || Array.isArray(row)) {
    bad++
    return
  }
  for (const parts of fields) {
    let node = row
    for (const part of parts) node = node && typeof node === 'object' ? node[part] : undefined
    if (node === undefined || node === null) missing++
  }
}
const started = performance.now()
let carry = Buffer.alloc(0)
for await (const chunk of createReadStream(process.argv[1], {highWaterMark: 1 << 20})) {
  const buf = carry.length > 0 ? Buffer.concat([carry, chunk]) : chunk
  let start = 0
  let newline
  while ((newline = buf.indexOf(10, start)) !== -1) {
    handle(buf.subarray(start, newline))
    start = newline + 1
  }
  carry = Buffer.from(buf.subarray(start))
}
if (carry.length > 0) handle(carry)
const seconds = (performance.now() - started) / 1000
console.log(JSON.stringify({seconds, rows, bad, missing, maxRssKb: process.resourceUsage().maxRSS}))
`

const PYTHON_SCAN = `
import json, resource, sys, time
path, fields = sys.argv[1], [f.split(".") for f in sys.argv[2].split(",")]
rows = bad = missing = 0
started = time.perf_counter()
with open(path, "rb") as handle:
    for raw in handle:
        line = raw.strip()
        if not line:
            continue
        rows += 1
        try:
            row = json.loads(line)
        except ValueError:  # invalid JSON or invalid UTF-8
            bad += 1
            continue
        if not isinstance(row, dict):
            bad += 1
            continue
        for parts in fields:
            node = row
            for part in parts:
                node = node.get(part) if isinstance(node, dict) else None
            if node is None:
                missing += 1
seconds = time.perf_counter() - started
print(json.dumps({"seconds": seconds, "rows": rows, "bad": bad, "missing": missing, "maxRssKb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
`

function runProcess(command, args) {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const child = spawn(command, args, {stdio: ['ignore', 'pipe', 'inherit']})
    let out = ''
    child.stdout.on('data', (chunk) => (out += chunk))
    child.on('error', reject)
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`${command} exited with ${code}`))
      else resolve({out, wallSeconds: (performance.now() - started) / 1000})
    })
  })
}

const contenders = {
  gymrecipe: async (file = data) => JSON.parse((await runProcess(process.execPath, ['--input-type=module', '-e', NODE_SCAN, file])).out),
  // what to expect when the other cores are busy: the same scan on this thread only
  'gymrecipe 1 thr': async (file = data) => JSON.parse((await runProcess(process.execPath, ['--input-type=module', '-e', NODE_SCAN, file, '1'])).out),
  'node JSON.parse': async (file = data) => JSON.parse((await runProcess(process.execPath, ['--input-type=module', '-e', NODE_JSON_PARSE, file])).out),
  python: async () => JSON.parse((await runProcess('python3', ['-c', PYTHON_SCAN, data, FIELDS.join(',')])).out),
  'wc -l': async () => {
    // Timed as a whole process (it starts in about a millisecond); RSS from GNU time when present.
    const time = existsSync('/usr/bin/time') ? ['/usr/bin/time', ['-f', '%M', 'wc', '-l', data]] : ['wc', ['-l', data]]
    const started = performance.now()
    const {out} = await new Promise((resolve, reject) => {
      const child = spawn(time[0], time[1], {stdio: ['ignore', 'pipe', 'pipe']})
      let stdout = ''
      let stderr = ''
      child.stdout.on('data', (c) => (stdout += c))
      child.stderr.on('data', (c) => (stderr += c))
      child.on('error', reject)
      child.on('close', () => resolve({out: {stdout, stderr}}))
    })
    const seconds = (performance.now() - started) / 1000
    const rss = Number(out.stderr.trim().split('\n').at(-1))
    return {seconds, rows: Number(out.stdout.trim().split(/\s+/)[0]), maxRssKb: Number.isFinite(rss) ? rss : null}
  },
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}

async function main() {
  console.log(`data rung benchmark: generating ~${(TARGET_BYTES / 1e6).toFixed(0)} MB of Calendar rows in ${work}`)
  generate()
  const bytes = statSync(data).size
  // Warm the page cache so every contender reads from memory.
  await new Promise((resolve) => spawn('cat', [data], {stdio: ['ignore', 'ignore', 'inherit']}).on('close', resolve))
  const results = Object.fromEntries(Object.keys(contenders).map((name) => [name, []]))
  for (let run = 1; run <= runs; run++) {
    for (const [name, measure] of Object.entries(contenders)) {
      const r = await measure()
      results[name].push(r)
      console.log(`  run ${run}/${runs} ${name.padEnd(15)} ${(bytes / r.seconds / 1e6).toFixed(0).padStart(6)} MB/s  ${r.maxRssKb ? `${(r.maxRssKb / 1024).toFixed(0)} MB RSS` : ''}`)
    }
  }
  const rowsSeen = new Set(Object.values(results).map((rs) => rs[0].rows))
  if (rowsSeen.size !== 1) throw new Error(`contenders disagree on the row count: ${JSON.stringify(Object.fromEntries(Object.entries(results).map(([k, v]) => [k, v[0].rows])))}`)
  for (const name of ['gymrecipe', 'gymrecipe 1 thr', 'node JSON.parse', 'python']) {
    const r = results[name][0]
    if (r.bad !== 0 || r.missing !== 0) throw new Error(`${name} found ${r.bad} bad rows and ${r.missing} missing fields in valid data`)
  }
  const rows = results.gymrecipe[0].rows
  const summary = Object.fromEntries(
    Object.entries(results).map(([name, rs]) => {
      const seconds = median(rs.map((r) => r.seconds))
      const rss = rs.every((r) => r.maxRssKb) ? Math.max(...rs.map((r) => r.maxRssKb)) / 1024 : null
      return [name, {seconds, mbPerSecond: bytes / seconds / 1e6, rowsPerSecond: rows / seconds, peakRssMb: rss}]
    }),
  )
  const python = summary.python
  console.log(`\n${(bytes / 1e6).toFixed(0)} MB, ${rows} rows (Calendar example rows repeated), median of ${runs} run(s):`)
  console.log(`${'contender'.padEnd(17)}${'MB/s'.padStart(8)}${'rows/s'.padStart(11)}${'peak RSS'.padStart(11)}${'vs python'.padStart(11)}`)
  for (const [name, s] of Object.entries(summary)) {
    const rss = s.peakRssMb === null ? 'n/a' : `${s.peakRssMb.toFixed(0)} MB`
    console.log(`${name.padEnd(17)}${s.mbPerSecond.toFixed(0).padStart(8)}${s.rowsPerSecond.toFixed(0).padStart(11)}${rss.padStart(11)}${`${(s.mbPerSecond / python.mbPerSecond).toFixed(2)}x`.padStart(11)}`)
  }
  const ours = summary.gymrecipe
  const plain = summary['node JSON.parse']
  const aims = [
    `throughput ${(ours.mbPerSecond / python.mbPerSecond).toFixed(2)}x python (aim >= 3x)`,
    `${(summary['gymrecipe 1 thr'].mbPerSecond / python.mbPerSecond).toFixed(2)}x python on one thread`,
    `${(ours.mbPerSecond / plain.mbPerSecond).toFixed(2)}x node JSON.parse`,
    `peak RSS ${ours.peakRssMb.toFixed(0)} MB (aim < 100 MB; JSON.parse ${plain.peakRssMb.toFixed(0)} MB)`,
  ]
  console.log(`\ngymrecipe: ${aims.join(', ')}`)
  const longLine = await longLineCase()
  console.log(JSON.stringify({bytes, rows, runs, summary, longLine}))
}

/** One 48 MiB row among normal ones: the peak RSS of the scanner and of JSON.parse on it. */
async function longLineCase() {
  const file = path.join(work, 'long_line.jsonl')
  const rows = readFileSync(SOURCE_ROWS, 'utf8').split('\n').filter((l) => l.trim() !== '')
  const big = JSON.parse(rows[0])
  big.padding = 'x'.repeat(48 * 1024 * 1024)
  const fd = openSync(file, 'w')
  try {
    writeSync(fd, `${rows.join('\n')}\n${JSON.stringify(big)}\n${rows.join('\n')}\n`)
  } finally {
    closeSync(fd)
  }
  const out = {}
  for (const name of ['gymrecipe', 'node JSON.parse']) {
    const r = await contenders[name](file)
    if (r.bad !== 0 || r.missing !== 0) throw new Error(`${name} found ${r.bad} bad rows on the long-line file`)
    out[name] = {seconds: r.seconds, peakRssMb: r.maxRssKb / 1024}
  }
  console.log(`\nlong line (${(statSync(file).size / 1e6).toFixed(0)} MB file, one 48 MiB row): peak RSS gymrecipe ${out.gymrecipe.peakRssMb.toFixed(0)} MB, node JSON.parse ${out['node JSON.parse'].peakRssMb.toFixed(0)} MB`)
  rmSync(file, {force: true})
  return out
}

try {
  await main()
} finally {
  cleanup()
}
