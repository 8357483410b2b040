import {execa} from 'execa'
import {createWriteStream} from 'node:fs'
import {lstat, mkdtemp, readdir, readFile, symlink, writeFile} from 'node:fs/promises'
import {once} from 'node:events'
import os from 'node:os'
import path from 'node:path'
import {describe, expect, it} from 'vitest'

import {repoRoot, runCli} from '../helpers/cli.js'

const fixtures = path.join(repoRoot, 'test', 'fixtures', 'tasks')

/** oclif wraps long error lines with "\n ›   "; join them back. */
function unwrapped(stderr: string): string {
  return stderr.replaceAll('\n ›   ', '')
}

async function tempDir(): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), 'gr-tasks-e2e-'))
}

/** Enough lines that a command is still streaming when a signal arrives. */
async function writeLines(file: string, line: (i: number) => string, count = 300_000): Promise<string> {
  const out = createWriteStream(file)
  for (let i = 0; i < count; i++) {
    if (!out.write(`${line(i)}\n`)) await once(out, 'drain')
  }
  out.end()
  await once(out, 'finish')
  return file
}

/**
 * Run a command writing `dir/outputName` (which holds an earlier result), signal it once its
 * temporary sibling exists, and check it exits 130 leaving the earlier output as it was and no
 * temporary file behind.
 */
async function expectInterruptLeavesNothing(dir: string, outputName: string, args: string[], signal: 'SIGINT' | 'SIGTERM'): Promise<void> {
  const output = path.join(dir, outputName)
  await writeFile(output, 'previous run\n')
  const before = (await readdir(dir)).sort()
  const child = execa(process.execPath, [path.join(repoRoot, 'bin', 'run.js'), ...args, '--output', output], {reject: false, env: {NO_COLOR: '1'}})
  let partial: string | undefined
  for (let tries = 0; tries < 2000 && partial === undefined && child.exitCode === null; tries++) {
    partial = (await readdir(dir)).find((name) => name.endsWith('.tmp'))
    if (partial === undefined) await new Promise((resolve) => setTimeout(resolve, 10))
  }
  expect(partial).toMatch(new RegExp(`^\\.${outputName.replaceAll('.', '\\.')}\\..*\\.tmp$`))
  child.kill(signal)
  const result = await child
  expect(result.exitCode).toBe(130)
  expect(String(result.stderr)).toContain(`interrupted (${signal}): the partial output was removed and nothing was written`)
  expect((await readdir(dir)).sort()).toEqual(before)
  expect(await readFile(output, 'utf8')).toBe('previous run\n')
}

describe('gymrecipe tasks build', () => {
  it('shows examples, the spec fields and exit statuses in --help', async () => {
    const result = await runCli(['tasks', 'build', '--help'])
    expect(result.exitCode).toBe(0)
    expect(result.stdout).toContain('tasks build rows.jsonl --spec task-spec.yaml --output scenarios.jsonl')
    expect(result.stdout).toMatch(/task_column[\s\S]*messages/)
    expect(result.stdout).toContain('EXIT STATUS')
    expect(result.stdout).toContain('--dry-run')
  })

  it('builds the upstream declarative example: one bundle, the plugin scenario ID, the skipped row counted', async () => {
    const dir = await tempDir()
    const output = path.join(dir, 'scenarios.jsonl')
    const result = await runCli(['tasks', 'build', path.join(fixtures, 'seed-rows.jsonl'), '--spec', path.join(fixtures, 'workplace-declarative.yaml'), '--output', output, '--json'])
    expect(result.exitCode).toBe(0)
    expect(result.json).toEqual({input: path.join(fixtures, 'seed-rows.jsonl'), output, dry_run: false, rows: 2, skipped: 1, bundles: 1, repeated_scenario_ids: 0})
    const bundle = JSON.parse(await readFile(output, 'utf8'))
    expect(bundle.scenario_id).toBe('gym-dc3946e4a77aae4c')
    expect(bundle.provenance).toEqual({seed_id: 7})
    expect(bundle.task.responses_create_params.tools[0]).not.toHaveProperty('database')
  })

  it('writes to stdout (-o -), a pipe and through nothing else: devices stay devices, a symlink is refused, not replaced', async () => {
    const dir = await tempDir()
    const build = (output: string, extra: string[] = []) => runCli(['tasks', 'build', path.join(fixtures, 'seed-rows.jsonl'), '--spec', path.join(fixtures, 'workplace-declarative.yaml'), '-o', output, ...extra])

    // stdout is the data stream; the line for people moves to stderr.
    const toStdout = await build('-')
    expect(toStdout.exitCode, toStdout.stderr).toBe(0)
    expect(toStdout.stdout.trim().split('\n').map((l) => JSON.parse(l).scenario_id)).toEqual(['gym-dc3946e4a77aae4c'])
    expect(toStdout.stderr).toContain('Wrote 1 scenario bundle to -')
    expect((await build('-', ['--json'])).exitCode).toBe(2)

    // A named pipe is written in place and stays a pipe.
    const fifo = path.join(dir, 'bundles.fifo')
    await execa('mkfifo', [fifo])
    const reader = readFile(fifo, 'utf8')
    const viaPipe = await build(fifo)
    expect(viaPipe.exitCode, viaPipe.stderr).toBe(0)
    expect(JSON.parse((await reader).trim()).scenario_id).toBe('gym-dc3946e4a77aae4c')
    expect((await lstat(fifo)).isFIFO()).toBe(true)

    // A symlink to a regular file would be replaced by a file of its own: refused, both kept.
    const real = path.join(dir, 'real.jsonl')
    await writeFile(real, 'previous\n')
    const link = path.join(dir, 'link.jsonl')
    await symlink(real, link)
    const viaLink = await build(link, ['--json'])
    expect(viaLink.exitCode).toBe(2)
    expect(viaLink.json.error).toMatchObject({code: 'E_OUTPUT_SYMLINK', hint: `Pass the file itself (${real}) to replace it, or another path.`})
    expect((await lstat(link)).isSymbolicLink()).toBe(true)
    expect(await readFile(real, 'utf8')).toBe('previous\n')
    expect((await readdir(dir)).sort()).toEqual(['bundles.fifo', 'link.jsonl', 'real.jsonl'])
  })

  it('prints a line for people', async () => {
    const dir = await tempDir()
    const result = await runCli(['tasks', 'build', path.join(fixtures, 'seed-rows.jsonl'), '--spec', path.join(fixtures, 'workplace-declarative.yaml'), '-o', path.join(dir, 's.jsonl')])
    expect(result.stdout.trim()).toBe(`Wrote 1 scenario bundle to ${path.join(dir, 's.jsonl')} (2 rows, 1 skipped by include)`)
  })

  it('SIGTERM half-way removes the partial output, keeps the previous file and exits 130', async () => {
    const dir = await tempDir()
    const rows = await writeLines(path.join(dir, 'rows.jsonl'), (i) => `{"gym_task":{"responses_create_params":{"input":"question ${i}"}},"source":{"file":"rows","line":${i + 1}}}`)
    await expectInterruptLeavesNothing(dir, 'scenarios.jsonl', ['tasks', 'build', rows, '--spec', path.join(fixtures, 'task-column.yaml')], 'SIGTERM')
  })

  it('--dry-run validates and reports without writing', async () => {
    const dir = await tempDir()
    const output = path.join(dir, 'scenarios.jsonl')
    const result = await runCli(['tasks', 'build', path.join(fixtures, 'seed-rows.jsonl'), '--spec', path.join(fixtures, 'workplace-declarative.yaml'), '--output', output, '--dry-run', '--json'])
    expect(result.exitCode).toBe(0)
    expect(result.json).toMatchObject({dry_run: true, bundles: 1, output})
    expect(await readdir(dir)).toEqual([])
    // Without --output there is no file to name.
    const bare = await runCli(['tasks', 'build', path.join(fixtures, 'seed-rows.jsonl'), '--spec', path.join(fixtures, 'workplace-declarative.yaml'), '--dry-run', '--json'])
    expect(bare.json).toMatchObject({dry_run: true, bundles: 1, output: null})
  })

  it('exits 2 naming the spec file, line and field of a broken rule', async () => {
    const dir = await tempDir()
    const spec = path.join(dir, 'task-spec.yaml')
    await writeFile(spec, 'task_column: gym_task\nresponse_params:\n  temperature: 0.5\n')
    const result = await runCli(['tasks', 'build', path.join(fixtures, 'seed-rows.jsonl'), '--spec', spec, '--output', path.join(dir, 'out.jsonl')])
    expect(result.exitCode).toBe(2)
    expect(unwrapped(result.stderr)).toContain(`${spec}:2: response_params: declarative task fields cannot be used with task_column`)
    expect(await readdir(dir)).toEqual(['task-spec.yaml'])
  })

  it('exits 2 naming the rows file, line and field of a bad row, with a JSON error under --json', async () => {
    const dir = await tempDir()
    const rows = path.join(dir, 'rows.jsonl')
    const source = '"source":{"file":"rows","line":1}'
    await writeFile(rows, `{"gym_task":{"responses_create_params":{}},${source}}\n{"gym_task":{"responses_create_params":{},"_ng_task_index":1},${source}}\n`)
    const result = await runCli(['tasks', 'build', rows, '--spec', path.join(fixtures, 'task-column.yaml'), '--output', path.join(dir, 'out.jsonl'), '--json'])
    expect(result.exitCode).toBe(2)
    expect(result.json.error).toEqual({
      code: 'E_ROW_INVALID',
      exit: 2,
      message: 'task: Gym task contains plugin-managed fields: _ng_task_index',
      hint: 'Check the row against the task spec; `gymrecipe tasks build --help` describes the fields.',
      location: {file: rows, line: 2, field: 'task'},
      details: null,
    })
    expect(await readdir(dir)).toEqual(['rows.jsonl'])
  })

  it('warns when bundles repeat a scenario_id (same task, different provenance)', async () => {
    const dir = await tempDir()
    const rows = path.join(dir, 'rows.jsonl')
    await writeFile(rows, [1, 2].map((line) => `{"gym_task":{"responses_create_params":{}},"source":{"file":"rows","line":${line}}}\n`).join(''))
    const result = await runCli(['tasks', 'build', rows, '--spec', path.join(fixtures, 'task-column.yaml'), '--output', path.join(dir, 'scenarios.jsonl')])
    expect(result.exitCode).toBe(0)
    expect(result.stderr).toContain('1 bundle repeats an earlier scenario_id')
    expect(result.stderr).toContain('Set scenario_id_column to keep them apart.')
  })

  it('exits 2 when a required flag is missing', async () => {
    const result = await runCli(['tasks', 'build', path.join(fixtures, 'seed-rows.jsonl'), '--output', '/tmp/x.jsonl'])
    expect(result.exitCode).toBe(2)
    expect(result.stderr).toMatch(/Missing required flag spec/)
  })
})

describe('gymrecipe tasks export', () => {
  it('shows examples in --help', async () => {
    const result = await runCli(['tasks', 'export', '--help'])
    expect(result.exitCode).toBe(0)
    expect(result.stdout).toContain('tasks export scenarios.jsonl --output gym-tasks.jsonl')
  })

  it('exports bundles, keeping 60-bit indices and number spellings exact', async () => {
    const dir = await tempDir()
    const scenarios = path.join(dir, 'scenarios.jsonl')
    await writeFile(scenarios, '{"scenario_id":"s1","task":{"responses_create_params":{"temperature":1.0}},"provenance":{"seed":1}}\n')
    const output = path.join(dir, 'gym-tasks.jsonl')
    const result = await runCli(['tasks', 'export', scenarios, '--output', output, '--json'])
    expect(result.exitCode).toBe(0)
    expect(result.json).toEqual({input: scenarios, output, dry_run: false, tasks: 1})
    expect(await readFile(output, 'utf8')).toBe(
      '{"responses_create_params":{"temperature":1.0},"id":1048143972598214168,"_ng_task_index":1048143972598214168,"_dd_scenario_id":"s1","_dd_provenance":{"seed":1}}\n',
    )
  })

  it('streams in the young generation start-up left: it is as large after 200,000 bundles as after one', async () => {
    const dir = await tempDir()
    const line = (i: number) => `{"scenario_id":"s${i}","task":{"responses_create_params":{"input":"question ${i}"}},"provenance":{}}`
    const many = await writeLines(path.join(dir, 'many.jsonl'), line, 200_000)
    const one = await writeLines(path.join(dir, 'one.jsonl'), line, 1)
    const probe = path.join(dir, 'probe.mjs')
    const report = path.join(dir, 'young.json')
    await writeFile(
      probe,
      `import {writeFileSync} from 'node:fs'\nimport v8 from 'node:v8'\nprocess.on('exit', () => writeFileSync(${JSON.stringify(report)}, JSON.stringify(v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space'))))\n`,
    )
    const youngAfter = async (input: string) => {
      const args = ['--import', probe, path.join(repoRoot, 'bin', 'run.js'), 'tasks', 'export', input, '--output', path.join(dir, 'out.jsonl')]
      const result = await execa(process.execPath, args, {reject: false})
      expect(result.exitCode, result.stderr).toBe(0)
      return JSON.parse(await readFile(report, 'utf8')).space_size as number
    }
    expect(await youngAfter(many)).toBe(await youngAfter(one))
  })

  it('exits 2 with "JSONL file does not exist" for a missing input', async () => {
    const dir = await tempDir()
    const result = await runCli(['tasks', 'export', path.join(dir, 'nope.jsonl'), '--output', path.join(dir, 'out.jsonl')])
    expect(result.exitCode).toBe(2)
    expect(unwrapped(result.stderr)).toContain(`Error: JSONL file does not exist: ${path.join(dir, 'nope.jsonl')}`)
  })

  it('Ctrl+C half-way removes the partial output, keeps the previous file and exits 130', async () => {
    const dir = await tempDir()
    const scenarios = await writeLines(path.join(dir, 'scenarios.jsonl'), (i) => `{"scenario_id":"s${i}","task":{"responses_create_params":{"input":"question ${i}","temperature":1.0}},"provenance":{"seed":${i}}}`, 600_000)
    await expectInterruptLeavesNothing(dir, 'gym-tasks.jsonl', ['tasks', 'export', scenarios], 'SIGINT')
  })

  it('exits 2 naming file, line and field of a bad bundle, writing nothing', async () => {
    const dir = await tempDir()
    const scenarios = path.join(dir, 'scenarios.jsonl')
    await writeFile(scenarios, '{"scenario_id":"s1","task":{"responses_create_params":{}}}\n{"schema_version":1,"scenario_id":"s2","task":{"responses_create_params":{}}}\n')
    const result = await runCli(['tasks', 'export', scenarios, '--output', path.join(dir, 'out.jsonl')])
    expect(result.exitCode).toBe(2)
    expect(unwrapped(result.stderr)).toContain(`${scenarios}:2: schema_version: must be the string "1"`)
    expect(await readdir(dir)).toEqual(['scenarios.jsonl'])
  })
})
