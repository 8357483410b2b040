import {execFileSync} from 'node:child_process'
import {mkdtemp, readdir, readFile, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {parse} from 'lossless-json'
import {describe, expect, it} from 'vitest'

import {repoRoot, runCli, snapshotRoot} from '../helpers/cli.js'

const fixtures = path.join(repoRoot, 'test', 'fixtures', 'tasks')

/** oclif wraps long error lines with "\n ›   "; join them back. */
function unwrapped(stderr: string): string {
  return stderr.replaceAll('\n ›   ', '')
}

async function tempDir(): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), 'gr-rollouts-e2e-'))
}

async function jsonlLines(file: string): Promise<string[]> {
  return (await readFile(file, 'utf8')).split('\n').filter((line) => line.trim() !== '')
}

/** Lossless parse: numbers keep their source text, so 1.0 and 60-bit integers compare exactly. */
function lossless(text: string): any {
  return parse(text)
}

/**
 * What the Python plugin computes for an example row used as a task: the
 * scenario ID over json.dumps(sort_keys, compact) of the task without
 * top-level nulls, and the task index of that ID.
 */
function pythonIdentities(exampleFile: string, namespace: string): {scenarioId: string; index: string}[] {
  const script = `
import hashlib, json, sys
for line in open(sys.argv[1], encoding="utf-8"):
    if not line.strip():
        continue
    task = {k: v for k, v in json.loads(line).items() if v is not None}
    canonical = json.dumps(task, sort_keys=True, separators=(",", ":"))
    sid = sys.argv[2] + "-" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]
    print(json.dumps({"scenarioId": sid, "index": str(int(hashlib.sha256(sid.encode("utf-8")).hexdigest()[:15], 16))}))
`
  return execFileSync('python3', ['-c', script, exampleFile, namespace], {encoding: 'utf8'})
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line))
}

/** The conversation a row starts from; rollouts echo it with extra keys (e.g. "type") on each message. */
function promptOf(row: any): [string, string][] {
  return row.responses_create_params.input.map((message: any) => [message.role, message.content])
}

const ADDED_BY_EXPORT = ['id', '_ng_task_index', '_dd_scenario_id', '_dd_provenance']

describe.each([
  ['calendar', 'environments/calendar/data'],
  ['math_with_judge', 'resources_servers/math_with_judge/data'],
])('NeMo Gym snapshot round trip: %s', (_name, dataDir) => {
  it('builds tasks from the example rows, exports them and ingests the example rollouts against them', async () => {
    const dir = await tempDir()
    const exampleFile = path.join(snapshotRoot, dataDir, 'example.jsonl')
    const examples = await jsonlLines(exampleFile)

    // Rows carry each example task in a column (kept as text, so numbers stay exact).
    const rows = path.join(dir, 'rows.jsonl')
    await writeFile(rows, examples.map((line, i) => `{"gym_task":${line},"source":{"file":${JSON.stringify(`${dataDir}/example.jsonl`)},"line":${i + 1}}}\n`).join(''))
    const scenarios = path.join(dir, 'scenarios.jsonl')
    const build = await runCli(['tasks', 'build', rows, '--spec', path.join(fixtures, 'task-column.yaml'), '--output', scenarios, '--json'])
    expect(build.exitCode).toBe(0)
    expect(build.json).toMatchObject({rows: examples.length, bundles: examples.length, skipped: 0})

    const tasksFile = path.join(dir, 'gym-tasks.jsonl')
    const exported = await runCli(['tasks', 'export', scenarios, '--output', tasksFile, '--json'])
    expect(exported.exitCode).toBe(0)
    expect(exported.json.tasks).toBe(examples.length)
    const tasks = (await jsonlLines(tasksFile)).map((line) => lossless(line))

    // Identity is byte-compatible with the Python plugin, computed here by python3 itself.
    const expected = pythonIdentities(exampleFile, 'snapshot')
    expect(tasks.map((task) => ({scenarioId: task._dd_scenario_id, index: task._ng_task_index.value}))).toEqual(expected)
    for (const [i, task] of tasks.entries()) {
      const original = Object.fromEntries(Object.entries(task).filter(([key]) => !ADDED_BY_EXPORT.includes(key)))
      expect(original).toEqual(lossless(examples[i]))
      expect(task._dd_provenance).toEqual({'source.file': `${dataDir}/example.jsonl`, 'source.line': lossless(`${i + 1}`)})
    }

    // The committed example_rollouts.jsonl predate index stamping. Stamp them the way Gym
    // collection does: with the index of the input row that produced each rollout. The
    // rollouts are not in the order of example.jsonl, so the row is found by its prompt.
    const rollouts = await jsonlLines(path.join(snapshotRoot, dataDir, 'example_rollouts.jsonl'))
    const sourceRow = rollouts.map((line) => examples.findIndex((example) => JSON.stringify(promptOf(JSON.parse(example))) === JSON.stringify(promptOf(JSON.parse(line)))))
    expect(sourceRow).not.toContain(-1)
    expect(sourceRow).not.toEqual(sourceRow.map((_, i) => i))
    const stamped = rollouts.map((line, i) => `{"_ng_task_index":${tasks[sourceRow[i]]._ng_task_index.value},"_ng_rollout_index":0,${line.trim().slice(1)}`)
    const rolloutsFile = path.join(dir, 'rollouts.jsonl')
    await writeFile(rolloutsFile, stamped.map((line) => `${line}\n`).join(''))
    const failuresFile = path.join(dir, 'rollouts_failures.jsonl')
    const failure = `{"_ng_task_index":${tasks[0]._ng_task_index.value},"_ng_rollout_index":1,"_ng_failure_class":"agent_run_error","_ng_failure_terminal":true,"_ng_failure_message":"agent timed out"}`
    await writeFile(failuresFile, `${failure}\n`)

    const normalizedFile = path.join(dir, 'normalized.jsonl')
    const ingested = await runCli(['rollouts', 'ingest', '--tasks', tasksFile, '--rollouts', rolloutsFile, '--failures', failuresFile, '--output', normalizedFile, '--json'])
    expect(ingested.exitCode).toBe(0)
    expect(ingested.json).toMatchObject({records: rollouts.length + 1, rollouts: {records: rollouts.length}, failures: {records: 1}, tasks: {distinct: examples.length}})

    const normalized = (await jsonlLines(normalizedFile)).map((line) => lossless(line))
    for (const [i, record] of normalized.slice(0, rollouts.length).entries()) {
      const task = tasks[sourceRow[i]]
      expect(record.status).toBe('completed')
      expect(record.scenario_id).toBe(task._dd_scenario_id)
      expect(record.task_index.value).toBe(task._ng_task_index.value)
      expect(record.task).toEqual(task)
      expect(record.rollout).toEqual(lossless(stamped[i]))
      expect(record.reward.value).toBe(lossless(rollouts[i]).reward.value)
      expect(record.provenance).toEqual(task._dd_provenance)
      expect([record.rollout_id, record.attempt, record.failure_reason]).toEqual([null, null, null])
    }
    expect(normalized.at(-1)).toMatchObject({status: 'failed', scenario_id: tasks[0]._dd_scenario_id, reward: null, failure_class: 'agent_run_error', failure_terminal: true, failure_reason: 'agent timed out'})
  })
})

describe('NeMo Gym snapshot: workplace_assistant', () => {
  it('keeps the example ids on export, and refuses the unstamped example rollouts naming file, line and field', async () => {
    const dir = await tempDir()
    const dataDir = path.join(snapshotRoot, 'resources_servers/workplace_assistant/data')
    const examples = await jsonlLines(path.join(dataDir, 'example.jsonl'))
    const rows = path.join(dir, 'rows.jsonl')
    await writeFile(rows, examples.map((line, i) => `{"gym_task":${line},"source":{"file":"workplace","line":${i + 1}}}\n`).join(''))
    expect((await runCli(['tasks', 'build', rows, '--spec', path.join(fixtures, 'task-column.yaml'), '--output', path.join(dir, 's.jsonl')])).exitCode).toBe(0)
    const tasksFile = path.join(dir, 'gym-tasks.jsonl')
    expect((await runCli(['tasks', 'export', path.join(dir, 's.jsonl'), '--output', tasksFile])).exitCode).toBe(0)
    const tasks = (await jsonlLines(tasksFile)).map((line) => lossless(line))
    expect(tasks.map((task) => task.id)).toEqual(examples.map((line) => lossless(line).id))
    expect(tasks.every((task) => /^\d+$/.test(task._ng_task_index.value))).toBe(true)

    // These rollouts come from other prompts than example.jsonl and carry no _ng_task_index.
    const rollouts = path.join(dataDir, 'example_rollouts.jsonl')
    const result = await runCli(['rollouts', 'ingest', '--tasks', tasksFile, '--rollouts', rollouts, '--output', path.join(dir, 'n.jsonl'), '--json'])
    expect(result.exitCode).toBe(2)
    expect(result.json.error).toMatchObject({code: 'E_ROLLOUT_INVALID', location: {file: rollouts, line: 1, field: '_ng_task_index'}})
    expect(await readdir(dir)).not.toContain('n.jsonl')
  })
})

describe('gymrecipe rollouts ingest', () => {
  async function exportedTask(dir: string): Promise<string> {
    const scenarios = path.join(dir, 'scenarios.jsonl')
    await writeFile(scenarios, '{"scenario_id":"s1","task":{"responses_create_params":{"input":[]}}}\n')
    const tasksFile = path.join(dir, 'gym-tasks.jsonl')
    expect((await runCli(['tasks', 'export', scenarios, '--output', tasksFile])).exitCode).toBe(0)
    return tasksFile
  }

  it('shows examples and the output fields in --help', async () => {
    const result = await runCli(['rollouts', 'ingest', '--help'])
    expect(result.exitCode).toBe(0)
    expect(result.stdout).toContain('rollouts ingest --tasks gym-tasks.jsonl --rollouts rollouts.jsonl --output normalized.jsonl')
    expect(result.stdout).toContain('--failures')
    expect(result.stdout).toContain('environment_server')
  })

  it('prints a summary line for people and exact JSON lines', async () => {
    const dir = await tempDir()
    const tasksFile = await exportedTask(dir)
    const rollouts = path.join(dir, 'rollouts.jsonl')
    await writeFile(rollouts, '{"_ng_task_index":1048143972598214168,"reward":1.0}\n')
    const output = path.join(dir, 'normalized.jsonl')
    const result = await runCli(['rollouts', 'ingest', '--tasks', tasksFile, '--rollouts', rollouts, '--output', output])
    expect(result.exitCode).toBe(0)
    expect(result.stdout.trim()).toBe(`Wrote 1 record to ${output} (1 completed, 0 failed; 1 task)`)
    expect(await readFile(output, 'utf8')).toMatch(/^\{"scenario_id":"s1","task_index":1048143972598214168,"rollout_index":null,"status":"completed","reward":1\.0,/)
  })

  it('exits 2 when an explicitly given --failures file does not exist', async () => {
    const dir = await tempDir()
    const tasksFile = await exportedTask(dir)
    await writeFile(path.join(dir, 'rollouts.jsonl'), '')
    const result = await runCli(['rollouts', 'ingest', '--tasks', tasksFile, '--rollouts', path.join(dir, 'rollouts.jsonl'), '--failures', path.join(dir, 'rollouts_failures.jsonl'), '--output', path.join(dir, 'n.jsonl')])
    expect(result.exitCode).toBe(2)
    expect(unwrapped(result.stderr)).toContain(`Error: JSONL file does not exist: ${path.join(dir, 'rollouts_failures.jsonl')}`)
    expect(unwrapped(result.stderr)).toContain('Check the path given to --failures.')
  })

  it('exits 2 on conflicting tasks with the same index', async () => {
    const dir = await tempDir()
    const tasksFile = path.join(dir, 'gym-tasks.jsonl')
    await writeFile(tasksFile, '{"_ng_task_index":5,"_dd_scenario_id":"a"}\n{"_ng_task_index":5,"_dd_scenario_id":"b"}\n')
    await writeFile(path.join(dir, 'r.jsonl'), '')
    const result = await runCli(['rollouts', 'ingest', '--tasks', tasksFile, '--rollouts', path.join(dir, 'r.jsonl'), '--output', path.join(dir, 'n.jsonl')])
    expect(result.exitCode).toBe(2)
    expect(unwrapped(result.stderr)).toContain(`${tasksFile}:2: _ng_task_index: conflicting tasks share task index 5: this task differs from the one on line 1`)
  })

  it('--dry-run reports the record count and writes nothing', async () => {
    const dir = await tempDir()
    const tasksFile = await exportedTask(dir)
    await writeFile(path.join(dir, 'r.jsonl'), '{"_ng_task_index":1048143972598214168}\n{"_ng_task_index":1048143972598214168}\n')
    const result = await runCli(['rollouts', 'ingest', '--tasks', tasksFile, '--rollouts', path.join(dir, 'r.jsonl'), '--output', path.join(dir, 'n.jsonl'), '--dry-run', '--json'])
    expect(result.exitCode).toBe(0)
    expect(result.json).toMatchObject({dry_run: true, records: 2})
    expect(await readdir(dir)).not.toContain('n.jsonl')
  })
})
