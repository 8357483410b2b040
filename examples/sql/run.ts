/**
 * The execution-grounded SQL workflow, end to end on this machine (loopback only):
 *
 *   npm run example:sql                    (builds gymrecipe, then runs this)
 *   node --import tsx examples/sql/run.ts [--out DIR] [--json] [--model-endpoint URL/v1 --model NAME]
 *
 * With --model-endpoint the agent asks that OpenAI-compatible endpoint instead of the scripted
 * model (which is then not started); a real model may of course answer differently.
 *
 * 1. starts the toy SQL service, the scripted model and the SQL agent, each its own process;
 * 2. `gymrecipe call resource` executes every saved SQL candidate on its row's database
 *    (original or variant) in a session, then the question's reference SQL (stateless);
 * 3. `gymrecipe call harness` has the tool-using agent answer each question on that database;
 * 4. judge.ts accepts the candidates that match the reference on both databases and agree with
 *    the agent, and marks one row per accepted candidate to keep;
 * 5. `gymrecipe tasks build` (include: judge.keep) and `tasks export` turn those into Gym tasks;
 * 6. checks that no session is left open on either service, and stops the services by pid.
 * Exit 0 when every step passed, 1 otherwise; the work directory keeps every file either way.
 */
import {existsSync, mkdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import {parseArgs} from 'node:util'
import {getJson, gymrecipe, REPO_ROOT, startService, stopService, type RunningService} from '../lib/processes.js'
import {readJsonl} from '../lib/jsonl.js'
import {judgeFile} from './judge.js'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const {values} = parseArgs({
  options: {
    out: {type: 'string', default: path.join(process.env.TMPDIR ?? '/tmp', 'gymrecipe-example-sql')},
    json: {type: 'boolean', default: false},
    'model-endpoint': {type: 'string'},
    model: {type: 'string'},
  },
})
if ((values['model-endpoint'] === undefined) !== (values.model === undefined)) {
  process.stderr.write('--model-endpoint and --model go together\n')
  process.exit(2)
}
const out = path.resolve(values.out!)
const quiet = values.json
const say = (line = '') => {
  if (!quiet) process.stdout.write(`${line}\n`)
}

if (!existsSync(path.join(REPO_ROOT, 'dist', 'commands'))) {
  process.stderr.write('gymrecipe is not built in this checkout: run `npm run build` (or `npm run example:sql`, which builds first)\n')
  process.exit(2)
}

class StepFailed extends Error {}

/** The committed config with the endpoints of the services this run started. */
function writeConfig(name: string, endpoints: Record<string, string>): string {
  let text = readFileSync(path.join(HERE, 'config', name), 'utf8')
  for (const [placeholder, url] of Object.entries(endpoints)) text = text.replaceAll(placeholder, url)
  const file = path.join(out, name)
  writeFileSync(file, text)
  return file
}

async function step(args: string[]): Promise<any> {
  say(`$ gymrecipe ${args.map((a) => (a.startsWith(out) ? path.relative(out, a) || '.' : a)).join(' ')}`)
  const result = await gymrecipe([...args, '--json'])
  let envelope: any
  try {
    envelope = JSON.parse(result.stdout)
  } catch {
    throw new StepFailed(`gymrecipe ${args[0]} ${args[1]} exited ${result.exitCode} without a JSON summary: ${result.stderr.trim().slice(0, 500)}`)
  }
  if (result.exitCode !== 0) {
    const why = envelope.error ? `${envelope.error.code}: ${envelope.error.message}` : 'no error given'
    throw new StepFailed(`gymrecipe ${args[0]} ${args[1]} exited ${result.exitCode} (${why}): ${JSON.stringify(envelope.result).slice(0, 800)}`)
  }
  return envelope.result
}

rmSync(out, {recursive: true, force: true})
mkdirSync(path.join(out, 'logs'), {recursive: true})
const services: RunningService[] = []
const report: Record<string, unknown> = {work_dir: out}
let failure: string | undefined
try {
  const sql = await startService('toy SQL service', path.join(HERE, 'toy-sql-service.ts'), ['--database-dir', path.join(out, 'databases')], path.join(out, 'logs', 'sql-service.log'))
  services.push(sql)
  let modelUrl = values['model-endpoint']
  let modelName = values.model
  let model: RunningService | undefined
  if (modelUrl === undefined) {
    model = await startService('scripted model', path.join(REPO_ROOT, 'examples', 'lib', 'scripted-model.ts'), ['--script', path.join(HERE, 'data', 'model-script.json'), '--log', path.join(out, 'logs', 'model-requests.jsonl')], path.join(out, 'logs', 'model.log'))
    services.push(model)
    modelUrl = model.url
    modelName = String(model.info.model)
  }
  const agent = await startService('SQL agent', path.join(HERE, 'sql-agent.ts'), ['--model-endpoint', modelUrl, '--model', modelName!, '--resource-endpoint', sql.url], path.join(out, 'logs', 'sql-agent.log'))
  services.push(agent)
  for (const s of services) say(`started ${s.name} at ${s.url} (pid ${s.pid})`)
  say()

  const endpoints = {'http://127.0.0.1:8765': sql.url, 'http://127.0.0.1:8766': agent.url}
  const candidates = path.join(HERE, 'data', 'candidates.jsonl')
  const evidence = path.join(out, 'evidence')
  const calls: Record<string, any> = {}
  calls.execution = await step(['call', 'resource', candidates, '--config', writeConfig('execution.yaml', endpoints), '--output', path.join(out, 'executed.jsonl'), '--evidence-dir', path.join(evidence, 'execution')])
  calls.reference = await step(['call', 'resource', path.join(out, 'executed.jsonl'), '--config', writeConfig('reference.yaml', endpoints), '--output', path.join(out, 'referenced.jsonl'), '--evidence-dir', path.join(evidence, 'reference')])
  calls.answer = await step(['call', 'harness', path.join(out, 'referenced.jsonl'), '--config', writeConfig('answer.yaml', endpoints), '--output', path.join(out, 'answered.jsonl'), '--evidence-dir', path.join(evidence, 'answer')])
  for (const [name, summary] of Object.entries(calls)) say(`  ${name.padEnd(9)} ${summary.rows} rows, ${summary.completed} completed, ${summary.failed} failed; evidence ${path.relative(out, summary.evidence_dir)}/`)

  say('judge and filter (examples/sql/judge.ts): answered.jsonl -> judged.jsonl')
  const judged = judgeFile(path.join(out, 'answered.jsonl'), path.join(out, 'judged.jsonl'))

  const built = await step(['tasks', 'build', path.join(out, 'judged.jsonl'), '--spec', writeConfig('task-spec.yaml', {}), '--output', path.join(out, 'scenarios.jsonl')])
  const exported = await step(['tasks', 'export', path.join(out, 'scenarios.jsonl'), '--output', path.join(out, 'gym-tasks.jsonl')])

  const sqlStats = await getJson(`${sql.url}/stats`)
  const agentStats = await getJson(`${agent.url}/stats`)
  const modelStats = model ? await getJson(`${model.url.replace(/\/v1$/u, '')}/stats`) : undefined

  const byCandidate = new Map<string, any>()
  for (const row of judged) {
    const seen = byCandidate.get(row.candidate.id) ?? {id: row.candidate.id, question: row.question, sql: row.candidate.sql, accepted: row.judge.accepted, reasons: []}
    seen.reasons.push(...row.judge.reasons.map((r: string) => `${row.database_variant}: ${r}`))
    byCandidate.set(row.candidate.id, seen)
  }
  const accepted = [...byCandidate.values()].filter((c) => c.accepted)
  const rejected = [...byCandidate.values()].filter((c) => !c.accepted)
  const tasks = readJsonl(path.join(out, 'gym-tasks.jsonl'))
  Object.assign(report, {
    calls: Object.fromEntries(Object.entries(calls).map(([k, s]) => [k, {rows: s.rows, completed: s.completed, failed: s.failed, evidence_dir: s.evidence_dir}])),
    accepted: accepted.map((c) => ({id: c.id, question: c.question, sql: c.sql})),
    rejected: rejected.map((c) => ({id: c.id, reasons: c.reasons})),
    judged: path.join(out, 'judged.jsonl'),
    scenarios: {path: built.output, bundles: built.bundles, skipped: built.skipped},
    export: {path: exported.output, tasks: tasks.length},
    evidence_dir: evidence,
    sessions: {sql_service: sqlStats, agent: agentStats},
    model_requests: modelStats?.requests ?? null,
  })

  say()
  say(`accepted ${accepted.length} of ${byCandidate.size} candidates:`)
  for (const c of accepted) say(`  ${c.id}  ${c.question}  ${c.sql}`)
  say('rejected:')
  for (const c of rejected) say(`  ${c.id}  ${c.reasons.join('; ')}`)
  say(`evidence:  ${evidence}/{execution,reference,answer}/ (attempts/, journal.jsonl, summary.json)`)
  say(`export:    ${exported.output} (${tasks.length} Gym tasks; scenarios in ${built.output})`)
  say(`sessions:  SQL service ${sqlStats.active_sessions} active (${sqlStats.sessions_opened} opened), agent ${agentStats.active_sessions} active${modelStats ? `; the scripted model answered ${modelStats.requests} requests` : ''}`)
  if (sqlStats.active_sessions !== 0 || agentStats.active_sessions !== 0) throw new StepFailed('sessions were left open')
  if (tasks.length !== accepted.length) throw new StepFailed(`${tasks.length} tasks exported for ${accepted.length} accepted candidates`)
} catch (error) {
  failure = error instanceof StepFailed ? error.message : String((error as Error).stack ?? error)
} finally {
  for (const s of services.reverse()) await stopService(s)
  if (services.length > 0) say(`stopped ${services.map((s) => `${s.name} (pid ${s.pid})`).join(', ')}`)
  report.stopped = services.map((s) => ({name: s.name, pid: s.pid, exit: s.child.exitCode ?? s.child.signalCode}))
}
report.ok = failure === undefined
if (failure) report.error = failure
if (quiet) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`)
else if (failure) process.stderr.write(`example failed: ${failure}\n(work dir kept: ${out})\n`)
process.exit(failure ? 1 : 0)
