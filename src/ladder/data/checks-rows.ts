import {promises as fsp} from 'node:fs'
import path from 'node:path'

import {isJsonObject, type JsonObject} from '../../json/index.js'
import {runConvertDataset} from '../../runtime/convert-dataset.js'
import {type Check, type CheckOutcome, passOrProblems} from '../types.js'
import {ConversionError, convertRow, expectedInConverted, jsonDifferences, parseRow, type RelaxRow, valueAtPath} from './convert.js'
import {countNonBlankLines} from './count.js'
import type {JsonlStats} from './jsonl-scan.js'
import {dataScan, sourceUnusable} from './scan.js'
import type {SampledRow} from './sample.js'


/** Relax's converter, relative to the checkout root. */
export const CONVERTER = 'examples/nemo_gym_agentic/scripts/convert_dataset.py'

function countNotes(stats: JsonlStats): string[] {
  const notes: string[] = []
  if (stats.newlines !== stats.lines) notes.push(`wc -l says ${stats.newlines}: the last line has no newline`)
  if (stats.blankLines > 0) notes.push(`${stats.blankLines} blank line(s) skipped`)
  if (stats.crlfLines > 0) notes.push(`${stats.crlfLines} CRLF line ending(s)`)
  return notes
}

function countEvidence(stats: JsonlStats): Record<string, unknown> {
  const {bytes, rows, objectRows, badRows, blankLines, crlfLines, bom, finalNewline, lines, newlines} = stats
  return {bytes, rows, objectRows, badRows, blankLines, crlfLines, bom, finalNewline, lines, wcLines: newlines}
}

export const jsonRows: Check = {
  id: 'data.rows',
  title: 'every non-empty line is a JSON object',
  async run(ctx) {
    const scan = await dataScan(ctx)
    const {stats, plan} = scan
    if (!stats || !plan.file) return sourceUnusable(scan)
    const file = plan.file
    const evidence = {...countEvidence(stats), threads: scan.threads}
    if (stats.rows === 0) return {status: 'fail', message: `no rows: ${stats.lines} line(s), all blank`, file, hint: 'The prepare step wrote nothing useful; rerun `gymrecipe prepare` and read its output.', evidence}
    const problems: CheckOutcome[] = []
    if (stats.badRows > 0) {
      const listed = stats.problems.length < stats.badRows ? ` (the first ${stats.problems.length} follow)` : ''
      problems.push({status: 'fail', message: `${stats.badRows} of ${stats.rows} rows are not JSON objects the input policy accepts${listed}`, file, line: stats.problems[0].line, evidence: {...evidence, problems: stats.problems}, hint: "Each line must hold exactly one JSON object within the input policy (README: Input policy); fix or regenerate the file (`gymrecipe prepare`)."})
      for (const p of stats.problems) problems.push({status: 'fail', message: `line ${p.line}${p.column ? `, byte ${p.column}` : ''}: ${p.reason}`, file, line: p.line})
    }
    if (stats.bom) {
      problems.push({status: 'fail', message: 'the file starts with a UTF-8 byte order mark: convert_dataset.py and Gym read it with encoding="utf-8", and json.loads rejects line 1', file, line: 1, hint: `Strip it: sed -i '1s/^\\xEF\\xBB\\xBF//' ${file}`, evidence})
    }
    const notes = countNotes(stats)
    return passOrProblems(this.id, this.title, problems, {status: 'pass', message: `${stats.rows} rows, every one a JSON object${notes.length ? ` (${notes.join('; ')})` : ''}`, evidence})
  },
}

export const verifierFields: Check = {
  id: 'data.fields',
  title: 'every row keeps the fields the agent and verifier need',
  async run(ctx) {
    const scan = await dataScan(ctx)
    const {stats, plan} = scan
    if (!stats || !plan.file) return sourceUnusable(scan)
    if (stats.objectRows === 0) return {status: 'skip', message: 'not checked: no row is a JSON object'}
    const problems: CheckOutcome[] = []
    for (const gap of stats.missing.filter((m) => m.rows > 0)) {
      const more = gap.rows > gap.lines.length ? `, ... (${gap.rows - gap.lines.length} more)` : ''
      problems.push({
        status: 'fail',
        message: `${gap.rows} of ${stats.objectRows} rows miss ${gap.field} (absent or null): line ${gap.lines.join(', ')}${more}`,
        file: plan.file,
        line: gap.lines[0],
        evidence: {field: gap.field, rows: gap.rows, lines: gap.lines, fieldsFrom: plan.fieldsFrom},
        hint: `Regenerate the data from the pinned Gym source; a converter or filter that drops ${gap.field} makes the verifier fail or score 0.`,
      })
    }
    return passOrProblems(this.id, this.title, problems, {
      status: 'pass',
      message: `${stats.objectRows} rows keep ${plan.fields.join(', ')} (fields from ${plan.fieldsFrom})`,
      evidence: {fields: plan.fields, fieldsFrom: plan.fieldsFrom},
    })
  },
}

export const rowCount: Check = {
  id: 'data.row-count',
  title: 'the row count comes from the file and matches the converted preview',
  async run(ctx) {
    const scan = await dataScan(ctx)
    const {stats, plan} = scan
    if (!stats || !plan.file) return sourceUnusable(scan)
    const preview = plan.previewFile
    const exists = preview ? await fsp.stat(preview).then((s) => s.isFile()).catch(() => false) : false
    const evidence: Record<string, unknown> = {raw: plan.file, rawRows: stats.rows, wcLines: stats.newlines}
    if (!preview || !exists) return {status: 'pass', message: `${stats.rows} rows counted in the file (no converted preview beside it)`, evidence}
    const previewRows = await countNonBlankLines(preview, ctx.options.signal)
    Object.assign(evidence, {preview, previewRows})
    if (previewRows !== stats.rows) {
      return {status: 'fail', message: `${path.basename(plan.file)} has ${stats.rows} rows but ${path.basename(preview)} has ${previewRows}`, file: preview, evidence, hint: 'The preview is stale or the conversion lost rows; rerun `gymrecipe prepare` (never edit either file by hand).'}
    }
    return {status: 'pass', message: `${stats.rows} raw rows = ${previewRows} rows in ${path.basename(preview)}`, evidence}
  },
}

interface Converted {
  sampled: SampledRow
  raw: JsonObject
  relax: RelaxRow
}

export const conversion: Check = {
  id: 'data.conversion',
  title: 'the Relax conversion keeps every verifier field',
  async run(ctx) {
    const scan = await dataScan(ctx)
    const {stats, plan} = scan
    if (!stats || !plan.file) return sourceUnusable(scan)
    if (scan.sample.length === 0) return {status: 'skip', message: 'not checked: no valid row to convert'}
    const file = plan.file
    const problems: CheckOutcome[] = []
    const converted: Converted[] = []
    for (const sampled of scan.sample) {
      const raw = parseRow(sampled.text)
      if (!isJsonObject(raw)) continue
      try {
        const relax = convertRow(raw)
        converted.push({sampled, raw, relax})
        for (const field of lostFields(raw, relax, plan.fields)) problems.push({status: 'fail', message: `line ${sampled.line}: the conversion does not keep ${field}`, file, line: sampled.line})
      } catch (error) {
        if (!(error instanceof ConversionError)) throw error
        problems.push({status: 'fail', message: `line ${sampled.line}: cannot be converted: ${error.message}`, file, line: sampled.line, hint: 'Relax cannot train on this row; regenerate the data from the pinned Gym source.'})
      }
    }
    const sampleNote = `${converted.length} sampled row(s) (the first rows plus a seeded random sample)`
    const script = path.join(ctx.target.relaxRoot, CONVERTER)
    const hasScript = await fsp.access(script).then(() => true, () => false)
    if (!hasScript) {
      return passOrProblems(this.id, this.title, problems, {status: 'pass', message: `${sampleNote}: every verifier field lands in input/metadata (Relax's conversion rules; the checkout has no ${CONVERTER} to compare with)`})
    }
    const compared = await compareWithPython(script, converted, plan.fields, file, ctx.options.env)
    problems.push(...compared.problems)
    return passOrProblems(this.id, this.title, problems, {status: 'pass', message: `${sampleNote}: every verifier field kept, and ${CONVERTER} agrees row for row`, evidence: {command: compared.command, rows: converted.map((c) => c.sampled.line)}})
  },
}

/** Verifier fields that are not where Relax's conversion says they must be in the converted row. */
function lostFields(raw: JsonObject, relax: RelaxRow, fields: readonly string[]): string[] {
  const row = {input: relax.input, metadata: relax.metadata}
  return fields.filter((field) => {
    const expected = expectedInConverted(raw, field)
    return expected !== undefined && jsonDifferences(expected.value, valueAtPath(row, expected.path)).length > 0
  })
}

async function compareWithPython(script: string, converted: Converted[], fields: readonly string[], file: string, env: NodeJS.ProcessEnv): Promise<{problems: CheckOutcome[]; command?: string}> {
  if (converted.length === 0) return {problems: []}
  const outcome = await runConvertDataset(script, converted.map((c) => c.sampled.text), {env})
  if (outcome.status === 'no-python') return {problems: [{status: 'skip', message: `not checked against ${CONVERTER}: ${outcome.reason}`, hint: 'Install python3 (the training job converts with it).'}]}
  if (outcome.status === 'failed') return {problems: [{status: 'fail', message: `${CONVERTER} failed on the sampled rows: ${outcome.reason}`, file, hint: 'The training job converts with this script; it must accept these rows.'}], command: outcome.command}
  if (outcome.lines.length !== converted.length) {
    return {problems: [{status: 'fail', message: `${CONVERTER} wrote ${outcome.lines.length} rows for ${converted.length} input rows`, file}], command: outcome.command}
  }
  const problems: CheckOutcome[] = []
  converted.forEach((c, k) => {
    const python = parseRow(outcome.lines[k])
    const line = c.sampled.line
    if (!isJsonObject(python)) {
      problems.push({status: 'fail', message: `line ${line}: ${CONVERTER} wrote something that is not a JSON object`, file, line})
      return
    }
    const lost = lostFields(c.raw, {input: python.input, metadata: isJsonObject(python.metadata) ? python.metadata : {}}, fields)
    for (const field of lost) problems.push({status: 'fail', message: `line ${line}: ${CONVERTER} does not keep ${field}`, file, line, hint: 'Fix the converter: the verifier reads this field from metadata (Workplace PITFAIL #5, R2E #5).'})
    const differences = jsonDifferences({input: c.relax.input, metadata: c.relax.metadata}, python)
    if (lost.length === 0 && differences.length > 0) {
      problems.push({status: 'fail', message: `line ${line}: ${CONVERTER} differs from Relax's conversion rules at ${differences.join(', ')}`, file, line, hint: 'The checkout converts differently than documented; check what the training job will see.'})
    }
  })
  return {problems, command: outcome.command}
}
