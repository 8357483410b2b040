/**
 * `call` writes each output line by hand (the row's own bytes, then the envelope columns as
 * text) instead of serialising an object per row. Every line it writes must be exactly what
 * serialising that line's value gives: same keys, same order, same escaping, no spacing, numbers
 * as written. Rows cover success, HTTP and transport failures, answers and reasons with quotes,
 * backslashes, control characters and non-ASCII text, big integers, and the harness columns.
 */
import {parse, stringify} from 'lossless-json'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {type GymFixture, startGymFixture} from '../fixtures/call/services.js'
import {callRun} from '../helpers/call.js'

let gym: GymFixture

beforeAll(async () => {
  gym = await startGymFixture()
})
afterAll(async () => {
  await gym.close()
})

const SQL = '"select count(*) as n from items"'

function expectCanonical(lines: string[] | undefined, count: number): void {
  expect(lines).toHaveLength(count)
  for (const line of lines!) expect(line).toBe(stringify(parse(line)))
}

describe('the output lines call writes by hand', () => {
  it('call resource: are what serialising each line gives, for every outcome', async () => {
    const rows = [
      `{"id":"ok","sql":${SQL},"fault":null,"echo":null,"extra":0}`,
      `{"id":"quote\\"d \\\\ back\\u0001","sql":${SQL},"fault":null,"echo":"é ✓ 日本 \\"x\\" \\\\ \\u001f","extra":"ü"}`,
      `{"id":12345678901234567890,"sql":${SQL},"fault":"4xx","echo":null,"extra":0}`,
      `{"id":"down","sql":${SQL},"fault":"5xx","echo":null,"extra":0}`,
      `{"id":"garbled","sql":${SQL},"fault":"malformed","echo":null,"extra":0}`,
      `{"id":"gone","sql":${SQL},"fault":"reset","echo":null,"extra":0}`,
      `{"id":"float","sql":${SQL},"fault":null,"echo":123456789012345678901,"extra":1.50e+3}`,
    ]
    const config = `name: execution\nendpoint: ${gym.url}\nroute: /execute\nrow_id_column: id\nrequest_columns: {sql: sql, fault: fault, echo: echo}\nprovenance_columns: [extra]\n`
    const run = await callRun('resource', config, rows)
    expect(run.summary.completed).toBe(3)
    expect(run.summary.failed).toBe(4)
    expectCanonical(run.lines, rows.length)
    // The row's own bytes come first, untouched (the big integer and the float as written).
    expect(run.lines![2].startsWith('{"id":12345678901234567890,')).toBe(true)
    expect(run.lines![6]).toContain('"extra":1.50e+3')
  })

  it('call harness: the answer and the evidence columns, with and without a tool trace', async () => {
    const config = `name: answer\nevidence_column: harness_evidence\nendpoint: ${gym.url}\nrow_id_column: id\nrequest_columns: {input: question, shape: shape}\n`
    const rows = ['final', 'pending_tool', 'refusal', 'empty', 'no_output'].map((shape, i) => JSON.stringify({id: `h${i}`, question: `q "${i}" \\ ✓`, shape}))
    const run = await callRun('harness', config, rows)
    expect(run.summary.rows).toBe(rows.length)
    expectCanonical(run.lines, rows.length)
  })
})
