import {execa} from 'execa'
import {mkdtemp, readdir, readFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {describe, expect, it} from 'vitest'

import {judgeRow, judgeRows} from '../../examples/sql/judge.js'
import {repoRoot} from '../helpers/cli.js'
import {pidAlive} from '../helpers/processes.js'

const readJsonl = async (file: string) =>
  (await readFile(file, 'utf8'))
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l))


describe('examples/sql: the execution-grounded SQL workflow', () => {
  it('runs end to end with one command: judged, filtered, exported, no session left, services stopped', async () => {
    const out = path.join(await mkdtemp(path.join(os.tmpdir(), 'gr-example-sql-')), 'work')
    const run = await execa(process.execPath, ['--import', 'tsx', 'examples/sql/run.ts', '--out', out, '--json'], {cwd: repoRoot, reject: false})
    expect(run.stderr).toBe('')
    expect(run.exitCode).toBe(0)
    const report = JSON.parse(run.stdout)
    expect(report.ok).toBe(true)

    // every call completed; SQL errors stay inside the responses for the judge
    for (const name of ['execution', 'reference', 'answer']) expect(report.calls[name]).toMatchObject({rows: 12, completed: 12, failed: 0})
    expect(report.accepted.map((c: any) => c.id)).toEqual(['c1a', 'c2a', 'c3a'])
    const reasons = Object.fromEntries(report.rejected.map((c: any) => [c.id, c.reasons.join(' | ')]))
    expect(Object.keys(reasons)).toEqual(['c1b', 'c2b', 'c3b'])
    expect(reasons.c1b).toContain('variant: result differs from the reference on variant: [[2]] instead of [[3]]')
    expect(reasons.c1b).not.toContain('original:')
    expect(reasons.c2b).toMatch(/original: candidate: SQLite: near "order": syntax error/u)
    expect(reasons.c3b).toContain('[["Dan"]] instead of [["Ben"]]')

    // the evidence of each call: a journal line per row after its header, attempts with the native exchange
    for (const name of ['execution', 'reference', 'answer']) {
      const dir = path.join(report.evidence_dir, name)
      expect(await readJsonl(path.join(dir, 'journal.jsonl'))).toHaveLength(13)
      const segments = await readdir(path.join(dir, 'attempts'))
      const attempts = (await Promise.all(segments.map((s) => readJsonl(path.join(dir, 'attempts', s))))).flat()
      expect(attempts).toHaveLength(12)
      expect(attempts.every((a) => a.status === 'completed')).toBe(true)
      const text = (await Promise.all(segments.map((s) => readFile(path.join(dir, 'attempts', s), 'utf8')))).join('')
      // session tokens (32 hex digits) never reach the evidence
      expect(text).not.toMatch(/\b[0-9a-f]{32}\b/u)
    }
    const answered = await readJsonl(path.join(out, 'answered.jsonl'))
    const lisbon = answered.find((r) => r.row_id === 'c1a@variant')
    expect(lisbon.answer).toBe('3 customers live in Lisbon.')
    expect(JSON.parse(lisbon.harness_evidence.tool_trace_json).map((item: any) => item.type)).toEqual(['function_call', 'function_call_output'])

    // one Gym task per accepted candidate, with its result as ground truth and the evidence linked
    const tasks = await readJsonl(report.export.path)
    expect(tasks.map((t) => t.expected_sql)).toEqual(report.accepted.map((c: any) => c.sql))
    expect(tasks.map((t) => t.expected_result)).toEqual([[[2]], [[605.5]], [['Dan']]])
    for (const task of tasks) {
      expect(task.responses_create_params.input[0].role).toBe('user')
      expect(task.id).toBe(task._ng_task_index)
      expect(task._dd_provenance['execution.artifact']).toMatch(/^attempts\/.+\.jsonl:\d+$/u)
      expect(task._dd_provenance.database_variant).toBe('original')
    }

    // zero sessions at the end, on both services; every service stopped by its pid
    expect(report.sessions.sql_service).toMatchObject({active_sessions: 0, sessions_opened: 24})
    expect(report.sessions.agent.active_sessions).toBe(0)
    expect(report.stopped).toHaveLength(3)
    for (const s of report.stopped) expect(pidAlive(s.pid)).toBe(false)
  })

  it('reports the failed step, exits 1 and still stops its services when the model cannot be reached', async () => {
    const out = path.join(await mkdtemp(path.join(os.tmpdir(), 'gr-example-sql-')), 'work')
    // nothing listens on port 9: every harness row fails (the agent answers 502), so the run stops there
    const run = await execa(process.execPath, ['--import', 'tsx', 'examples/sql/run.ts', '--out', out, '--json', '--model-endpoint', 'http://127.0.0.1:9/v1', '--model', 'none'], {cwd: repoRoot, reject: false})
    expect(run.exitCode).toBe(1)
    const report = JSON.parse(run.stdout)
    expect(report.ok).toBe(false)
    expect(report.error).toMatch(/gymrecipe call harness exited 1 \(E_ROWS_FAILED: 12 row\(s\) failed\): .*"server_failed":12/u)
    expect(report.stopped.map((s: any) => s.name)).toEqual(['SQL agent', 'toy SQL service'])
    for (const s of report.stopped) expect(pidAlive(s.pid)).toBe(false)
  })
})

describe('examples/sql judge', () => {
  const completed = (response: unknown) => ({status: 'completed', response_json: JSON.stringify(response)})
  const row = (over: Record<string, unknown> = {}) => ({
    candidate: {id: 'c'},
    database_variant: 'original',
    execution: completed({rows: [[1], [2]]}),
    reference: completed({rows: [[2], [1]]}),
    answer: 'the answer is 1',
    harness_evidence: {status: 'completed'},
    ...over,
  })

  it('accepts equal rows in another order and rejects each broken part with its reason', () => {
    expect(judgeRow(row())).toEqual({accepted_here: true, reasons: []})
    expect(judgeRow(row({execution: {status: 'failed', failure_kind: 'server_failed', failure_reason: '503'}})).reasons).toEqual(['candidate: the call failed (server_failed: 503)'])
    expect(judgeRow(row({execution: completed({error: 'no such table: x'})})).reasons).toEqual(['candidate: SQLite: no such table: x'])
    expect(judgeRow(row({reference: completed({rows: [[1]]})})).reasons[0]).toMatch(/result differs from the reference/u)
    expect(judgeRow(row({answer: null, harness_evidence: {status: 'failed', failure_kind: 'unfinished_harness_output'}})).reasons).toEqual(['the agent gave no answer (unfinished_harness_output)'])
    expect(judgeRow(row({answer: 'no idea'})).reasons[0]).toMatch(/does not name "1"/u)
  })

  it('rejects a candidate on every variant when one variant fails, and keeps only its original row', () => {
    const judged = judgeRows([row(), row({database_variant: 'variant', reference: completed({rows: [[3]]})}), row({candidate: {id: 'd'}}), row({candidate: {id: 'd'}, database_variant: 'variant'})])
    expect(judged.map((r) => [r.candidate.id, r.database_variant, r.judge.accepted, r.judge.keep])).toEqual([
      ['c', 'original', false, false],
      ['c', 'variant', false, false],
      ['d', 'original', true, true],
      ['d', 'variant', true, false],
    ])
  })
})
