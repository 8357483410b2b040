#!/usr/bin/env node
/**
 * Benchmark of `gymrecipe call resource` against a bare concurrent HTTP client.
 *
 *   npm run build && node bench/call.mjs [--rows 10000] [--repeat 3] [--concurrency 1,32] [--base <checkout>] [--no-floor] [--no-httpx] [--httpx-rows 1000]
 *
 * Starts the call test service (test/fixtures/call/serve.ts, its own process,
 * 127.0.0.1, OS-chosen port) whose /execute answers at once, then for each
 * max_parallel_requests (1 and 32 by default) measures, each run in a fresh
 * process and the variants interleaved so they share the machine's noise:
 *   bare       node:http with one keep-alive agent (maxSockets = the
 *              concurrency), the same number of requests in flight, the same
 *              request bodies built from the same rows file (read and parsed
 *              inside the timed window, as gymrecipe does), every response
 *              read; no envelope, evidence, journal or output
 *   undici     the same bare client on undici's Pool dispatch, the HTTP client
 *              gymrecipe's transport uses
 *   floor      (unless --no-floor) the undici bare client plus the evidence bytes
 *              gymrecipe writes per row (attempt line with the native request
 *              and response, journal line, output line), batched every 10 ms,
 *              journal after attempts, and nothing else: what keeping the
 *              evidence costs on this machine, whoever writes it
 *   floor-http (unless --no-floor) the same on the node:http bare client: the
 *              floor as the aims were first measured, against the client the
 *              ratios are taken to
 *   gymrecipe  runCall() from dist/: streamed input, per-row client state over
 *              the pooled connections, envelope, attempt artifact, journal,
 *              ordered output file
 *   httpx      (when Debian's python3-httpx is installed; --no-httpx leaves it
 *              out) the peer users would otherwise run: the Data Designer Gym
 *              plugin's way, an httpx AsyncClient per row, the same bodies and
 *              concurrency, every response read and checked; no evidence. It
 *              manages tens of rows/s, so it calls only the first --httpx-rows
 *              rows (default 1000) and its rate is compared
 *   base       (with --base DIR) runCall() from DIR/dist, e.g. an older
 *              checkout, to compare builds under the same load
 * and prints rows/s (best of --repeat runs, median in brackets), peak RSS (the
 * largest of the runs), client CPU per row (user + system in the timed window,
 * median of the runs) and the gymrecipe/bare throughput ratio of the best runs
 * (the machine may be shared and noisy; the ratio of the medians is printed too)
 * and its ratio to the undici bare client.
 */
import {execFileSync, spawn} from 'node:child_process'
import {randomUUID} from 'node:crypto'
import {once} from 'node:events'
import {existsSync, mkdtempSync, promises as fsp, rmSync, writeFileSync} from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import {createInterface} from 'node:readline'
import {fileURLToPath} from 'node:url'
import {Pool} from 'undici'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const args = process.argv.slice(2)
const opt = (name, fallback) => {
  const i = args.indexOf(`--${name}`)
  return i === -1 ? fallback : args[i + 1]
}

const SQL = 'select 1 as one'

/**
 * A POST of a JSON body through one keep-alive pool of `concurrency`
 * connections, resolving to the status, headers and body text: node:http's
 * Agent, or undici's Pool dispatch (what gymrecipe's transport uses).
 */
function poster(client, url, concurrency) {
  const target = new URL('/execute', url)
  if (client === 'undici') {
    const pool = new Pool(url, {connections: concurrency, pipelining: 1})
    const post = (body) =>
      new Promise((resolve, reject) => {
        const chunks = []
        let status = 0
        let headers
        pool.dispatch(
          {path: target.pathname, method: 'POST', headers: {'content-type': 'application/json', accept: 'application/json'}, body},
          {
            onRequestStart() {},
            onResponseStart(_c, code, h) {
              status = code
              headers = h
            },
            onResponseData(_c, chunk) {
              chunks.push(chunk)
            },
            onResponseEnd() {
              resolve({status, headers, text: Buffer.concat(chunks).toString('utf8')})
            },
            onResponseError(_c, error) {
              reject(error)
            },
          },
        )
      })
    return {post, close: () => pool.destroy()}
  }
  const agent = new http.Agent({keepAlive: true, maxSockets: concurrency})
  const post = (body) =>
    new Promise((resolve, reject) => {
      const headers = {'content-type': 'application/json', accept: 'application/json', 'content-length': Buffer.byteLength(body)}
      const req = http.request(target, {method: 'POST', agent, headers}, (res) => {
        const chunks = []
        res.on('data', (c) => chunks.push(c))
        res.on('end', () => resolve({status: res.statusCode, headers: res.headers, text: Buffer.concat(chunks).toString('utf8')}))
        res.on('error', reject)
      })
      req.on('error', reject)
      req.end(body)
    })
  return {post, close: () => agent.destroy()}
}

/** The bare client: same rows file, same bodies, same concurrency, keep-alive pool. */
async function bare(client, url, rowsFile, concurrency) {
  const {post, close} = poster(client, url, concurrency)
  const cpu = process.cpuUsage()
  const start = performance.now()
  const bodies = (await fsp.readFile(rowsFile, 'utf8'))
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.stringify({sql: JSON.parse(l).sql}))
  let next = 0
  let ok = 0
  await Promise.all(
    Array.from({length: concurrency}, async () => {
      while (next < bodies.length) {
        const body = bodies[next++]
        const {text} = await post(body)
        if (JSON.parse(text).row_count === 1) ok++
      }
    }),
  )
  const ms = performance.now() - start
  const used = process.cpuUsage(cpu)
  await close()
  return {rows: bodies.length, ok, ms, cpuUs: used.user + used.system}
}

/**
 * The evidence floor: the bare client plus the bytes gymrecipe must write per
 * row (an attempt line with the native request and response, a journal line
 * pointing at it, an output line with the envelope), batched every 10 ms, the
 * journal written after the attempts it points to. Nothing else: no row
 * validation pass, paths, sessions, deadlines, envelope logic, input order or
 * lossless parsing. What it loses against `bare` is what keeping evidence costs
 * on this machine, whoever writes it.
 */
async function bareWithEvidence(client, url, rowsFile, concurrency, workdir) {
  // undici is the HTTP client gymrecipe's transport uses, so the difference is the evidence and the row logic
  const {post, close} = poster(client, url, concurrency)
  const target = new URL('/execute', url)
  await fsp.mkdir(path.join(workdir, 'ev', 'attempts'), {recursive: true})
  const attempts = await fsp.open(path.join(workdir, 'ev', 'attempts', 'a.jsonl'), 'a')
  const journal = await fsp.open(path.join(workdir, 'ev', 'journal.jsonl'), 'a')
  const output = await fsp.open(path.join(workdir, 'out.jsonl'), 'w')
  let attemptText = ''
  let journalText = ''
  let outputText = ''
  let attemptLine = 0
  let writing = Promise.resolve()
  let timer
  const flush = () => {
    timer = undefined
    const [a, j, o] = [attemptText, journalText, outputText]
    attemptText = journalText = outputText = ''
    writing = writing.then(async () => {
      await attempts.write(a)
      await journal.write(j)
      await output.write(o)
    })
  }
  const cpu = process.cpuUsage()
  const start = performance.now()
  const lines = (await fsp.readFile(rowsFile, 'utf8')).split('\n').filter((l) => l.trim() !== '')
  const bodies = lines.map((l) => JSON.stringify({sql: JSON.parse(l).sql}))
  const rowIds = lines.map((l) => JSON.stringify(JSON.parse(l).id))
  const executeUrl = JSON.stringify(target.href)
  const endpoint = JSON.stringify(url)
  let next = 0
  let ok = 0
  await Promise.all(
    Array.from({length: concurrency}, async () => {
      while (next < bodies.length) {
        const i = next++
        const startedAt = new Date().toISOString()
        const t0 = performance.now()
        const body = bodies[i]
        const res = await post(body)
        const durationMs = Math.round((performance.now() - t0) * 10) / 10
        if (JSON.parse(res.text).row_count === 1) ok++
        const attemptId = randomUUID()
        const ref = `attempts/a.jsonl:${++attemptLine}`
        attemptText += `{"schema":"gymrecipe.call.attempt/1","command":"resource","column":"execution","attempt_id":"${attemptId}","row_id":${rowIds[i]},"row_line":${i + 1},"started_at":"${startedAt}","finished_at":"${new Date().toISOString()}","status":"completed","failure_kind":null,"failure_stage":null,"failure_route":null,"failure_reason":null,"provenance":{},"lifecycle":[{"stage":"execute","endpoint":${endpoint},"route":"/execute","http_status":${res.status},"duration_ms":${durationMs}}],"cleanup_errors":[],"request":{"method":"POST","url":${executeUrl},"headers":{"content-type":"application/json","accept":"application/json"},"body":${body}},"response":{"http_status":${res.status},"headers":${JSON.stringify(res.headers)},"body":${res.text}}}\n`
        const columns = `"execution":{"status":"completed","row_id":${rowIds[i]},"attempt_id":"${attemptId}","artifact":"${ref}","failure_kind":null,"failure_stage":null,"failure_route":null,"failure_reason":null,"provenance_json":"{}","cleanup_errors_json":"[]","response_json":${JSON.stringify(res.text)}}`
        journalText += `{"i":${i},"line":${i + 1},"attempt_id":"${attemptId}","columns":{${columns}}}\n`
        if (timer === undefined) timer = setTimeout(flush, 10)
        outputText += `${lines[i].slice(0, -1)},${columns}}\n`
      }
    }),
  )
  clearTimeout(timer)
  flush()
  await writing
  await Promise.all([attempts.close(), journal.close(), output.close()])
  const ms = performance.now() - start
  const used = process.cpuUsage(cpu)
  await close()
  return {rows: bodies.length, ok, ms, cpuUs: used.user + used.system}
}

async function gymrecipe(checkout, url, rowsFile, concurrency, workdir) {
  const {parseCallConfig, runCall} = await import(path.join(checkout, 'dist', 'gym', 'call', 'index.js'))
  const config = parseCallConfig(
    `name: execution\nendpoint: ${url}\nroute: /execute\nrow_id_column: id\nrequest_columns: {sql: sql}\nmax_parallel_requests: ${concurrency}\ntimeout: 60\n`,
    'resource',
  )
  const cpu = process.cpuUsage()
  const start = performance.now()
  const summary = await runCall({
    config,
    input: rowsFile,
    output: path.join(workdir, `out-${concurrency}.jsonl`),
    evidenceDir: path.join(workdir, `evidence-${concurrency}`),
    env: {},
  })
  const ms = performance.now() - start
  const used = process.cpuUsage(cpu)
  return {rows: summary.rows, ok: summary.completed, ms, cpuUs: used.user + used.system}
}

async function child() {
  const variant = opt('variant')
  const url = opt('url')
  const rowsFile = opt('rows-file')
  const concurrency = Number(opt('concurrency'))
  const workdir = opt('workdir')
  const result =
    variant === 'bare' || variant === 'undici'
      ? await bare(variant === 'bare' ? 'node:http' : 'undici', url, rowsFile, concurrency)
      : variant === 'floor' || variant === 'floor-http'
        ? await bareWithEvidence(variant === 'floor' ? 'undici' : 'node:http', url, rowsFile, concurrency, workdir)
        : await gymrecipe(variant === 'base' ? opt('base') : root, url, rowsFile, concurrency, workdir)
  const peakRssMb = process.resourceUsage().maxRSS / 1024
  process.stdout.write(`${JSON.stringify({rows: result.rows, ok: result.ok, ms: result.ms, rowsPerSecond: (result.rows / result.ms) * 1000, peakRssMb, cpuUsPerRow: result.cpuUs / result.rows})}\n`)
}

/** /usr/bin/python3 is Debian's, where python3-httpx installs; another python3 on PATH may not have it. */
const HTTPX_PYTHON = '/usr/bin/python3'
const HTTPX_PEER = `
import asyncio, json, resource, sys, time
import httpx

url, rows_file, concurrency, limit = sys.argv[1] + "/execute", sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

async def main():
    cpu = time.process_time()
    start = time.perf_counter()
    with open(rows_file, encoding="utf-8") as handle:
        bodies = [json.dumps({"sql": json.loads(line)["sql"]}) for line in handle if line.strip()][:limit]
    ok = 0
    next_row = 0

    async def worker():
        nonlocal ok, next_row
        while next_row < len(bodies):
            body = bodies[next_row]
            next_row += 1
            async with httpx.AsyncClient(trust_env=False) as client:
                answer = await client.post(url, content=body, headers={"content-type": "application/json"})
            if answer.json().get("row_count") == 1:
                ok += 1

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    ms = (time.perf_counter() - start) * 1000
    used = (time.process_time() - cpu) * 1e6
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"rows": len(bodies), "ok": ok, "ms": ms, "rowsPerSecond": len(bodies) / ms * 1000, "peakRssMb": rss, "cpuUsPerRow": used / len(bodies)}))

asyncio.run(main())
`

function httpxAvailable() {
  try {
    execFileSync(HTTPX_PYTHON, ['-c', 'import httpx'], {stdio: 'ignore'})
    return true
  } catch {
    return false
  }
}

function measure(variant, url, rowsFile, concurrency, workdir, base) {
  if (variant === 'httpx') return JSON.parse(execFileSync(HTTPX_PYTHON, ['-c', HTTPX_PEER, url, rowsFile, String(concurrency), opt('httpx-rows', '1000')], {encoding: 'utf8'}).trim().split('\n').at(-1))
  const out = execFileSync(
    process.execPath,
    [fileURLToPath(import.meta.url), '--child', '--variant', variant, '--url', url, '--rows-file', rowsFile, '--concurrency', String(concurrency), '--workdir', workdir, ...(base ? ['--base', base] : [])],
    {encoding: 'utf8', maxBuffer: 16 * 1024 * 1024},
  )
  return JSON.parse(out.trim().split('\n').at(-1))
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

async function main() {
  if (!existsSync(path.join(root, 'dist', 'gym', 'call', 'index.js'))) {
    console.error('dist/ is not built: run `npm run build` first')
    process.exit(2)
  }
  const rows = Number(opt('rows', '10000'))
  const repeat = Number(opt('repeat', '3'))
  const concurrencies = String(opt('concurrency', '1,32')).split(',').map(Number)
  const base = opt('base') ? path.resolve(opt('base')) : undefined
  if (base && !existsSync(path.join(base, 'dist', 'gym', 'call', 'index.js'))) {
    console.error(`--base ${base} has no built dist/gym/call`)
    process.exit(2)
  }
  const workdir = mkdtempSync(path.join(os.tmpdir(), 'gr-bench-call-'))
  const rowsFile = path.join(workdir, 'rows.jsonl')
  writeFileSync(rowsFile, Array.from({length: rows}, (_, i) => JSON.stringify({id: `row-${i}`, sql: SQL, meta: {n: i}})).join('\n') + '\n')

  const server = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'test', 'fixtures', 'call', 'serve.ts'), '--quiet'], {cwd: root, stdio: ['ignore', 'pipe', 'inherit']})
  const [line] = await once(createInterface({input: server.stdout}), 'line')
  const {url} = JSON.parse(line)

  const loadBefore = os.loadavg()
  console.log(`gymrecipe call benchmark: ${rows} rows, fixture ${url} (own process), node ${process.version}, ${os.cpus().length} CPUs`)
  console.log(`best of ${repeat} runs per cell (median in brackets); each run in a fresh process, variants interleaved`)
  if (base) console.log(`base = ${base}`)
  console.log('')
  console.log('concurrency  variant      rows/s (median)      peak RSS   client CPU/row   ok')
  console.log('                                                  (max)       (median)')
  const table = []
  const httpx = !args.includes('--no-httpx') && httpxAvailable()
  if (!httpx && !args.includes('--no-httpx')) console.log('httpx peer skipped: no python3-httpx for /usr/bin/python3 (apt-get install -y python3-httpx)')
  const variants = ['bare', 'undici', ...(args.includes('--no-floor') ? [] : ['floor', 'floor-http']), 'gymrecipe', ...(httpx ? ['httpx'] : []), ...(base ? ['base'] : [])]
  try {
    for (const concurrency of concurrencies) {
      const runs = Object.fromEntries(variants.map((v) => [v, []]))
      for (let r = 0; r < repeat; r++) {
        for (const variant of variants) {
          const runDir = mkdtempSync(path.join(workdir, `${variant}-`))
          runs[variant].push(measure(variant, url, rowsFile, concurrency, runDir, base))
          rmSync(runDir, {recursive: true, force: true})
        }
      }
      const cell = {}
      for (const variant of variants) {
        const best = runs[variant].reduce((a, b) => (b.rowsPerSecond > a.rowsPerSecond ? b : a))
        cell[variant] = {best, median: median(runs[variant].map((x) => x.rowsPerSecond))}
        const cpu = median(runs[variant].map((x) => x.cpuUsPerRow))
        const rss = Math.max(...runs[variant].map((x) => x.peakRssMb))
        const ok = runs[variant].every((x) => x.ok === x.rows) ? `${best.ok}/${best.rows}` : runs[variant].map((x) => `${x.ok}/${x.rows}`).join(' ')
        console.log(
          `${String(concurrency).padStart(11)}  ${variant.padEnd(10)} ${best.rowsPerSecond.toFixed(0).padStart(7)} (${cell[variant].median.toFixed(0).padStart(6)})   ${rss.toFixed(0).padStart(6)} MB  ${cpu.toFixed(0).padStart(9)} µs     ${ok}`,
        )
      }
      const ratio = cell.gymrecipe.best.rowsPerSecond / cell.bare.best.rowsPerSecond
      const ratioMedian = cell.gymrecipe.median / cell.bare.median
      const ratioBase = base ? cell.base.best.rowsPerSecond / cell.bare.best.rowsPerSecond : undefined
      const ratioFloor = cell.floor ? cell.floor.best.rowsPerSecond / cell.bare.best.rowsPerSecond : undefined
      const ratioFloorHttp = cell['floor-http'] ? cell['floor-http'].best.rowsPerSecond / cell.bare.best.rowsPerSecond : undefined
      const ratioUndici = cell.gymrecipe.best.rowsPerSecond / cell.undici.best.rowsPerSecond
      const ratioHttpx = cell.httpx ? cell.gymrecipe.best.rowsPerSecond / cell.httpx.best.rowsPerSecond : undefined
      table.push({concurrency, ratio, ratioFloor, ratioFloorHttp})
      console.log(
        `${' '.repeat(13)}gymrecipe/bare: ${(ratio * 100).toFixed(1)}% (medians: ${(ratioMedian * 100).toFixed(1)}%)   gymrecipe/undici: ${(ratioUndici * 100).toFixed(1)}%${ratioFloor === undefined ? '' : `   floor/bare: ${(ratioFloor * 100).toFixed(1)}% (medians: ${((cell.floor.median / cell.bare.median) * 100).toFixed(1)}%)   floor-http/bare: ${(ratioFloorHttp * 100).toFixed(1)}%`}${ratioBase === undefined ? '' : `   base/bare: ${(ratioBase * 100).toFixed(1)}%`}${ratioHttpx === undefined ? '' : `   gymrecipe/httpx: ${ratioHttpx.toFixed(2)}x`}`,
      )
    }
  } finally {
    server.kill('SIGTERM')
    rmSync(workdir, {recursive: true, force: true})
  }
  console.log('')
  const at32 = table.find((t) => t.concurrency === 32)
  if (at32) {
    const points = (x) => (x * 100).toFixed(1)
    console.log(`aim at 32: >= 85% of the bare client's throughput -> ${points(at32.ratio)}% ${at32.ratio >= 0.85 ? 'met' : 'NOT met'}`)
    if (at32.ratioFloor !== undefined) {
      for (const [floor, name] of [
        [at32.ratioFloor, 'the evidence floor on undici, the HTTP client of gymrecipe'],
        [at32.ratioFloorHttp, 'the evidence floor on node:http, the HTTP client of bare'],
      ]) {
        const gap = (floor - at32.ratio) * 100
        console.log(`aim at 32: within 5 points of ${name} (${points(floor)}%) -> ${gap.toFixed(1)} points ${gap <= 5 ? 'met' : 'NOT met'}`)
      }
    }
  }
  console.log(`load average before/after: ${loadBefore.map((l) => l.toFixed(2)).join(' ')} / ${os.loadavg().map((l) => l.toFixed(2)).join(' ')} on ${os.cpus().length} CPUs`)
}

if (args.includes('--child')) await child()
else await main()
