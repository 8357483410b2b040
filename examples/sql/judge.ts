/**
 * The judge and filter step, deterministic: it reads the rows after the three calls and adds a
 * `judge` column. A candidate is accepted when, on every database variant,
 *   - its execution call completed and SQLite ran it without error,
 *   - it returned the same rows as the question's reference SQL (as a multiset: row order is
 *     not compared), and
 *   - the tool-using agent's answer names the candidate's first value.
 * `judge.keep` is true on the accepted candidate's `original` row only, so `tasks build`
 * (`include: judge.keep`) makes one task per accepted candidate.
 *
 *   node --import tsx examples/sql/judge.ts answered.jsonl judged.jsonl
 *
 * A model judge goes here instead: a `gymrecipe call harness` to a judge agent (or a Data
 * Designer LLM-judge column) whose verdict lands in a column that `include` reads.
 */
import {isMain} from '../lib/json-service.js'
import {readJsonl, writeJsonl} from '../lib/jsonl.js'

interface Verdict {
  accepted_here: boolean
  reasons: string[]
}

function rowsOf(envelope: any): {rows?: unknown[][]; error?: string} {
  if (envelope?.status !== 'completed') return {error: `the call failed (${envelope?.failure_kind ?? 'no envelope'}: ${envelope?.failure_reason ?? ''})`}
  const response = JSON.parse(envelope.response_json)
  if (typeof response?.error === 'string') return {error: `SQLite: ${response.error}`}
  if (!Array.isArray(response?.rows)) return {error: 'the response has no rows'}
  return {rows: response.rows}
}

const multiset = (rows: unknown[][]) => rows.map((r) => JSON.stringify(r)).sort().join('\n')

export function judgeRow(row: any): Verdict {
  const reasons: string[] = []
  const candidate = rowsOf(row.execution)
  const reference = rowsOf(row.reference)
  if (candidate.error) reasons.push(`candidate: ${candidate.error}`)
  if (reference.error) reasons.push(`reference: ${reference.error}`)
  if (candidate.rows && reference.rows && multiset(candidate.rows) !== multiset(reference.rows)) {
    reasons.push(`result differs from the reference on ${row.database_variant}: ${JSON.stringify(candidate.rows)} instead of ${JSON.stringify(reference.rows)}`)
  }
  const first = candidate.rows?.[0]?.[0]
  if (row.harness_evidence?.status !== 'completed' || typeof row.answer !== 'string') {
    reasons.push(`the agent gave no answer (${row.harness_evidence?.failure_kind ?? 'no evidence'})`)
  } else if (first !== undefined && !row.answer.includes(String(first))) {
    reasons.push(`the agent's answer ${JSON.stringify(row.answer)} does not name ${JSON.stringify(String(first))}`)
  }
  return {accepted_here: reasons.length === 0, reasons}
}

export function judgeRows(rows: any[]): any[] {
  const verdicts = rows.map(judgeRow)
  const rejectedCandidates = new Set<string>()
  rows.forEach((row, i) => {
    if (!verdicts[i].accepted_here) rejectedCandidates.add(row.candidate.id)
  })
  return rows.map((row, i) => {
    const accepted = !rejectedCandidates.has(row.candidate.id)
    return {...row, judge: {...verdicts[i], accepted, keep: accepted && row.database_variant === 'original'}}
  })
}

/** Judge the rows of `input` into `output`; the judged rows. */
export function judgeFile(input: string, output: string): any[] {
  const judged = judgeRows(readJsonl(input))
  writeJsonl(output, judged)
  return judged
}

if (isMain(import.meta.url)) {
  const [input, output] = process.argv.slice(2)
  if (!input || !output) {
    process.stderr.write('usage: judge.ts answered.jsonl judged.jsonl\n')
    process.exit(2)
  }
  const judged = judgeFile(input, output)
  const kept = judged.filter((row) => row.judge.keep).map((row) => row.candidate.id)
  process.stdout.write(`${JSON.stringify({rows: judged.length, accepted_candidates: kept})}\n`)
}
