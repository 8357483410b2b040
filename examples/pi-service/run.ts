/**
 * The restart-safe Pi agent service, shown end to end on this machine (loopback only):
 *
 *   npm run example:pi                     (builds gymrecipe, installs Pi if needed, runs this)
 *   node --import tsx examples/pi-service/run.ts [--out DIR] [--json]
 *
 * Stages, each driven through `gymrecipe call harness`, each followed by a look at the process
 * table (/proc) for Pi processes:
 *   turn-1       rows A and B each get a first turn (Pi writes notes.txt in the row's workspace)
 *   restart      the service is stopped by its pid and started again on the same state directory
 *   turn-2       each row asks what it asked before and what its workspace holds: Pi answers from
 *                its own session history, and each row sees only its own file
 *   interrupted  row C's turn is in progress (the model is slow) when the service is stopped:
 *                the turn is ended and answered as interrupted, not retried
 *   crashed      row D's turn is in progress when the service is killed (SIGKILL); the next
 *                start ends the Pi process left behind and logs the turn interrupted
 *   after-crash  row D's next turn runs normally and reports the interrupted turn before it
 *   stopped      every service stopped
 * Exit 0 when every check held, 1 otherwise; the work directory keeps every file either way.
 */
import {existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import {parseArgs} from 'node:util'
import {readJsonl} from '../lib/jsonl.js'
import {processesRunning, type ProcessEntry} from '../lib/process-table.js'
import {getJson, gymrecipe, killService, REPO_ROOT, startService, stopService, type CommandResult, type RunningService} from '../lib/processes.js'
import {findPi, type PiInstall} from './pi-runner.js'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const {values} = parseArgs({options: {out: {type: 'string', default: path.join(process.env.TMPDIR ?? '/tmp', 'gymrecipe-example-pi')}, json: {type: 'boolean', default: false}}})
const out = path.resolve(values.out!)
const quiet = values.json
const say = (line = '') => {
  if (!quiet) process.stdout.write(`${line}\n`)
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

if (!existsSync(path.join(REPO_ROOT, 'dist', 'commands'))) {
  process.stderr.write('gymrecipe is not built in this checkout: run `npm run build` (or `npm run example:pi`, which builds first)\n')
  process.exit(2)
}
let pi: PiInstall
try {
  pi = findPi(path.join(HERE, 'node_modules'))
} catch (error) {
  process.stderr.write(`${(error as Error).message}\n`)
  process.exit(2)
}

class CheckFailed extends Error {}
const check = (ok: boolean, what: string) => {
  if (!ok) throw new CheckFailed(what)
}

rmSync(out, {recursive: true, force: true})
mkdirSync(path.join(out, 'logs'), {recursive: true})
const stateDir = path.join(out, 'state')
const report: any = {work_dir: out, pi_version: pi.version, pi_node: pi.node, stages: []}
const snapshots: {stage: string; pi_processes: ProcessEntry[]}[] = []
const snapshot = (stage: string) => {
  const entry = {stage, pi_processes: processesRunning(pi.node)}
  snapshots.push(entry)
  say(`  process table after ${stage}: ${entry.pi_processes.length} Pi process${entry.pi_processes.length === 1 ? '' : 'es'}${entry.pi_processes.map((p) => `\n    pid ${p.pid} ppid ${p.ppid} pgid ${p.pgid} ${p.args}`).join('')}`)
  return entry.pi_processes
}

let model: RunningService | undefined
let service: RunningService | undefined
let failure: string | undefined
const startPiService = async () => {
  service = await startService('Pi service', path.join(HERE, 'service.ts'), ['--state-dir', stateDir, '--model-endpoint', model!.url, '--model', String(model!.info.model)], path.join(out, 'logs', 'pi-service.log'))
  say(`started the Pi service at ${service.url} (pid ${service.pid}, Pi ${String(service.info.pi_version)})`)
  return service
}
const harness = (stage: string): Promise<CommandResult> => {
  const config = path.join(out, 'harness.yaml')
  writeFileSync(config, readFileSync(path.join(HERE, 'config', 'harness.yaml'), 'utf8').replaceAll('http://127.0.0.1:8770', service!.url))
  const args = ['call', 'harness', path.join(HERE, 'data', `${stage}.jsonl`), '--config', config, '--output', path.join(out, `${stage}.jsonl`), '--evidence-dir', path.join(out, 'evidence', stage), '--json']
  say(`$ gymrecipe call harness data/${stage}.jsonl --config harness.yaml --output ${stage}.jsonl --evidence-dir evidence/${stage}`)
  return gymrecipe(args)
}
const summaryOf = (result: CommandResult) => {
  try {
    return JSON.parse(result.stdout).result
  } catch {
    throw new CheckFailed(`gymrecipe call harness exited ${result.exitCode} without a JSON summary: ${result.stderr.slice(0, 500)}`)
  }
}
const attemptsOf = (stage: string): any[] => {
  const dir = path.join(out, 'evidence', stage, 'attempts')
  return readJsonl(path.join(dir, readdirOne(dir)))
}
const readdirOne = (dir: string) => {
  const names = existsSync(dir) ? readdirSync(dir) : []
  check(names.length === 1, `one attempt segment in ${dir}, found ${names.length}`)
  return names[0]
}

const modelRequestsFor = (prompt: string): number => {
  const log = path.join(out, 'logs', 'model-requests.jsonl')
  if (!existsSync(log)) return 0
  return readJsonl(log).filter((r) => r.messages.some((m: any) => m.role === 'user' && m.text === prompt)).length
}

/** Wait until the turn is truly in progress: its Pi process runs and the model has its request. */
async function waitForTurn(prompt: string): Promise<ProcessEntry[]> {
  const deadline = Date.now() + 30_000
  while (Date.now() < deadline) {
    const found = processesRunning(pi.node)
    if (found.length > 0 && modelRequestsFor(prompt) > 0) return found
    await sleep(50)
  }
  throw new CheckFailed(`the turn ${JSON.stringify(prompt)} did not reach the model within 30 s`)
}
const promptOf = (stage: string): string => readJsonl(path.join(HERE, 'data', `${stage}.jsonl`))[0].prompt

try {
  model = await startService('scripted model', path.join(REPO_ROOT, 'examples', 'lib', 'scripted-model.ts'), ['--script', path.join(HERE, 'data', 'model-script.json'), '--log', path.join(out, 'logs', 'model-requests.jsonl')], path.join(out, 'logs', 'model.log'))
  say(`started the scripted model at ${model.url} (pid ${model.pid})`)
  await startPiService()
  say()

  // turn-1: two rows, one turn each
  {
    const run = await harness('turn1')
    const summary = summaryOf(run)
    const rows = readJsonl(path.join(out, 'turn1.jsonl'))
    check(run.exitCode === 0 && summary.completed === 2, `turn 1: ${summary.completed} of 2 rows completed (${JSON.stringify(summary.failure_kinds)})`)
    const files = ['row-a', 'row-b'].map((row) => readFileSync(path.join(stateDir, 'rows', row, 'workspace', 'notes.txt'), 'utf8'))
    check(files[0] === 'alpha\n' && files[1] === 'beta\n', `each row's notes.txt holds its own word (found ${JSON.stringify(files)})`)
    for (const r of rows) say(`  ${r.row_id}: ${JSON.stringify(r.answer)}`)
    report.stages.push({stage: 'turn-1', answers: Object.fromEntries(rows.map((r) => [r.row_id, r.answer])), workspace_files: {'row-a': files[0], 'row-b': files[1]}})
    check(snapshot('turn-1').length === 0, 'no Pi process is left after turn 1')
  }

  // restart on the same state directory
  await stopService(service!)
  say(`stopped the Pi service (pid ${service!.pid})`)
  check(snapshot('restart (service stopped)').length === 0, 'no Pi process is left after the service stopped')
  await startPiService()

  // turn-2: history through Pi's own session, files per row
  {
    const run = await harness('turn2')
    const summary = summaryOf(run)
    check(run.exitCode === 0 && summary.completed === 2, `turn 2: ${summary.completed} of 2 rows completed (${JSON.stringify(summary.failure_kinds)})`)
    const answers = Object.fromEntries(readJsonl(path.join(out, 'turn2.jsonl')).map((r) => [r.row_id, r.answer as string]))
    check(answers['row-a'].includes('Earlier you asked: Row A, turn 1: write notes.txt containing the word alpha.'), `row A's second turn sees its first turn (answer: ${answers['row-a']})`)
    check(answers['row-b'].includes('Earlier you asked: Row B, turn 1: write notes.txt containing the word beta.'), `row B's second turn sees its first turn (answer: ${answers['row-b']})`)
    check(!answers['row-a'].includes('Row B') && !answers['row-b'].includes('Row A'), 'no row sees the other row\'s conversation')
    check(answers['row-a'].includes('alpha') && !answers['row-a'].includes('beta') && answers['row-b'].includes('beta') && !answers['row-b'].includes('alpha'), 'each row sees only its own notes.txt')
    const sessionFiles = ['row-a', 'row-b'].map((row) => readdirSync(path.join(stateDir, 'rows', row, 'sessions')))
    check(sessionFiles.every((f) => f.length === 1), `one Pi session file per row (${JSON.stringify(sessionFiles)})`)
    for (const [row, answer] of Object.entries(answers)) say(`  ${row}: ${JSON.stringify(answer)}`)
    report.stages.push({stage: 'turn-2', answers, pi_session_files: {'row-a': sessionFiles[0][0], 'row-b': sessionFiles[1][0]}})
    check(snapshot('turn-2').length === 0, 'no Pi process is left after turn 2')
  }

  // interrupted: the service is stopped while row C's turn runs
  {
    const result = harness('interrupted')
    const during = await waitForTurn(promptOf('interrupted'))
    say(`  row C's turn is running (Pi pid ${during.map((p) => p.pid).join(', ')}); stopping the service`)
    await stopService(service!)
    const run = await result
    const attempt = attemptsOf('interrupted')[0]
    const response = attempt.response?.body === undefined ? undefined : typeof attempt.response.body === 'string' ? JSON.parse(attempt.response.body) : attempt.response.body
    check(run.exitCode === 1 && attempt.failure_kind === 'unfinished_harness_output', `row C is reported unfinished (exit ${run.exitCode}, ${attempt.failure_kind}: ${attempt.failure_reason})`)
    check(/interrupted/u.test(attempt.failure_reason ?? ''), `the evidence says the turn was interrupted (${attempt.failure_reason})`)
    say(`  row-c: ${attempt.failure_kind} (${attempt.failure_reason})`)
    report.stages.push({stage: 'interrupted', pi_during: during, failure_kind: attempt.failure_kind, failure_reason: attempt.failure_reason, response_status: response?.status ?? null})
    check(snapshot('interrupted').length === 0, 'no Pi process is left after the interrupted turn')
    await startPiService()
    const log = await getJson(`${service!.url}/rows/row-c`)
    check(log.turns.length === 1 && log.turns[0].status === 'interrupted', `row C's turn log says interrupted (${JSON.stringify(log.turns)})`)
    report.stages[report.stages.length - 1].turn_log = log.turns
  }

  // crashed: the service is killed while row D's turn runs; the next start fences what it left
  {
    const result = harness('crashed')
    const during = await waitForTurn(promptOf('crashed'))
    say(`  row D's turn is running (Pi pid ${during.map((p) => p.pid).join(', ')}); killing the service (SIGKILL)`)
    await killService(service!)
    const run = await result
    const attempt = attemptsOf('crashed')[0]
    const leftBehind = snapshot('crash (service killed)')
    check(run.exitCode === 1 && attempt.failure_kind === 'transport_failed', `row D's call failed in transport (exit ${run.exitCode}, ${attempt.failure_kind})`)
    await startPiService()
    const fenced = service!.info.fenced as any
    const log = await getJson(`${service!.url}/rows/row-d`)
    check(log.turns.length === 1 && log.turns[0].status === 'interrupted', `row D's turn log says interrupted (${JSON.stringify(log.turns)})`)
    check(fenced.ended.length === leftBehind.filter((p) => p.pgid === p.pid).length, `the restart ended the ${leftBehind.length} Pi process(es) left behind (${JSON.stringify(fenced)})`)
    say(`  row-d: ${attempt.failure_kind} (${attempt.failure_reason}); the restart ended pid ${fenced.ended.map((r: any) => r.pid).join(', ') || 'none'} and logged turn 1 interrupted`)
    report.stages.push({stage: 'crashed', pi_during: during, pi_left_behind: leftBehind, failure_kind: attempt.failure_kind, failure_reason: attempt.failure_reason, fenced_at_restart: fenced, turn_log: log.turns})
    check(snapshot('restart after the crash').length === 0, 'no Pi process is left after the restart fenced the stale one')
  }

  // after-crash: the row goes on; the interrupted turn is reported, not redone
  {
    const run = await harness('after-crash')
    const summary = summaryOf(run)
    check(run.exitCode === 0 && summary.completed === 1, `row D's next turn completed (${JSON.stringify(summary.failure_kinds)})`)
    const attempt = attemptsOf('after-crash')[0]
    const response = typeof attempt.response?.body === 'string' ? JSON.parse(attempt.response.body) : attempt.response?.body
    const answer = readJsonl(path.join(out, 'after-crash.jsonl'))[0].answer
    check(response?.metadata?.interrupted_turns === '1', `the response reports turn 1 as interrupted (metadata ${JSON.stringify(response?.metadata)})`)
    const log = await getJson(`${service!.url}/rows/row-d`)
    check(log.turns.map((t: any) => t.status).join(',') === 'interrupted,completed', `row D's turns: ${log.turns.map((t: any) => t.status).join(',')}`)
    // the interrupted prompt reached the model once, during the crashed turn, and was never sent again as a new turn
    const interruptedPrompt = promptOf('crashed')
    const asked = readJsonl(path.join(out, 'logs', 'model-requests.jsonl')).filter((r) => r.messages.filter((m: any) => m.role === 'user').at(-1)?.text === interruptedPrompt).length
    check(asked === 1, `row D's interrupted prompt was put to the model ${asked} times as the turn's question`)
    say(`  row-d: ${JSON.stringify(answer)} (metadata.interrupted_turns ${response?.metadata?.interrupted_turns}; the interrupted prompt was put to the model ${asked} time)`)
    report.stages.push({stage: 'after-crash', answer, metadata: response?.metadata, turn_log: log.turns, interrupted_prompt_asked: asked})
    check(snapshot('after-crash').length === 0, 'no Pi process is left after the follow-up turn')
  }
  report.stats = await getJson(`${service!.url}/stats`)
  check(report.stats.active_sessions === 0 && report.stats.active_pi_processes === 0, `the service holds no session and no Pi process (${JSON.stringify(report.stats)})`)
} catch (error) {
  failure = error instanceof CheckFailed ? error.message : String((error as Error).stack ?? error)
} finally {
  if (service) await stopService(service)
  if (model) await stopService(model)
  say(`stopped ${[service, model].filter(Boolean).map((s) => `${s!.name} (pid ${s!.pid})`).join(', ')}`)
  const last = snapshot('stopped')
  if (!failure && last.length > 0) failure = `${last.length} Pi process(es) left after everything stopped`
}
report.process_table = snapshots
report.ok = failure === undefined
if (failure) report.error = failure
if (quiet) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`)
else if (failure) process.stderr.write(`example failed: ${failure}\n(work dir kept: ${out})\n`)
else say(`\nall checks held; state in ${stateDir}, evidence in ${path.join(out, 'evidence')}`)
process.exit(failure ? 1 : 0)
