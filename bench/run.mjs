// Runs every benchmark in bench/ (or the ones named on the command line) one after another.
// Each prints its own figures and ratios against a baseline measured in the same run.
import {spawnSync} from 'node:child_process'
import {readdirSync} from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const dir = path.dirname(fileURLToPath(import.meta.url))
const wanted = process.argv.slice(2)
const all = readdirSync(dir).filter((f) => f.endsWith('.mjs') && f !== 'run.mjs').map((f) => f.replace(/\.mjs$/, '')).sort()
const chosen = wanted.length > 0 ? wanted : all
let failed = 0
for (const name of chosen) {
  if (!all.includes(name)) {
    console.error(`no benchmark "${name}"; choose from: ${all.join(', ')}`)
    process.exit(2)
  }
  console.log(`\n=== ${name} ===`)
  const r = spawnSync(process.execPath, [path.join(dir, `${name}.mjs`)], {stdio: 'inherit'})
  if (r.status !== 0) failed++
}
process.exit(failed === 0 ? 0 : 1)
