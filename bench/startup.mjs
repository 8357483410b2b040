// Start-up cost of the CLI against bare `node -e 0`, measured in the same run.
// Cases: --version, new --dry-run, call resource --dry-run, verify --level static, run in turn.
// Usage: node bench/startup.mjs [--base <checkout>]   (RUNS=30 by default; needs a built dist/)
//   --base: the same cases with another build (e.g. a worktree of an older commit), for before/after.
import {execFileSync} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const runs = Number(process.env.RUNS ?? 30)
const baseAt = process.argv.indexOf('--base')
const base = baseAt === -1 ? undefined : path.resolve(process.argv[baseAt + 1])
const relax = mkdtempSync(path.join(os.tmpdir(), 'gr-bench-relax-'))
const gym = path.join(repo, 'test/fixtures/nemo-gym-snapshot')

function median(values) {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}

function runOnce(args) {
  const start = process.hrtime.bigint()
  try {
    execFileSync(process.execPath, args, {stdio: 'ignore', cwd: repo})
  } catch {
    // a verdict other than pass still measures the start-up and the climb
  }
  return Number(process.hrtime.bigint() - start) / 1e6
}

// One recipe for verify to judge (shellcheck and bash dominate that case; it runs fewer times).
execFileSync(process.execPath, [path.join(repo, 'bin', 'run.js'), 'new', 'calendar', '--from', 'calendar', '--gym-root', gym, '--gym-config', 'environments/calendar/config.yaml', '--relax-root', relax], {stdio: 'ignore'})
// A call config and three rows for `call resource --dry-run` (validates both; calls nothing).
const callConfig = path.join(relax, 'execution.yaml')
const callRows = path.join(relax, 'rows.jsonl')
writeFileSync(callConfig, 'name: execution\nendpoint: http://127.0.0.1:9\nroute: /execute\nrow_id_column: id\nrequest_columns: {sql: sql}\n')
writeFileSync(callRows, [0, 1, 2].map((i) => JSON.stringify({id: `row-${i}`, sql: 'select 1'})).join('\n') + '\n')
const builds = [['', repo], ...(base ? [[' (base)', base]] : [])]
const cases = [['node -e 0 (baseline)', ['-e', '0'], runs]]
for (const [label, root] of builds) {
  const bin = path.join(root, 'bin', 'run.js')
  cases.push([`gymrecipe --version${label}`, [bin, '--version'], runs])
  cases.push([`new --dry-run${label}`, [bin, 'new', 'bench-recipe', '--gym-root', gym, '--gym-config', 'environments/calendar/config.yaml', '--relax-root', relax, '--dry-run', '--json'], runs])
  cases.push([`call resource --dry-run${label}`, [bin, 'call', 'resource', callRows, '--config', callConfig, '--dry-run', '--json'], runs])
  cases.push([`verify --level static${label}`, [bin, 'verify', 'calendar', '--level', 'static', '--relax-root', relax, '--gym-root', gym, '--json'], Math.max(3, Math.floor(runs / 5))])
}
// Interleaved: round k runs every case once, so a machine that speeds up or slows down during the
// run moves every case alike and the ratios hold.
const samples = cases.map(() => [])
for (let round = 0; round < runs; round++) {
  for (const [k, [, args, n]] of cases.entries()) if (round < n) samples[k].push(runOnce(args))
}
const results = cases.map(([name, , n], k) => ({name, ms: median(samples[k]), n}))
rmSync(relax, {recursive: true, force: true})
const node = results[0].ms
console.log(`start-up, median of ${runs} runs (verify: ${Math.max(3, Math.floor(runs / 5))})`)
for (const r of results) {
  const before = base && !r.name.endsWith('(base)') ? results.find((x) => x.name === `${r.name} (base)`) : undefined
  console.log(`  ${r.name.padEnd(30)} ${r.ms.toFixed(1).padStart(8)} ms  ${(r.ms / node).toFixed(2)}x node${before ? `  ${(r.ms / before.ms).toFixed(2)}x base` : ''}`)
}
