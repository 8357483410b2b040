/**
 * A restart-safe Pi agent service in the shape of a Gym harness: the route `gymrecipe call
 * harness` calls, plus session initialize and cleanup. Each row (a conversation) keeps its own
 * workspace and its own Pi session on disk, so completed turns and files survive a restart of
 * this service. Loopback only.
 *
 *   node --import tsx examples/pi-service/service.ts --state-dir DIR --model-endpoint URL/v1 --model NAME
 *        [--api-key-env NAME] [--port 0] [--turn-timeout 300]
 *
 *   POST /sessions/initialize {"row_id": "..."}  -> {"token", "row_id", "completed_turns"}; opens
 *        (or creates) the row; one holder at a time (409 otherwise)
 *   POST /v1/responses {"input": "..."}          with X-Session-Token: one Pi turn in the row's
 *        workspace, continuing its Pi session; answers a Responses object (function_call and
 *        function_call_output items for Pi's tool use, then the final message). A turn the
 *        service had to end is answered `status: "incomplete"`, `incomplete_details.reason:
 *        "interrupted"`, and logged so; it is never retried
 *   POST /sessions/cleanup                        ends the row's lease and any Pi process of it
 *        still running; the workspace and history stay
 *   GET  /rows/<row_id>                           the row's turn log
 *   GET  /stats  -> {"active_sessions", "active_pi_processes", "rows", "turns", "fenced_at_start"}
 * Local file tools are not a sandbox: Pi's read, write, edit and bash act with this service's
 * user rights anywhere on the machine; rows are kept apart by working directory only.
 * It prints one line {"url", "pid", "pi_version"} once listening; SIGTERM or SIGINT stops it
 * after ending every running turn.
 */
import type {ChildProcess} from 'node:child_process'
import {randomBytes} from 'node:crypto'
import {writeFileSync} from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import {parseArgs} from 'node:util'
import {announceAndStopOnSignals, isMain, reply, serveJson} from '../lib/json-service.js'
import {findPi, runPiTurn, type PiInstall} from './pi-runner.js'
import {endProcessGroup, processStartTime, ROW_ID, RowStore} from './row-store.js'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const PROVIDER = 'gym'

interface Lease {
  rowId: string
  /** the Pi process of the turn in progress */
  running?: ChildProcess
  interruptedBy?: string
}

export interface ServiceOptions {
  stateDir: string
  modelEndpoint: string
  model: string
  apiKeyEnv?: string
  port?: number
  turnTimeoutSeconds?: number
  modulesDir?: string
}

export async function startPiService(options: ServiceOptions) {
  const pi: PiInstall = findPi(options.modulesDir ?? path.join(HERE, 'node_modules'))
  const store = new RowStore(options.stateDir)
  // Pi reads its models from the agent directory; a key is referenced by name, never written down
  writeFileSync(
    path.join(store.agentDir, 'models.json'),
    JSON.stringify({providers: {[PROVIDER]: {baseUrl: options.modelEndpoint, api: 'openai-completions', apiKey: options.apiKeyEnv ? `$${options.apiKeyEnv}` : 'none', models: [{id: options.model, contextWindow: 32000, maxTokens: 4096}]}}}, null, 2),
  )
  const fenced = await store.fenceStale()
  const leases = new Map<string, Lease>()
  const running = new Set<ChildProcess>()
  let stopping = false
  let inFlight = 0

  const turn = async (lease: Lease, prompt: string) => {
    const paths = store.rowPaths(lease.rowId)
    const earlier = store.turns(lease.rowId)
    const number = earlier.length + 1
    const interruptedBefore = earlier.filter((t) => t.status === 'interrupted').map((t) => t.turn)
    const {child, done} = runPiTurn({
      pi,
      agentDir: store.agentDir,
      workspace: paths.workspace,
      sessionDir: paths.sessions,
      sessionId: lease.rowId,
      provider: PROVIDER,
      model: options.model,
      prompt,
      onStart: (started) => {
        // recorded before anything else, so a crash from here on leaves a trail to fence by
        store.recordRunning({pid: started.pid!, start_time: processStartTime(started.pid!) ?? '', row_id: lease.rowId, turn: number, started_at: new Date().toISOString()})
        store.turnStarted(lease.rowId, number, started.pid!)
      },
    })
    running.add(child)
    lease.running = child
    const timer = setTimeout(() => interrupt(lease, `the turn ran longer than ${options.turnTimeoutSeconds ?? 300} s`), (options.turnTimeoutSeconds ?? 300) * 1000)
    const result = await done
    clearTimeout(timer)
    // the leader is gone; end whatever its tools left in the group before calling the turn over
    await endProcessGroup(child.pid!)
    running.delete(child)
    lease.running = undefined
    store.clearRunning(child.pid!)
    const metadata = {row_id: lease.rowId, turn: String(number), pi_session_id: result.piSessionId ?? lease.rowId, ...(interruptedBefore.length > 0 ? {interrupted_turns: interruptedBefore.join(',')} : {})}
    const base = {id: `resp_${randomBytes(12).toString('hex')}`, object: 'response', created_at: Math.floor(Date.now() / 1000), model: options.model, metadata}
    if (lease.interruptedBy !== undefined) {
      const reason = lease.interruptedBy
      lease.interruptedBy = undefined
      store.turnEnded(lease.rowId, number, 'interrupted', reason)
      return {...base, status: 'incomplete', incomplete_details: {reason: 'interrupted'}, output: result.output, error: null, gym_pi: {interrupted: reason}}
    }
    if (result.exitCode === 0 && result.answer !== undefined && !result.aborted) {
      store.turnEnded(lease.rowId, number, 'completed')
      return {...base, status: 'completed', output: result.output}
    }
    const reason = `Pi exited ${result.signal ?? result.exitCode} (stop reason ${result.stopReason ?? 'none'}): ${result.stderr.trim().split('\n').slice(-3).join(' | ').slice(0, 500)}`
    store.turnEnded(lease.rowId, number, 'failed', reason)
    return {...base, status: 'failed', error: {code: 'pi_failed', message: reason}, output: result.output}
  }

  const interrupt = (lease: Lease, reason: string) => {
    if (!lease.running) return
    lease.interruptedBy = reason
    void endProcessGroup(lease.running.pid!)
  }

  const service = await serveJson(async ({method, route, headers, body}) => {
    inFlight++
    try {
      if (method === 'GET' && route === '/stats') {
        return reply(200, {active_sessions: leases.size, active_pi_processes: running.size, rows: store.rows().length, turns: store.rows().reduce((n, r) => n + store.turns(r).length, 0), fenced_at_start: {ended_processes: fenced.ended.length, interrupted_turns: fenced.interrupted}})
      }
      if (method === 'GET' && route.startsWith('/rows/')) {
        const rowId = decodeURIComponent(route.slice('/rows/'.length))
        if (!ROW_ID.test(rowId) || !store.rows().includes(rowId)) return reply(404, {detail: `no row ${JSON.stringify(rowId)}`})
        return reply(200, {row_id: rowId, turns: store.turns(rowId)})
      }
      if (method !== 'POST') return reply(405, {detail: `${method} ${route} is not served`})
      const token = headers['x-session-token']
      const lease = typeof token === 'string' ? leases.get(token) : undefined
      switch (route) {
        case '/sessions/initialize': {
          if (stopping) return reply(503, {detail: 'the service is stopping'})
          const rowId = body?.row_id
          if (typeof rowId !== 'string' || !ROW_ID.test(rowId)) return reply(422, {detail: 'row_id must be 1-128 characters: letters, digits, ".", "_" or "-", starting with a letter or digit'})
          if ([...leases.values()].some((l) => l.rowId === rowId)) return reply(409, {detail: `row ${rowId} is held by another caller`})
          const {existed} = store.openRow(rowId)
          const own = randomBytes(16).toString('hex')
          leases.set(own, {rowId})
          return reply(200, {token: own, row_id: rowId, resumed: existed, completed_turns: store.turns(rowId).filter((t) => t.status === 'completed').length})
        }
        case '/v1/responses': {
          if (!lease) return reply(401, {detail: 'initialize a session first and send its X-Session-Token'})
          if (stopping) return reply(503, {detail: 'the service is stopping'})
          if (lease.running) return reply(409, {detail: `row ${lease.rowId} already has a turn in progress`})
          const prompt = typeof body?.input === 'string' ? body.input : Array.isArray(body?.input) ? body.input.map((m: any) => (typeof m?.content === 'string' ? m.content : '')).join('\n') : ''
          if (prompt.trim() === '') return reply(422, {detail: 'input must be the turn prompt (a string or a list of messages)'})
          return reply(200, await turn(lease, prompt))
        }
        case '/sessions/cleanup': {
          if (!lease) return reply(401, {detail: 'cleanup needs the X-Session-Token of a live session'})
          if (lease.running) interrupt(lease, 'the caller cleaned up during the turn')
          leases.delete(token as string)
          return reply(200, {released: lease.rowId})
        }
        default:
          return reply(404, {detail: `no route ${route}`})
      }
    } finally {
      inFlight--
    }
  }, options.port)

  /** End every running turn (answered as interrupted), let callers clean up, then close. */
  const close = async () => {
    stopping = true
    for (const lease of leases.values()) interrupt(lease, 'the service was stopped during the turn')
    const deadline = Date.now() + 5000
    while ((running.size > 0 || inFlight > 0 || leases.size > 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    await service.close()
  }
  return {url: service.url, pi, fenced, close}
}

if (isMain(import.meta.url)) {
  const {values} = parseArgs({options: {'state-dir': {type: 'string'}, 'model-endpoint': {type: 'string'}, model: {type: 'string'}, 'api-key-env': {type: 'string'}, port: {type: 'string', default: '0'}, 'turn-timeout': {type: 'string', default: '300'}}})
  if (!values['state-dir'] || !values['model-endpoint'] || !values.model) {
    process.stderr.write('usage: service.ts --state-dir DIR --model-endpoint URL/v1 --model NAME [--api-key-env NAME] [--port 0] [--turn-timeout 300]\n')
    process.exit(2)
  }
  const service = await startPiService({stateDir: values['state-dir'], modelEndpoint: values['model-endpoint'], model: values.model, apiKeyEnv: values['api-key-env'], port: Number(values.port), turnTimeoutSeconds: Number(values['turn-timeout'])})
  announceAndStopOnSignals(service, {pi_version: service.pi.version, fenced: service.fenced})
}
