import {execa} from 'execa'
import {readdir, readFile, stat, writeFile} from 'node:fs/promises'
import path from 'node:path'
import {afterAll, afterEach, beforeAll, describe, expect, it} from 'vitest'

import {type GymFixture, startGymFixture, startRecorder} from '../fixtures/call/services.js'
import {readAttempts, tempDir} from '../helpers/call.js'
import {repoRoot, runCli} from '../helpers/cli.js'

let gym: GymFixture
let proxy: Awaited<ReturnType<typeof startRecorder>>

beforeAll(async () => {
  gym = await startGymFixture()
  proxy = await startRecorder()
}, 300_000)
afterAll(async () => {
  await gym.close()
  await proxy.close()
})
afterEach(() => {
  expect(gym.liveSessions()).toBe(0)
  gym.reset()
  gym.setGate(false)
})

const configYaml = (extra = '') => `name: execution
endpoint: ${gym.url}
route: /execute
row_id_column: id
request_columns: {sql: sql, row: id, fault: fault}
session:
  initialize: [{route: /seed_session, response_headers: {X-Session-Token: token}}]
  cleanup: [{route: /cleanup}]
  cleanup_timeout: 5
${extra}`

async function workspace(rows: object[], extra = ''): Promise<{dir: string; rows: string; config: string; out: string; evidence: string}> {
  const dir = await tempDir('gr-call-e2e-')
  const files = {dir, rows: path.join(dir, 'rows.jsonl'), config: path.join(dir, 'execution.yaml'), out: path.join(dir, 'executed.jsonl'), evidence: path.join(dir, 'runs', 'exec')}
  await writeFile(files.rows, rows.map((r) => JSON.stringify(r)).join('\n') + '\n')
  await writeFile(files.config, configYaml(extra))
  return files
}

const sqlRow = (id: string, fault: string | null = null) => ({id, sql: 'select count(*) as n from items', fault})

describe('gymrecipe call (CLI)', () => {
  it('documents both commands with examples and exit statuses', async () => {
    for (const kind of ['resource', 'harness']) {
      const help = await runCli(['call', kind, '--help'])
      expect(help.exitCode).toBe(0)
      expect(help.stdout).toContain(`$ gymrecipe call ${kind} rows.jsonl --config`)
      expect(help.stdout).toContain('EXIT STATUS')
      expect(help.stdout).toContain('--resume')
      expect(help.stdout).toContain('--dry-run')
    }
  })

  it('--dry-run validates config and rows and builds requests without calling or writing anything', async () => {
    const ws = await workspace([sqlRow('a'), {id: 'b'}])
    const result = await runCli(['call', 'resource', ws.rows, '--config', ws.config, '--output', ws.out, '--evidence-dir', ws.evidence, '--dry-run', '--json'])
    expect(result.exitCode).toBe(0)
    expect(result.json).toMatchObject({dry_run: true, rows: 2, invalid_request_count: 1, first_request: {url: `${gym.url}/execute`, body: {sql: 'select count(*) as n from items', row: 'a', fault: null}}})
    expect(result.json.invalid_requests[0]).toMatchObject({line: 2, row_id: 'b', reason: 'missing source path: sql'})
    expect(gym.requests).toHaveLength(0)
    await expect(stat(ws.out)).rejects.toThrow()
    await expect(stat(ws.evidence)).rejects.toThrow()
  })

  it('reports a bad config with file, pointer, line and hint, exit 2', async () => {
    const ws = await workspace([sqlRow('a')], 'max_parallel_requests: 0\n')
    const json = await runCli(['call', 'resource', ws.rows, '--config', ws.config, '--dry-run', '--json'])
    expect(json.exitCode).toBe(2)
    expect(json.json.error).toMatchObject({code: 'E_CALL_CONFIG_INVALID', location: {file: ws.config, pointer: '/max_parallel_requests', line: 10}})
    const human = await runCli(['call', 'resource', ws.rows, '--config', ws.config, '--dry-run'])
    expect(human.exitCode).toBe(2)
    expect(human.stderr).toContain(`${ws.config}:10:`)
    expect(human.stderr).toContain('/max_parallel_requests (line 10)')
    expect(human.stderr).toContain('row lifecycles')
  })

  it('reports a rows file that is not JSONL with its line, exit 2', async () => {
    const ws = await workspace([sqlRow('a')])
    await writeFile(ws.rows, '{"id": "a", "sql": "select 1"}\n{"id": oops}\n')
    const result = await runCli(['call', 'resource', ws.rows, '--config', ws.config, '--dry-run'])
    expect(result.exitCode).toBe(2)
    expect(result.stderr).toContain(`${ws.rows}:2: not valid JSON`)
  })

  it('runs end to end: --json summary only, output renamed into place, proxies ignored, secrets nowhere', async () => {
    const ws = await workspace([sqlRow('a'), sqlRow('b'), sqlRow('c', '5xx')], 'bearer_token_env: GYM_TOKEN\n')
    const env = {
      GYM_TOKEN: 'cli-bearer-token-xyz',
      HTTP_PROXY: proxy.url,
      http_proxy: proxy.url,
      HTTPS_PROXY: proxy.url,
      ALL_PROXY: proxy.url,
      NODE_USE_ENV_PROXY: '1',
    }
    const result = await runCli(['call', 'resource', ws.rows, '--config', ws.config, '--output', ws.out, '--evidence-dir', ws.evidence, '--json'], {env})
    expect(result.exitCode).toBe(1)
    // Node 22 itself warns that the EnvHttpProxyAgent NODE_USE_ENV_PROXY asks for is experimental; nothing else may reach stderr.
    expect(result.stderr.replace(/^\(node:\d+\) \[UNDICI-EHPA\] Warning: EnvHttpProxyAgent is experimental[^\n]*\n\(Use `node --trace-warnings[^\n]*\n?/, '')).toBe('')
    expect(result.json).toMatchObject({command: 'resource', rows: 3, finished: 3, completed: 2, failed: 1, failure_kinds: {server_failed: 1}, interrupted: false})
    expect(proxy.hits()).toBe(0)
    expect(gym.calls('/execute')).toBe(3)
    const lines = (await readFile(ws.out, 'utf8')).trim().split('\n')
    expect(lines.map((l) => JSON.parse(l).id)).toEqual(['a', 'b', 'c'])
    expect((await readdir(ws.dir)).filter((f) => f.endsWith('.tmp'))).toEqual([])
    for (const text of [result.stdout, result.stderr, await readFile(ws.out, 'utf8'), JSON.stringify(await readAttempts(ws.evidence))]) {
      expect(text).not.toContain('cli-bearer-token-xyz')
      expect(text).not.toContain('init-secret-')
    }
    const human = await runCli(['call', 'resource', ws.rows, '--config', ws.config, '--output', ws.out, '--evidence-dir', `${ws.evidence}-2`], {env})
    expect(human.stdout).toContain('call resource execution: 3 rows, 2 completed, 1 failed (server_failed 1)')
  })

  it('exits 2 naming the variable when bearer_token_env is not set', async () => {
    const ws = await workspace([sqlRow('a')], 'bearer_token_env: GYM_TOKEN_NOT_SET\n')
    const result = await runCli(['call', 'resource', ws.rows, '--config', ws.config, '--output', ws.out, '--evidence-dir', ws.evidence, '--json'])
    expect(result.exitCode).toBe(2)
    expect(result.json.error).toMatchObject({code: 'E_CALL_TOKEN_MISSING'})
    expect(result.json.error.message).toContain('GYM_TOKEN_NOT_SET')
    expect(gym.requests).toHaveLength(0)
  })

  it('--dry-run previews without the bearer token, names the missing variable and exits 2 as the real run would', async () => {
    const ws = await workspace([sqlRow('a')], 'bearer_token_env: GYM_TOKEN_NOT_SET\n')
    const json = await runCli(['call', 'resource', ws.rows, '--config', ws.config, '--dry-run', '--json'])
    expect(json.exitCode).toBe(2)
    expect(json.json).toMatchObject({dry_run: true, rows: 1, first_request: {url: `${gym.url}/execute`}, missing_tokens: [{name: 'GYM_TOKEN_NOT_SET', pointer: '/bearer_token_env', endpoint: gym.url}]})
    expect(json.envelope).toMatchObject({status: 'bad-input', error: {code: 'E_TOKEN_MISSING', message: expect.stringContaining('bearer token variable(s) not set: ')}})
    const human = await runCli(['call', 'resource', ws.rows, '--config', ws.config, '--dry-run'])
    expect(human.exitCode).toBe(2)
    expect(human.stdout).toContain('first request: POST')
    expect(human.stderr).toContain(`the real run would stop: environment variable GYM_TOKEN_NOT_SET (/bearer_token_env) is not set or empty; export GYM_TOKEN_NOT_SET=<token> (sent only to ${gym.url})`)
    const set = await runCli(['call', 'resource', ws.rows, '--config', ws.config, '--dry-run', '--json'], {env: {GYM_TOKEN_NOT_SET: 'dry-run-token-123'}})
    expect(set.exitCode).toBe(0)
    expect(set.json.missing_tokens).toEqual([])
    expect(set.stdout).not.toContain('dry-run-token-123')
    expect(gym.requests).toHaveLength(0)
  })

  it('Ctrl+C: in-flight rows clean up, write evidence, exit 130; --resume completes without re-calling finished rows', async () => {
    const rows = [sqlRow('r0'), sqlRow('r1'), sqlRow('r2'), sqlRow('r3', 'gate'), sqlRow('r4', 'gate'), sqlRow('r5'), sqlRow('r6'), sqlRow('r7')]
    const ws = await workspace(rows, 'max_parallel_requests: 2\ntimeout: 60\n')
    const args = [path.join(repoRoot, 'bin', 'run.js'), 'call', 'resource', ws.rows, '--config', ws.config, '--output', ws.out, '--evidence-dir', ws.evidence]
    const child = execa(process.execPath, args, {cwd: repoRoot, reject: false, env: {NO_COLOR: '1'}})
    // wait until both slots hold a gated row
    const deadline = Date.now() + 30_000
    while (gym.callsFor('/execute', 'r3') + gym.callsFor('/execute', 'r4') < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    expect(gym.liveSessions()).toBe(2)
    child.kill('SIGINT')
    const result = await child
    expect(result.exitCode).toBe(130)
    expect(result.stderr).toContain('interrupted: 3 of 8 rows finished; 2 in-flight rows were cancelled after cleanup, 3 not started')
    expect(result.stderr).toContain('--resume')
    expect(gym.liveSessions()).toBe(0)
    expect(gym.calls('/cleanup')).toBe(5)
    await expect(stat(ws.out)).rejects.toThrow()
    const attempts = await readAttempts(ws.evidence)
    const cancelled = attempts.filter((a) => a.status === 'cancelled')
    expect(cancelled.map((a) => a.row_id).sort()).toEqual(['r3', 'r4'])
    for (const a of cancelled) expect(a.lifecycle.at(-1)).toMatchObject({stage: 'cleanup', http_status: 200})

    gym.reset()
    gym.setGate(true)
    const resumed = await runCli(['call', 'resource', ws.rows, '--config', ws.config, '--output', ws.out, '--evidence-dir', ws.evidence, '--resume', '--json'])
    expect(resumed.exitCode).toBe(0)
    expect(resumed.json).toMatchObject({rows: 8, finished: 8, resumed: 3, completed: 8, interrupted: false})
    for (const id of ['r0', 'r1', 'r2']) expect(gym.callsFor('/execute', id)).toBe(0)
    for (const id of ['r3', 'r4', 'r5', 'r6', 'r7']) expect(gym.callsFor('/execute', id)).toBe(1)
    const out = (await readFile(ws.out, 'utf8')).trim().split('\n').map((l) => JSON.parse(l))
    expect(out.map((r) => r.id)).toEqual(['r0', 'r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7'])
    expect(out.every((r) => r.execution.status === 'completed')).toBe(true)
  })

  it('SIGTERM is handled like Ctrl+C', async () => {
    const ws = await workspace([sqlRow('t0', 'gate'), sqlRow('t1')], 'max_parallel_requests: 1\n')
    const child = execa(process.execPath, [path.join(repoRoot, 'bin', 'run.js'), 'call', 'resource', ws.rows, '--config', ws.config, '--output', ws.out, '--evidence-dir', ws.evidence, '--json'], {cwd: repoRoot, reject: false})
    const deadline = Date.now() + 30_000
    while (gym.callsFor('/execute', 't0') < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    child.kill('SIGTERM')
    const result = await child
    expect(result.exitCode).toBe(130)
    expect(JSON.parse(String(result.stdout)).result).toMatchObject({interrupted: true, finished: 0, cancelled: 1, not_started: 1})
    expect(gym.liveSessions()).toBe(0)
  })

  it('a killed run (SIGKILL) loses no finished row: --resume calls only rows missing from the journal', async () => {
    const rows = Array.from({length: 40}, (_, i) => sqlRow(`k${i}`, i >= 10 ? 'gate' : null))
    const ws = await workspace(rows, 'max_parallel_requests: 4\n')
    // stateless: a killed process cannot clean up, so this scenario uses no sessions
    await writeFile(ws.config, configYaml('max_parallel_requests: 4\n').replace(/session:[\s\S]*cleanup_timeout: 5\n/u, ''))
    const child = execa(process.execPath, [path.join(repoRoot, 'bin', 'run.js'), 'call', 'resource', ws.rows, '--config', ws.config, '--output', ws.out, '--evidence-dir', ws.evidence], {cwd: repoRoot, reject: false})
    const journalPath = path.join(ws.evidence, 'journal.jsonl')
    const deadline = Date.now() + 30_000
    const journaled = async () => (await readFile(journalPath, 'utf8').catch(() => '')).trim().split('\n').length - 1
    while ((await journaled()) < 10 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    child.kill('SIGKILL')
    const killed = await child
    expect(killed.signal).toBe('SIGKILL')
    const finished = (await readFile(journalPath, 'utf8'))
      .trim()
      .split('\n')
      .slice(1)
      .map((l) => JSON.parse(l).columns.execution.row_id)
    expect(finished.length).toBeGreaterThanOrEqual(10)

    gym.reset()
    gym.setGate(true)
    const resumed = await runCli(['call', 'resource', ws.rows, '--config', ws.config, '--output', ws.out, '--evidence-dir', ws.evidence, '--resume', '--json'])
    expect(resumed.exitCode).toBe(0)
    expect(resumed.json).toMatchObject({rows: 40, finished: 40, resumed: finished.length, completed: 40})
    for (const id of finished) expect(gym.callsFor('/execute', id)).toBe(0)
    expect(gym.calls('/execute')).toBe(40 - finished.length)
    const out = (await readFile(ws.out, 'utf8')).trim().split('\n').map((l) => JSON.parse(l))
    expect(out.map((r) => r.id)).toEqual(rows.map((r) => r.id))
  })
})

describe('one run per evidence folder', () => {
  const run = (ws: {rows: string; config: string; out: string; evidence: string}, ...extra: string[]) =>
    execa(process.execPath, [path.join(repoRoot, 'bin', 'run.js'), 'call', 'resource', ws.rows, '--config', ws.config, '--output', ws.out, '--evidence-dir', ws.evidence, '--json', ...extra], {cwd: repoRoot, reject: false})
  const stateless = (parallel: number) => configYaml(`max_parallel_requests: ${parallel}\n`).replace(/session:[\s\S]*cleanup_timeout: 5\n/u, '')

  /** Start runs together; the one holding the folder is gated until every other has exited. */
  async function race(ws: Awaited<ReturnType<typeof workspace>>, count: number, extra: string[]) {
    const runs = Array.from({length: count}, () => run(ws, ...extra))
    const settled: Array<Awaited<(typeof runs)[number]> | undefined> = Array.from({length: count})
    runs.forEach((r, i) => void r.then((done) => (settled[i] = done)))
    const deadline = Date.now() + 60_000
    while (settled.filter(Boolean).length < count - 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    gym.setGate(true)
    const results = await Promise.all(runs)
    return results.map((r, i) => ({pid: runs[i].pid, exitCode: r.exitCode, json: JSON.parse(String(r.stdout) || 'null'), stderr: String(r.stderr)}))
  }

  it('two fresh runs started together: one calls every row once, the other is refused at once naming the holder (exit 3)', async () => {
    const rows = Array.from({length: 400}, (_, i) => sqlRow(`f${i}`, i % 50 === 49 ? 'gate' : null))
    const ws = await workspace(rows)
    await writeFile(ws.config, stateless(16))
    const results = await race(ws, 2, [])
    const winners = results.filter((r) => r.exitCode === 0)
    const refused = results.filter((r) => r.exitCode !== 0)
    expect(winners).toHaveLength(1)
    expect(refused).toHaveLength(1)
    expect(refused[0].exitCode, refused[0].stderr).toBe(3)
    expect(refused[0].json.error.code).toBe('E_DIR_LOCKED')
    expect(refused[0].json.error.message).toContain(`in use by pid ${winners[0].pid}`)
    for (const row of rows) expect(gym.callsFor('/execute', row.id), row.id).toBe(1)
    expect(gym.calls('/execute')).toBe(rows.length)
    // the folder is free again once its run has finished
    expect(await readdir(ws.evidence)).not.toContain('.gymrecipe.lock')
  })

  it('after a crash, three --resume runs started together call each unfinished row exactly once; the crashed run\'s lock does not block them', async () => {
    const rows = Array.from({length: 1500}, (_, i) => sqlRow(`r${i}`, i >= 300 && i % 100 === 0 ? 'gate' : null))
    const ws = await workspace(rows)
    await writeFile(ws.config, stateless(32))
    const crashed = run(ws)
    const journalPath = path.join(ws.evidence, 'journal.jsonl')
    const journaled = async () => (await readFile(journalPath, 'utf8').catch(() => '')).trim().split('\n').length - 1
    const deadline = Date.now() + 30_000
    while ((await journaled()) < 200 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    crashed.kill('SIGKILL')
    expect((await crashed).signal).toBe('SIGKILL')
    // the dead run's lock is left behind, naming a process that no longer exists
    expect(JSON.parse(await readFile(path.join(ws.evidence, '.gymrecipe.lock'), 'utf8')).pid).toBe(crashed.pid)
    const finished = new Set(
      (await readFile(journalPath, 'utf8'))
        .trim()
        .split('\n')
        .slice(1)
        .flatMap((l) => {
          try {
            return [JSON.parse(l).columns.execution.row_id as string]
          } catch {
            return [] // a line the kill cut short
          }
        }),
    )
    expect(finished.size).toBeGreaterThanOrEqual(200)

    gym.reset()
    const results = await race(ws, 3, ['--resume'])
    const winners = results.filter((r) => r.exitCode === 0)
    expect(winners, results.map((r) => `${r.exitCode} ${r.stderr}`).join('\n')).toHaveLength(1)
    expect(winners[0].json.result).toMatchObject({rows: 1500, finished: 1500, completed: 1500, resumed: finished.size})
    for (const loser of results.filter((r) => r.exitCode !== 0)) {
      expect(loser.exitCode).toBe(3)
      expect(loser.json.error).toMatchObject({code: 'E_DIR_LOCKED', details: {pid: winners[0].pid}})
    }
    for (const row of rows) expect(gym.callsFor('/execute', row.id), row.id).toBe(finished.has(row.id) ? 0 : 1)
    expect(gym.calls('/execute')).toBe(1500 - finished.size)
    const out = (await readFile(ws.out, 'utf8')).trim().split('\n').map((l) => JSON.parse(l))
    expect(out.map((r) => r.id)).toEqual(rows.map((r) => r.id))
  }, 120_000)
})
