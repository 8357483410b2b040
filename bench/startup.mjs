// Start-up cost of the CLI against bare `node -e 0`, measured in the same run.
// Usage: node bench/startup.mjs   (RUNS=30 by default; needs a built dist/ and oclif.manifest.json)
import {execFileSync} from 'node:child_process'
import {mkdtempSync, rmSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const bin = path.join(repo, 'bin', 'run.js')
const runs = Number(process.env.RUNS ?? 30)
const relax = mkdtempSync(path.join(os.tmpdir(), 'gr-bench-relax-'))

function median(values) {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}

function time(args) {
  const samples = []
  for (let i = 0; i < runs; i++) {
    const start = process.hrtime.bigint()
    execFileSync(process.execPath, args, {stdio: 'ignore', cwd: repo})
    samples.push(Number(process.hrtime.bigint() - start) / 1e6)
  }
  return median(samples)
}

const cases = [
  ['node -e 0 (baseline)', ['-e', '0']],
  ['gymrecipe --version', [bin, '--version']],
  ['gymrecipe new --dry-run', [bin, 'new', 'bench-recipe', '--gym-root', path.join(repo, 'test/fixtures/nemo-gym-snapshot'), '--gym-config', 'environments/calendar/config.yaml', '--relax-root', relax, '--dry-run', '--json']],
]
const results = cases.map(([name, args]) => ({name, ms: time(args)}))
rmSync(relax, {recursive: true, force: true})
const base = results[0].ms
console.log(`start-up, median of ${runs} runs`)
for (const r of results) console.log(`  ${r.name.padEnd(28)} ${r.ms.toFixed(1).padStart(7)} ms  ${(r.ms / base).toFixed(2)}x node`)
