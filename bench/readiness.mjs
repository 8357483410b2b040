// Readiness detection of `gymrecipe start` against the 2-second bash polling loop of the
// hand-written Relax launchers (relax-nemo-gym.md §4.2 step 4), measured in the same run on
// the same container: both watch each start, and each report is timed against ground truth.
//
//   ready: the fixture Gateway turns ready 3 s after the container starts (ready_delay_s);
//          ground truth = the first 200 ready:true of an independent /readyz prober (every 20 ms).
//   death: the container exits 3 s after it starts (exit_after_s);
//          ground truth = Docker's State.FinishedAt.
//
// Run: npm run build && node bench/readiness.mjs   (env BENCH_TRIALS, default 5 per scenario)
// Needs a Docker daemon and builds the fixture image twice (about a minute each with vfs).
// Everything it creates carries ai.relax.recipe=<bench id> and is removed by that label.
import {execFileSync, spawn} from 'node:child_process'
import {randomBytes} from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const {startRecipe} = await import(path.join(repo, 'dist/steps/start.js'))
const {newRecipe} = await import(path.join(repo, 'dist/scaffold/new-recipe.js'))

const TRIALS = Number(process.env.BENCH_TRIALS ?? 5)
const PORT_BASE = Number(process.env.BENCH_PORT_BASE ?? 24500)
const snapshot = path.join(repo, 'test/fixtures/nemo-gym-snapshot')

function docker(args, input) {
  return execFileSync('docker', args, {encoding: 'utf8', input, stdio: ['pipe', 'pipe', 'pipe']})
}

try {
  docker(['version', '--format', '{{.Server.Version}}'])
} catch (error) {
  console.log(`readiness: SKIPPED, no Docker daemon answers (${String(error.stderr ?? error.message).trim().split('\n')[0]})`)
  process.exit(0)
}
execFileSync('bash', [path.join(repo, 'test/fixtures/images/build-base-image.sh')], {stdio: 'inherit'})

// The hand-written launchers' loop, verbatim in spirit: inspect, curl + jq, sleep 2.
const BASELINE = `#!/usr/bin/env bash
set -u
name="$1"; url="$2"; deadline=$((SECONDS + 600))
while true; do
  if [[ "$(docker container inspect --format '{{.State.Running}}' "\${name}" 2>/dev/null)" != "true" ]]; then
    echo "BASELINE exited during start-up"; docker logs --tail 200 "\${name}" >/dev/null 2>&1; exit 1
  fi
  # (curl output captured first: \`curl | jq -e\` passes when curl fails, since jq 1.6 exits 0 on empty input)
  if body=$(curl --noproxy '*' -fsS "\${url}/readyz" 2>/dev/null) && jq -e '.ready == true and .active_trials == 0' >/dev/null <<<"\${body}"; then
    echo "BASELINE ready"; exit 0
  fi
  if (( SECONDS >= deadline )); then exit 1; fi
  sleep 2
done
`

const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'gymrecipe-bench-readiness-'))
const id = `benchready-${randomBytes(3).toString('hex')}`
const relax = path.join(tmp, 'relax')
const service = path.join(relax, 'examples/nemo_gym_agentic/service')
const image = `gymrecipe-bench-readiness:${id}`
const env = {
  ...process.env,
  GYM_HOST: '127.0.0.1',
  GYM_BIND_HOST: '127.0.0.1',
  NEMO_GYM_CALLBACK_ALLOWED_NETWORKS: '127.0.0.0/8',
  NEMO_GYM_IMAGE: image,
  DOCKER_CLI_HINTS: 'false',
}
const gateway = `http://127.0.0.1:${PORT_BASE}`
const baselineScript = path.join(tmp, 'baseline-loop.sh')

async function cleanup() {
  const containers = docker(['ps', '-aq', '--no-trunc', '--filter', `label=ai.relax.recipe=${id}`]).split('\n').filter(Boolean)
  if (containers.length > 0) docker(['rm', '-f', ...containers])
  const images = [...new Set(docker(['image', 'ls', '-q', '--no-trunc', '--filter', `label=ai.relax.recipe=${id}`]).split('\n').filter(Boolean))]
  if (images.length > 0) docker(['rmi', '-f', ...images])
  await fs.rm(tmp, {recursive: true, force: true})
}

/**
 * Ground truth for "ready": a new /readyz request every 10 ms, overlapping (the fixture Gateway
 * is threaded), so a slow answer never hides the transition. The Gateway turned ready before
 * the earliest request that answers 200 ready:true was *sent*... or while it was being served,
 * so its send time is an early bound, accurate to about the 10 ms spacing.
 */
function readyProber() {
  let stop = false
  let best
  const inFlight = new Set()
  const timer = setInterval(() => {
    if (stop || best !== undefined) return
    const sentAt = Date.now()
    const p = fetch(`${gateway}/readyz`, {signal: AbortSignal.timeout(1000)})
      .then(async (r) => {
        const body = await r.json().catch(() => ({}))
        if (r.status === 200 && body.ready === true && (best === undefined || sentAt < best)) best = sentAt
      })
      .catch(() => undefined)
      .finally(() => inFlight.delete(p))
    inFlight.add(p)
  }, 10)
  const found = (async () => {
    while (!stop && best === undefined) await new Promise((resolve) => setTimeout(resolve, 50))
    clearInterval(timer)
    await Promise.all(inFlight) // an earlier request may still answer ready
    return best
  })()
  return {found, stop: () => (stop = true)}
}

function startBaseline(name) {
  const child = spawn('bash', [baselineScript, name, gateway], {detached: true, stdio: ['ignore', 'pipe', 'pipe'], env})
  const result = new Promise((resolve) => {
    let out = ''
    child.stdout.on('data', (d) => {
      out += d
      if (/BASELINE (ready|exited)/.test(out)) resolve({at: Date.now(), what: out.includes('ready') ? 'ready' : 'died'})
    })
    child.on('exit', () => resolve({at: undefined, what: 'gone'}))
  })
  return {
    result,
    stop() {
      try {
        process.kill(-child.pid, 'SIGKILL')
      } catch {
        // already gone
      }
    },
  }
}

/** One start, watched by gymrecipe and by the bash loop; returns both report delays. */
async function trial(kind) {
  let baseline
  let cliAt
  let prober
  const io = {
    scriptOutput(_stream, text) {
      // The script hands off right after `docker start`; the hand-written loop starts there too.
      if (!baseline && /Started \S+ \(/.test(text)) {
        // A hand-written loop's 2 s phase relative to the event is arbitrary: start it at a random
        // offset within one period, so its figure is the loop's average, not one lucky phase.
        const offset = Math.random() * 2000
        let started
        baseline = {
          result: new Promise((resolve) => setTimeout(() => {
            started = startBaseline(containerName)
            started.result.then(resolve)
          }, offset)),
          stop: () => started?.stop(),
        }
        if (kind === 'ready') prober = readyProber()
      }
    },
    note(line) {
      if (cliAt === undefined && (/ is ready at /.test(line) || / exited during start-up/.test(line))) cliAt = Date.now()
    },
  }
  try {
    await startRecipe({relaxRoot: relax, recipe: id, env, dryRun: false, smoke: false, render: false, climb: false, io})
  } catch (error) {
    if (!(kind === 'death' && error.code === 'E_CONTAINER_DIED')) throw error
  }
  const base = await Promise.race([baseline.result, new Promise((resolve) => setTimeout(() => resolve({at: undefined, what: 'timeout'}), 30_000))])
  baseline.stop()
  let truth
  if (kind === 'ready') {
    truth = await prober.found
    prober.stop()
  } else {
    truth = Date.parse(JSON.parse(docker(['container', 'inspect', containerName]))[0].State.FinishedAt)
  }
  if (cliAt === undefined || base.at === undefined || truth === undefined) throw new Error(`${kind} trial incomplete: cli=${cliAt} baseline=${base.what} truth=${truth}`)
  if (base.what !== (kind === 'ready' ? 'ready' : 'died')) throw new Error(`${kind} trial: the bash loop reported ${base.what}`)
  return {cli: cliAt - truth, baseline: base.at - truth}
}

const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  const mean = s.reduce((a, b) => a + b, 0) / s.length
  return {median: s[Math.floor(s.length / 2)], mean, min: s[0], max: s.at(-1)}
}

let containerName
const results = {}
try {
  await fs.cp(path.join(repo, 'test/fixtures/relax-checkout'), relax, {recursive: true, filter: (src) => !src.includes('__pycache__')})
  await fs.cp(snapshot, path.join(service, 'fixture_gym_root'), {recursive: true})
  await fs.writeFile(baselineScript, BASELINE, {mode: 0o755})
  const created = await newRecipe({id, gymRoot: snapshot, gymConfigs: ['environments/calendar/config.yaml'], relaxRoot: relax, from: 'calendar', smoke: false, portBase: PORT_BASE, force: false, dryRun: false, version: 'bench'})
  containerName = created.contract.service.container
  for (const [kind, faults] of [['ready', {ready_delay_s: 3}], ['death', {exit_after_s: 3, exit_code: 3}]]) {
    await fs.writeFile(path.join(service, 'fixture-faults.json'), JSON.stringify(faults))
    const rows = []
    for (let i = 0; i < TRIALS; i++) {
      const r = await trial(kind)
      rows.push(r)
      console.log(`  ${kind} trial ${i + 1}/${TRIALS}: gymrecipe start ${r.cli} ms, 2 s bash loop ${r.baseline} ms`)
    }
    results[kind] = {cli: stats(rows.map((r) => r.cli)), baseline: stats(rows.map((r) => r.baseline))}
  }
} finally {
  await cleanup()
}

console.log(`\nreadiness detection, ${TRIALS} trials each, same containers watched by both (ms after ground truth):`)
for (const [kind, label] of [['ready', 'Gateway ready → reported ready'], ['death', 'container exit → reported dead']]) {
  const {cli, baseline} = results[kind]
  const ratio = baseline.median / Math.max(cli.median, 1)
  console.log(`  ${label.padEnd(32)} gymrecipe start: median ${cli.median} (${cli.min}–${cli.max}), mean ${cli.mean.toFixed(0)}`)
  console.log(`  ${''.padEnd(32)} 2 s bash loop:   median ${baseline.median} (${baseline.min}–${baseline.max}), mean ${baseline.mean.toFixed(0)}`)
  console.log(`  ${''.padEnd(32)} ratio (bash loop / gymrecipe, medians): ${ratio.toFixed(1)}x`)
}
