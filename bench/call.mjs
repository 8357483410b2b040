#!/usr/bin/env node
/**
 * Benchmark of `gymrecipe call resource` against a bare concurrent HTTP client.
 *
 *   npx tsc -p tsconfig.json && node bench/call.mjs [--rows 10000] [--repeat 2]
 *
 * Starts the call test service (test/fixtures/call/serve.ts, its own process,
 * 127.0.0.1, OS-chosen port) whose /execute answers at once, then for
 * max_parallel_requests 1 and 32 measures, each in a fresh process:
 *   bare       node:http keep-alive client, same request bodies, same concurrency,
 *              reads every response; no envelope, evidence, journal or output
 *   gymrecipe  runCall() from dist/: per-row client, envelope, attempt artifact,
 *              journal, ordered output file
 *   bare-conn-per-row
 *              the bare client with gymrecipe's connection policy: a fresh
 *              connection per row (the contract gives each row its own HTTP
 *              client), closed after the row's last request
 * and prints rows/s, peak RSS, client CPU per row and the gymrecipe/bare
 * throughput ratios. The headline ratio is against the keep-alive bare client.
 */
import {execFileSync, spawn} from 'node:child_process'
import {once} from 'node:events'
import {existsSync, mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import {createInterface} from 'node:readline'
import {fileURLToPath} from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const args = process.argv.slice(2)
const opt = (name, fallback) => {
  const i = args.indexOf(`--${name}`)
  return i === -1 ? fallback : args[i + 1]
}

const SQL = 'select 1 as one'

async function bare(url, rowsFile, concurrency, perRowConnection = false) {
  const {readFileSync} = await import('node:fs')
  const bodies = readFileSync(rowsFile, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => {
      const row = JSON.parse(l)
      return JSON.stringify({sql: row.sql})
    })
  const agent = new http.Agent({keepAlive: true, maxSockets: concurrency})
  const target = new URL('/execute', url)
  const post = (body) =>
    new Promise((resolve, reject) => {
      // per-row connection: a fresh agent per request, closed by the service after the answer
      const rowAgent = perRowConnection ? new http.Agent({keepAlive: true, maxSockets: 1}) : agent
      const headers = {'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...(perRowConnection ? {connection: 'close'} : {})}
      const req = http.request(target, {method: 'POST', agent: rowAgent, headers}, (res) => {
        const chunks = []
        res.on('data', (c) => chunks.push(c))
        res.on('end', () => {
          if (perRowConnection) rowAgent.destroy()
          resolve(Buffer.concat(chunks).toString('utf8'))
        })
        res.on('error', reject)
      })
      req.on('error', reject)
      req.end(body)
    })
  let next = 0
  let ok = 0
  const start = performance.now()
  await Promise.all(
    Array.from({length: concurrency}, async () => {
      while (next < bodies.length) {
        const body = bodies[next++]
        const text = await post(body)
        if (text.includes('"one"')) ok++
      }
    }),
  )
  const ms = performance.now() - start
  agent.destroy()
  return {rows: bodies.length, ok, ms}
}

async function gymrecipe(url, rowsFile, concurrency, workdir) {
  const {parseCallConfig, runCall} = await import(path.join(root, 'dist', 'gym', 'call', 'index.js'))
  const config = parseCallConfig(
    `name: execution\nendpoint: ${url}\nroute: /execute\nrow_id_column: id\nrequest_columns: {sql: sql}\nmax_parallel_requests: ${concurrency}\ntimeout: 60\n`,
    'resource',
  )
  const start = performance.now()
  const summary = await runCall({
    config,
    input: rowsFile,
    output: path.join(workdir, `out-${concurrency}.jsonl`),
    evidenceDir: path.join(workdir, `evidence-${concurrency}`),
    env: {},
  })
  const ms = performance.now() - start
  return {rows: summary.rows, ok: summary.completed, ms}
}

async function child() {
  const variant = opt('variant')
  const url = opt('url')
  const rowsFile = opt('rows-file')
  const concurrency = Number(opt('concurrency'))
  const workdir = opt('workdir')
  const cpu = process.cpuUsage()
  const result = variant === 'gymrecipe' ? await gymrecipe(url, rowsFile, concurrency, workdir) : await bare(url, rowsFile, concurrency, variant === 'bare-conn-per-row')
  const used = process.cpuUsage(cpu)
  const peakRssMb = process.resourceUsage().maxRSS / 1024
  const cpuUsPerRow = (used.user + used.system) / result.rows
  process.stdout.write(`${JSON.stringify({...result, rowsPerSecond: (result.rows / result.ms) * 1000, peakRssMb, cpuUsPerRow})}\n`)
}

function measure(variant, url, rowsFile, concurrency, workdir) {
  const out = execFileSync(
    process.execPath,
    [fileURLToPath(import.meta.url), '--child', '--variant', variant, '--url', url, '--rows-file', rowsFile, '--concurrency', String(concurrency), '--workdir', workdir],
    {encoding: 'utf8', maxBuffer: 16 * 1024 * 1024},
  )
  return JSON.parse(out.trim().split('\n').at(-1))
}

async function main() {
  if (!existsSync(path.join(root, 'dist', 'gym', 'call', 'index.js'))) {
    console.error('dist/ is not built: run `npx tsc -p tsconfig.json` first')
    process.exit(2)
  }
  const rows = Number(opt('rows', '10000'))
  const repeat = Number(opt('repeat', '2'))
  const workdir = mkdtempSync(path.join(os.tmpdir(), 'gr-bench-call-'))
  const rowsFile = path.join(workdir, 'rows.jsonl')
  writeFileSync(rowsFile, Array.from({length: rows}, (_, i) => JSON.stringify({id: `row-${i}`, sql: SQL, meta: {n: i}})).join('\n') + '\n')

  const server = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'test', 'fixtures', 'call', 'serve.ts'), '--quiet'], {cwd: root, stdio: ['ignore', 'pipe', 'inherit']})
  const [line] = await once(createInterface({input: server.stdout}), 'line')
  const {url} = JSON.parse(line)

  console.log(`gymrecipe call benchmark: ${rows} rows, fixture ${url} (own process), node ${process.version}, ${os.cpus().length} CPUs`)
  console.log('best of', repeat, 'runs per cell; each run in a fresh process')
  console.log('')
  console.log('concurrency  variant              rows/s   peak RSS   client CPU/row   ok')
  const table = []
  try {
    for (const concurrency of [1, 32]) {
      const best = {}
      const variants = ['bare', 'bare-conn-per-row', 'gymrecipe']
      for (let r = 0; r < repeat; r++) {
        for (const variant of variants) {
          const runDir = mkdtempSync(path.join(workdir, `${variant}-`))
          const result = measure(variant, url, rowsFile, concurrency, runDir)
          rmSync(runDir, {recursive: true, force: true})
          if (!best[variant] || result.rowsPerSecond > best[variant].rowsPerSecond) best[variant] = result
        }
      }
      for (const variant of variants) {
        const b = best[variant]
        console.log(
          `${String(concurrency).padStart(11)}  ${variant.padEnd(18)} ${b.rowsPerSecond.toFixed(0).padStart(7)}  ${b.peakRssMb.toFixed(0).padStart(6)} MB  ${b.cpuUsPerRow.toFixed(0).padStart(9)} µs     ${b.ok}/${b.rows}`,
        )
      }
      const ratio = best.gymrecipe.rowsPerSecond / best.bare.rowsPerSecond
      const ratioSame = best.gymrecipe.rowsPerSecond / best['bare-conn-per-row'].rowsPerSecond
      table.push({concurrency, ratio, ratioSame})
      console.log(`${' '.repeat(13)}ratio gymrecipe/bare: ${(ratio * 100).toFixed(1)}%   gymrecipe/bare-conn-per-row: ${(ratioSame * 100).toFixed(1)}%`)
    }
  } finally {
    server.kill('SIGTERM')
    rmSync(workdir, {recursive: true, force: true})
  }
  console.log('')
  const at32 = table.find((t) => t.concurrency === 32)
  console.log(`aim: >= 80% of the bare client's throughput at 32 -> ${(at32.ratio * 100).toFixed(1)}% ${at32.ratio >= 0.8 ? 'met' : 'NOT met'}`)
  console.log(`     (against a bare client with the same one-connection-per-row policy: ${(at32.ratioSame * 100).toFixed(1)}%)`)
  console.log(`load average during the run: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')} on ${os.cpus().length} CPUs`)
}

if (args.includes('--child')) await child()
else await main()
