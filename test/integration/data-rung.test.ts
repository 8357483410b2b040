/**
 * The data rung on the real NeMo Gym example files (which pass) and on copies broken in each
 * way the issue lists (which fail with the exact line and field). Every input is written to a
 * temp dir; the converter comparison runs the fixture checkout's convert_dataset.py with python3.
 */
import {copyFile, link, mkdtemp, readFile, rm, unlink, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {
  checksOf,
  CONVERTER_IN_CHECKOUT,
  dataCase,
  type DataCase,
  dataReport,
  editContractData,
  failedIds,
  resultsOf,
  SNAPSHOT_ROWS,
  REAL_DOCKER,
  removeDataCases,
  writeData,
} from '../helpers/data-rung.js'
import {repoRoot} from '../helpers/cli.js'
import {repeatedRows} from '../helpers/recipes.js'
import {dockerAvailable, ensureBaseImage} from '../helpers/docker.js'

const docker = await dockerAvailable()
const CAL = 'calendar_train.jsonl'
const WPA = 'workplace_assistant_train.jsonl'

afterAll(removeDataCases)

const snapshotText = (which: keyof typeof SNAPSHOT_ROWS) => readFile(SNAPSHOT_ROWS[which], 'utf8')
/** Non-empty lines of a snapshot file (the workplace one has no final newline). */
const snapshotLines = async (which: keyof typeof SNAPSHOT_ROWS) => (await snapshotText(which)).split('\n').filter((l) => l.trim() !== '')

/**
 * Everything but the shared-storage probe, which needs Docker (tested below and end to end), and
 * the row volume (the example files are too small for a run; tested on its own below).
 */
function failedRowChecks(report: Awaited<ReturnType<typeof dataReport>>): string[] {
  return failedIds(report).filter((id) => id !== 'data.shared-storage' && id !== 'data.enough-rows')
}

function mustPassExceptStorage(report: Awaited<ReturnType<typeof dataReport>>): void {
  const notPassed = checksOf(report).filter((c) => c.status !== 'pass' && c.id !== 'data.shared-storage' && c.id !== 'data.enough-rows')
  expect(notPassed.map((c) => `${c.id}: ${c.message}`)).toEqual([])
}

describe('enough rows for the run', () => {
  it('a 5-row file cannot fill one rollout step of the calendar recipe (32 prompts): fail, with what the run needs', async () => {
    const c = await dataCase('calendar')
    const file = path.join(c.data, CAL)
    await copyFile(SNAPSHOT_ROWS.calendar, file)
    const [check] = resultsOf(await dataReport(c, file), 'data.enough-rows')
    expect(check).toMatchObject({status: 'fail', message: '5 row(s) cannot fill one rollout step of 32 prompts (--rollout-batch-size, from recipe.yaml (training.rollout))'})
    expect(check.hint).toContain('at least 32 rows')
  })

  it('a smoke run passes on a few rows, saying they are not enough for real training', async () => {
    const c = await dataCase('calendar')
    const file = path.join(c.data, CAL)
    await copyFile(SNAPSHOT_ROWS.calendar, file)
    const [check] = resultsOf(await dataReport(c, file, {smoke: true}), 'data.enough-rows')
    expect(check).toMatchObject({status: 'pass', message: 'SMOKE run: 5 row(s), fewer than one rollout step of 32 prompts (from recipe.yaml (training.rollout)); each step repeats them 6.4 times: not enough for real training'})
  })

  it('passes a file that fills the run, and says how many times the run goes over it', async () => {
    const c = await dataCase('calendar')
    const rows = await snapshotLines('calendar')
    const file = await writeData(c, CAL, Array.from({length: 1000}, (_, i) => `${rows[i % rows.length]}\n`).join(''))
    const [check] = resultsOf(await dataReport(c, file), 'data.enough-rows')
    expect(check).toMatchObject({status: 'pass', message: '1000 rows; the run (200 rollout steps x 32 prompts, from recipe.yaml (training.rollout)) goes over the data 6.4 times'})
    expect(check.evidence).toMatchObject({rows: 1000, promptsPerRolloutStep: 32, rolloutSteps: 200, promptsConsumed: 6400, passesOverData: 6.4})
  })

  it('reads the batch from the training script when there is no recipe.yaml', async () => {
    const c = await dataCase('workplace-assistant')
    await rm(path.join(c.dir, 'recipe.yaml'))
    const rows = await snapshotLines('workplace')
    const file = await writeData(c, WPA, Array.from({length: 7}, (_, i) => `${rows[i % rows.length]}\n`).join(''))
    const [check] = resultsOf(await dataReport(c, file), 'data.enough-rows')
    expect(check.status).toBe('fail')
    expect(check.message).toMatch(/^7 row\(s\) cannot fill one rollout step of 8 prompts \(--rollout-batch-size, from run-.*\.sh\)$/)
  })
}, 60_000)

describe('the real NeMo Gym example files pass with their contracts', () => {
  it('calendar example.jsonl (5 rows)', async () => {
    const c = await dataCase('calendar')
    const file = path.join(c.data, CAL)
    await copyFile(SNAPSHOT_ROWS.calendar, file)
    const report = await dataReport(c, file)
    mustPassExceptStorage(report)
    expect(resultsOf(report, 'data.rows')[0].message).toBe('5 rows, every one a JSON object')
    expect(resultsOf(report, 'data.conversion')[0].message).toContain('convert_dataset.py agrees row for row')
  })

  it('[workplace-assistant#2] workplace example.jsonl: 5 rows although wc -l says 4 (no final newline); tools and ground truth kept', async () => {
    const c = await dataCase('workplace-assistant')
    const file = path.join(c.data, WPA)
    await copyFile(SNAPSHOT_ROWS.workplace, file)
    const report = await dataReport(c, file)
    mustPassExceptStorage(report)
    const rows = resultsOf(report, 'data.rows')[0]
    expect(rows.message).toBe('5 rows, every one a JSON object (wc -l says 4: the last line has no newline)')
    expect(rows.evidence).toMatchObject({rows: 5, wcLines: 4, finalNewline: false})
    expect(resultsOf(report, 'data.fields')[0].message).toContain('responses_create_params.tools')
    expect(resultsOf(report, 'data.fields')[0].message).toContain('ground_truth')
  })

  it('math_with_judge example.jsonl with a math contract (question, expected_answer)', async () => {
    const c = await dataCase('calendar')
    await editContractData(c, {raw_filename: 'math_train.jsonl', verifier_fields: ['responses_create_params.input', 'question', 'expected_answer']})
    const file = path.join(c.data, 'math_train.jsonl')
    await copyFile(SNAPSHOT_ROWS.math, file)
    const report = await dataReport(c, file)
    mustPassExceptStorage(report)
    expect(resultsOf(report, 'data.fields')[0].message).toContain('5 rows keep responses_create_params.input, question, expected_answer')
  })

  it('a hand-written recipe (no recipe.yaml) takes its fields from the first row and says so', async () => {
    const c = await dataCase('calendar')
    await unlink(path.join(c.dir, 'recipe.yaml'))
    const prepare = path.join(c.dir, 'prepare_calendar.sh')
    await writeFile(prepare, (await readFile(prepare, 'utf8')).replace(/^VERIFIER_FIELDS=.*$/m, ''))
    const file = path.join(c.data, CAL)
    await copyFile(SNAPSHOT_ROWS.calendar, file)
    const report = await dataReport(c, file)
    mustPassExceptStorage(report)
    const fields = resultsOf(report, 'data.fields')[0]
    expect(fields.message).toContain('responses_create_params.input, responses_create_params.tools, exp_cal_state (fields from the keys of the first row (no recipe.yaml)')
    expect(resultsOf(report, 'data.split')[0].message).toContain('the file name calendar_train.jsonl (no recipe.yaml)')
    expect(resultsOf(report, 'data.source')[0].evidence).toMatchObject({expected: CAL, expectedFrom: 'prepare_calendar.sh (no recipe.yaml)'})
  })
})

describe('snapshot copies broken in each way fail with the exact line and field', () => {
  it('calendar: exp_cal_state removed from row 3', async () => {
    const c = await dataCase('calendar')
    const lines = await snapshotLines('calendar')
    const row = JSON.parse(lines[2])
    delete row.exp_cal_state
    lines[2] = JSON.stringify(row)
    const report = await dataReport(c, await writeData(c, CAL, lines.join('\n') + '\n'))
    expect(failedRowChecks(report)).toEqual(['data.fields'])
    expect(resultsOf(report, 'data.fields')[0]).toMatchObject({line: 3, message: '1 of 5 rows miss exp_cal_state (absent or null): line 3'})
  })

  it('[workplace-assistant#5] workplace: ground_truth null on row 5, tools dropped on row 2', async () => {
    const c = await dataCase('workplace-assistant')
    const lines = await snapshotLines('workplace')
    const r5 = JSON.parse(lines[4])
    r5.ground_truth = null
    lines[4] = JSON.stringify(r5)
    const r2 = JSON.parse(lines[1])
    delete r2.responses_create_params.tools
    lines[1] = JSON.stringify(r2)
    const report = await dataReport(c, await writeData(c, WPA, lines.join('\n')))
    expect(failedRowChecks(report)).toEqual(['data.fields'])
    const messages = resultsOf(report, 'data.fields').map((r) => [r.line, r.message])
    expect(messages).toEqual([
      [2, '1 of 5 rows miss responses_create_params.tools (absent or null): line 2'],
      [5, '1 of 5 rows miss ground_truth (absent or null): line 5'],
    ])
  })

  it('math: row 4 truncated mid-string', async () => {
    const c = await dataCase('calendar')
    await editContractData(c, {raw_filename: 'math_train.jsonl', verifier_fields: ['responses_create_params.input', 'question', 'expected_answer']})
    const lines = await snapshotLines('math')
    lines[3] = lines[3].slice(0, Math.floor(lines[3].length / 2))
    const file = await writeData(c, 'math_train.jsonl', lines.join('\n') + '\n')
    const report = await dataReport(c, file)
    expect(failedRowChecks(report)).toEqual(['data.rows'])
    const [summary, detail] = resultsOf(report, 'data.rows')
    expect(summary).toMatchObject({file, line: 4, message: '1 of 5 rows are not JSON objects the input policy accepts'})
    expect(detail).toMatchObject({file, line: 4})
    expect(detail.message).toMatch(/^line 4, byte \d+: invalid JSON: the line ends inside a string \(truncated row\?\)$/)
  })
})

describe('bad inputs', () => {
  let c: DataCase
  let good: string[]
  beforeAll(async () => {
    c = await dataCase('calendar')
    good = await snapshotLines('calendar')
  })
  const rowsFile = (lines: string[]) => writeData(c, CAL, lines.join('\n') + '\n')

  it('missing file', async () => {
    const report = await dataReport(c, path.join(c.data, 'nowhere', CAL))
    expect(failedRowChecks(report)).toEqual(['data.source'])
    expect(resultsOf(report, 'data.source')[0].message).toContain(`nowhere/${CAL} does not exist`)
    expect(resultsOf(report, 'data.rows')[0].status).toBe('skip')
  })

  it('NEMO_GYM_SOURCE_DATA not set at all', async () => {
    const bare = await dataCase('calendar')
    const envSh = path.join(bare.dir, 'env.sh')
    await writeFile(envSh, (await readFile(envSh, 'utf8')).replace(/^export NEMO_GYM_SOURCE_DATA=.*$/m, ''))
    const report = await dataReport(bare, undefined)
    expect(failedRowChecks(report)).toEqual(['data.source'])
    expect(resultsOf(report, 'data.source')[0]).toMatchObject({message: 'NEMO_GYM_SOURCE_DATA is not set', file: envSh})
  })

  it('relative path', async () => {
    const report = await dataReport(c, `data/${CAL}`)
    expect(failedRowChecks(report)).toEqual(['data.source'])
    expect(resultsOf(report, 'data.source')[0].message).toBe(`NEMO_GYM_SOURCE_DATA is relative (data/${CAL}); every Ray node would resolve it from its own working directory`)
  })

  it('wrong file name', async () => {
    const file = await writeData(c, 'calendar_rows.jsonl', good.join('\n') + '\n')
    const report = await dataReport(c, file)
    expect(failedRowChecks(report)).toEqual(['data.source'])
    expect(resultsOf(report, 'data.source')[0].message).toBe(`NEMO_GYM_SOURCE_DATA ends in calendar_rows.jsonl, not ${CAL} (recipe.yaml data.raw_filename)`)
  })

  it('empty file', async () => {
    const file = await writeData(c, CAL, '')
    const report = await dataReport(c, file)
    expect(failedRowChecks(report)).toEqual(['data.source'])
    expect(resultsOf(report, 'data.source')[0]).toMatchObject({file, message: `${file} is empty (0 bytes)`})
  })

  it('only blank lines', async () => {
    const file = await writeData(c, CAL, '\n  \n\t\r\n\n')
    const report = await dataReport(c, file)
    expect(failedRowChecks(report)).toEqual(['data.rows'])
    expect(resultsOf(report, 'data.rows')[0].message).toBe('no rows: 4 line(s), all blank')
  })

  it.each([
    ['a JSON array', '[1, 2, 3]', 'expected a JSON object, got an array'],
    ['a number', '42', 'expected a JSON object, got a number'],
    ['a string', '"just text"', 'expected a JSON object, got a string'],
  ])('%s line', async (_what, line, reason) => {
    const file = await rowsFile([good[0], line, good[1]])
    const report = await dataReport(c, file)
    expect(failedRowChecks(report)).toEqual(['data.rows'])
    const [summary, detail] = resultsOf(report, 'data.rows')
    expect(summary.message).toBe('1 of 3 rows are not JSON objects the input policy accepts')
    expect(detail).toMatchObject({file, line: 2, message: `line 2, byte 1: ${reason}`})
  })

  it('truncated JSON', async () => {
    const file = await rowsFile([good[0], good[1], '{"responses_create_params": {"input": [{"role": "user", "content": "hi"}]}, "exp_cal_state": {"0": {"event_id": 0'])
    const report = await dataReport(c, file)
    expect(resultsOf(report, 'data.rows')[1]).toMatchObject({line: 3, message: 'line 3: invalid JSON: the line ends before the value is complete (truncated row?)'})
  })

  it('invalid UTF-8', async () => {
    const line3 = '{"responses_create_params": {"input": "caf' // then a Latin-1 é: not UTF-8
    const prefix = Buffer.from(`${good[0]}\n${good[1]}\n${line3}`)
    const file = await writeData(c, CAL, Buffer.concat([prefix, Buffer.from([0xe9]), Buffer.from('"}, "exp_cal_state": {}}\n')]))
    const report = await dataReport(c, file)
    expect(failedRowChecks(report)).toEqual(['data.rows'])
    const byte = line3.length + 1
    expect(resultsOf(report, 'data.rows')[1]).toMatchObject({line: 3, message: `line 3, byte ${byte}: invalid UTF-8 at byte ${byte}`})
  })

  it('a UTF-8 byte order mark: counted right, and refused because Python json.loads rejects it', async () => {
    const file = await writeData(c, CAL, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(good.join('\n') + '\n')]))
    const report = await dataReport(c, file)
    expect(failedRowChecks(report)).toEqual(['data.rows'])
    const rows = resultsOf(report, 'data.rows')
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({line: 1, evidence: {rows: 5, bom: true, badRows: 0}})
    expect(rows[0].message).toContain('byte order mark')
    // The rows themselves are fine: every one was read and has its fields.
    expect(resultsOf(report, 'data.fields')[0].status).toBe('pass')
  })

  it('CRLF line endings pass with the right count', async () => {
    const file = await writeData(c, CAL, good.join('\r\n') + '\r\n')
    const report = await dataReport(c, file)
    mustPassExceptStorage(report)
    expect(resultsOf(report, 'data.rows')[0].message).toBe('5 rows, every one a JSON object (5 CRLF line ending(s))')
  })

  it('no trailing newline: counted, not under-counted like wc -l', async () => {
    const file = await writeData(c, CAL, good.join('\n'))
    const report = await dataReport(c, file)
    mustPassExceptStorage(report)
    expect(resultsOf(report, 'data.row-count')[0].evidence).toMatchObject({rawRows: 5, wcLines: 4})
  })

  it('a 10 MB single line passes, its fields found', async () => {
    const big = {responses_create_params: {input: [{role: 'user', content: 'x'.repeat(10 * 1024 * 1024)}]}, exp_cal_state: {'0': {event_id: 0}}}
    const file = await writeData(c, CAL, JSON.stringify(big) + '\n')
    const report = await dataReport(c, file)
    mustPassExceptStorage(report)
    expect(resultsOf(report, 'data.rows')[0].evidence).toMatchObject({rows: 1})
    expect(Number(resultsOf(report, 'data.source')[0].evidence?.bytes)).toBeGreaterThan(10 * 1024 * 1024)
  })

  it('a missing verifier field on row 1000 of 2000', async () => {
    const lines = Array.from({length: 2000}, (_, k) => good[k % good.length])
    const row = JSON.parse(lines[999])
    delete row.exp_cal_state
    lines[999] = JSON.stringify(row)
    const file = await rowsFile(lines)
    const report = await dataReport(c, file)
    expect(failedRowChecks(report)).toEqual(['data.fields'])
    expect(resultsOf(report, 'data.fields')[0]).toMatchObject({file, line: 1000, message: '1 of 2000 rows miss exp_cal_state (absent or null): line 1000'})
  })

  it('[calendar#6] [gsm8k#2] *_relax.jsonl passed as source', async () => {
    const file = await writeData(c, 'calendar_train_relax.jsonl', good.join('\n') + '\n')
    const report = await dataReport(c, file)
    expect(failedRowChecks(report)).toEqual(['data.not-converted', 'data.source'])
    expect(resultsOf(report, 'data.not-converted')[0].message).toBe('calendar_train_relax.jsonl is the converted preview, not the raw data')
  })

  it('a converted file under the raw name (content check)', async () => {
    const converted = good.map((l) => {
      const row = JSON.parse(l)
      return JSON.stringify({input: row.responses_create_params.input, metadata: {exp_cal_state: row.exp_cal_state, tools: []}})
    })
    const report = await dataReport(c, await rowsFile(converted))
    expect(resultsOf(report, 'data.not-converted')[0]).toMatchObject({status: 'fail', line: 1})
  })

  it('the raw file is a hard link to its preview', async () => {
    const file = await rowsFile(good)
    const preview = path.join(c.data, 'calendar_train_relax.jsonl')
    await rm(preview, {force: true})
    await link(file, preview)
    try {
      const report = await dataReport(c, file)
      expect(resultsOf(report, 'data.not-converted')[0].message).toContain('are the same file')
    } finally {
      await rm(preview, {force: true})
    }
  })
})

describe('row count against the converted preview', () => {
  it('passes when the preview has as many rows, fails naming both counts when not', async () => {
    const c = await dataCase('calendar')
    const lines = await snapshotLines('calendar')
    const file = await writeData(c, CAL, lines.join('\n') + '\n')
    await writeData(c, 'calendar_train_relax.jsonl', lines.map(() => '{"input":[],"metadata":{}}').join('\n') + '\n\n')
    expect(resultsOf(await dataReport(c, file), 'data.row-count')[0].message).toBe('5 raw rows = 5 rows in calendar_train_relax.jsonl')
    await writeData(c, 'calendar_train_relax.jsonl', lines.slice(1).map(() => '{"input":[],"metadata":{}}').join('\n'))
    const report = await dataReport(c, file)
    expect(failedRowChecks(report)).toEqual(['data.row-count'])
    expect(resultsOf(report, 'data.row-count')[0].message).toBe('calendar_train.jsonl has 5 rows but calendar_train_relax.jsonl has 4')
  })
})

describe('split guard', () => {
  it('[calendar#5] [gsm8k#1] a hand-written recipe on an example split is refused; --smoke accepts it and flags the report', async () => {
    const c = await dataCase('calendar')
    await unlink(path.join(c.dir, 'recipe.yaml'))
    const prepare = path.join(c.dir, 'prepare_calendar.sh')
    await writeFile(prepare, (await readFile(prepare, 'utf8')).replace(/^RAW_FILENAME=.*$/m, "RAW_FILENAME='calendar_example.jsonl'"))
    const file = path.join(c.data, 'calendar_example.jsonl')
    await copyFile(SNAPSHOT_ROWS.calendar, file)
    const refused = await dataReport(c, file)
    expect(failedRowChecks(refused)).toEqual(['data.split'])
    expect(resultsOf(refused, 'data.split')[0].message).toBe('the example split is not training data (the file name calendar_example.jsonl (no recipe.yaml))')
    expect(refused.smoke).toBe(false)

    const smoke = await dataReport(c, file, {smoke: true})
    expect(failedRowChecks(smoke)).toEqual([])
    expect(resultsOf(smoke, 'data.split')[0]).toMatchObject({status: 'pass', evidence: {split: 'example', smoke: true}})
    expect(resultsOf(smoke, 'data.split')[0].message).toMatch(/^SMOKE RUN: the example split is accepted only because --smoke was passed/)
    expect(smoke.smoke).toBe(true)
  })

  it('a contract recorded for a smoke run (data.smoke) needs no flag, and still says SMOKE', async () => {
    const c = await dataCase('calendar')
    await editContractData(c, {split: 'example', dataset: 'example', raw_filename: 'calendar_example.jsonl', smoke: true})
    const file = path.join(c.data, 'calendar_example.jsonl')
    await copyFile(SNAPSHOT_ROWS.calendar, file)
    const report = await dataReport(c, file)
    expect(failedRowChecks(report)).toEqual([])
    expect(resultsOf(report, 'data.split')[0].message).toContain('because recipe.yaml sets data.smoke')
    expect(report.smoke).toBe(true)
  })

  it('a gsm8k-style benchmark file is refused', async () => {
    const c = await dataCase('calendar')
    await unlink(path.join(c.dir, 'recipe.yaml'))
    const prepare = path.join(c.dir, 'prepare_calendar.sh')
    await writeFile(prepare, (await readFile(prepare, 'utf8')).replace(/^RAW_FILENAME=.*$/m, "RAW_FILENAME='gsm8k_benchmark.jsonl'"))
    const file = path.join(c.data, 'gsm8k_benchmark.jsonl')
    await copyFile(SNAPSHOT_ROWS.calendar, file)
    expect(resultsOf(await dataReport(c, file), 'data.split')[0]).toMatchObject({status: 'fail', evidence: {split: 'benchmark'}})
  })
})

describe('conversion preservation', () => {
  it('[r2e-gym#5] fails when the checkout\'s convert_dataset.py drops a verifier field from metadata', async () => {
    const c = await dataCase('calendar')
    const converter = path.join(c.relaxRoot, CONVERTER_IN_CHECKOUT)
    const text = await readFile(converter, 'utf8')
    const broken = text.replace('metadata = {k: v for k, v in row.items() if k != "responses_create_params"}', 'metadata = {k: v for k, v in row.items() if k not in ("responses_create_params", "exp_cal_state")}')
    expect(broken).not.toBe(text)
    await writeFile(converter, broken)
    const file = path.join(c.data, CAL)
    await copyFile(SNAPSHOT_ROWS.calendar, file)
    const report = await dataReport(c, file)
    expect(failedRowChecks(report)).toEqual(['data.conversion'])
    const results = resultsOf(report, 'data.conversion')
    expect(results.map((r) => r.line)).toEqual([1, 2, 3, 4, 5])
    expect(results[0].message).toBe('line 1: examples/nemo_gym_agentic/scripts/convert_dataset.py does not keep exp_cal_state')
  })

  it("fails when the converter disagrees with Relax's conversion rules elsewhere (tools not lifted into metadata)", async () => {
    const c = await dataCase('workplace-assistant')
    const converter = path.join(c.relaxRoot, CONVERTER_IN_CHECKOUT)
    await writeFile(converter, (await readFile(converter, 'utf8')).replace('for key in ("tools", "parallel_tool_calls"):', 'for key in ("parallel_tool_calls",):'))
    const file = path.join(c.data, WPA)
    await copyFile(SNAPSHOT_ROWS.workplace, file)
    const report = await dataReport(c, file)
    expect(resultsOf(report, 'data.conversion')[0].message).toBe('line 1: examples/nemo_gym_agentic/scripts/convert_dataset.py does not keep responses_create_params.tools')
  })

  it("without a converter in the checkout, says Relax's conversion rules alone were applied", async () => {
    const c = await dataCase('calendar', {converter: false})
    const file = path.join(c.data, CAL)
    await copyFile(SNAPSHOT_ROWS.calendar, file)
    const report = await dataReport(c, file)
    expect(resultsOf(report, 'data.conversion')[0]).toMatchObject({status: 'pass'})
    expect(resultsOf(report, 'data.conversion')[0].message).toContain('the checkout has no examples/nemo_gym_agentic/scripts/convert_dataset.py')
  })
})

describe('shared storage', () => {
  it('is "not checked" (never a pass) when no Docker daemon answers', async () => {
    const c = await dataCase('calendar')
    const file = path.join(c.data, CAL)
    await writeFile(file, await repeatedRows(SNAPSHOT_ROWS.calendar))
    const report = await dataReport(c, file, {env: {DOCKER_HOST: `unix://${path.join(c.data, 'no-docker.sock')}`}})
    const storage = resultsOf(report, 'data.shared-storage')[0]
    expect(storage.status).toBe('skip')
    expect(storage.message).toMatch(/^not checked: no Docker daemon answers at .*no-docker\.sock/)
    expect(report.rungs.find((r) => r.rung === 'data')?.status).toBe('incomplete')
    expect(report.status).toBe('fail')
  })

  describe.skipIf(!docker)('with the Docker Engine', () => {
    let image: string
    beforeAll(async () => {
      image = await ensureBaseImage()
    }, 900_000)

    it('before the recipe image is built, probes from a local image that has wc, and says which', async () => {
      const c = await dataCase('calendar')
      const file = path.join(c.data, CAL)
      await writeFile(file, await repeatedRows(SNAPSHOT_ROWS.calendar))
      const report = await dataReport(c, file, {env: {...REAL_DOCKER}})
      const storage = resultsOf(report, 'data.shared-storage')[0]
      expect(storage.status).toBe('pass')
      expect(storage.message).toMatch(/^visible inside a container at .* \(image: .*NEMO_GYM_IMAGE gymrecipe-test-absent:none is not built here\)\)?$/)
    })

    it('sees the file through a bind mount at the same path, with the same size, and removes its container', async () => {
      const c = await dataCase('calendar')
      const file = path.join(c.data, CAL)
      await writeFile(file, await repeatedRows(SNAPSHOT_ROWS.calendar))
      const report = await dataReport(c, file, {env: {GYMRECIPE_PROBE_IMAGE: image, ...REAL_DOCKER}})
      const storage = resultsOf(report, 'data.shared-storage')[0]
      expect(storage.status).toBe('pass')
      expect(storage.evidence).toMatchObject({image, network: 'none', status: 'seen', size: (await readFile(file)).length})
      expect(storage.message).toContain(`GYMRECIPE_PROBE_IMAGE ${image}`)
      expect(report.status).toBe('pass')
      const {execa} = await import('execa')
      const left = await execa('docker', ['ps', '-a', '-q', '--filter', `id=${String(storage.evidence?.containerId)}`])
      expect(left.stdout.trim()).toBe('')
    })

    it('fails when the file lives in a mount only this shell sees (as under Docker-in-Docker)', async () => {
      const c = await dataCase('calendar')
      const shared = await mkdtemp(path.join(os.tmpdir(), 'gr-private-'))
      const file = path.join(shared, CAL)
      // A private mount namespace with a tmpfs over `shared`: the CLI reads the file, the daemon sees an empty dir.
      const script = `mount -t tmpfs none "$1" && cp "$2" "$1/${CAL}" && exec "$3" "$4" verify calendar --level data --relax-root "$5" --json`
      const {execa} = await import('execa')
      const result = await execa('unshare', ['-m', 'sh', '-c', script, 'sh', shared, SNAPSHOT_ROWS.calendar, process.execPath, path.join(repoRoot, 'bin/run.js'), c.relaxRoot], {
        reject: false,
        env: {NEMO_GYM_SOURCE_DATA: file, NEMO_GYM_IMAGE: image, NO_COLOR: '1'},
        timeout: 120_000,
      })
      const report = JSON.parse(String(result.stdout)).result
      const storage = report.rungs.find((r: any) => r.rung === 'data').checks.find((ch: any) => ch.id === 'data.shared-storage')
      expect(storage.status).toBe('fail')
      expect(storage.message).toContain(`${file} is not visible inside a container at the same path: wc -c exited 1`)
      expect(storage.evidence.image_choice).toBe(`the recipe's NEMO_GYM_IMAGE ${image}`)
      expect(result.exitCode).toBe(4)
      await rm(shared, {recursive: true, force: true})
    })
  })
})
