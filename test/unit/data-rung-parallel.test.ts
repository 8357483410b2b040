/**
 * A large file is scanned in line-aligned ranges on worker threads; the stitched result must be
 * exactly what one sequential scan reports (counts, bad lines and missing fields with their
 * file line numbers, in order). Workers only exist in the build, so this imports dist/
 * (run `npx tsc -p tsconfig.json` first, as for the CLI tests).
 */
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {repoRoot} from '../helpers/cli.js'

const {scanWithSample, lineAlignedBounds} = await import(path.join(repoRoot, 'dist/ladder/data/parallel-scan.js'))
const FIELDS = ['responses_create_params.input', 'exp_cal_state']

describe('parallel scan', () => {
  let dir: string
  let file: string
  const expectedBad: number[] = []
  const expectedMissing: number[] = []
  let lines = 0

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'gr-parallel-'))
    file = path.join(dir, 'rows.jsonl')
    const out: string[] = []
    for (let k = 1; k <= 30_000; k++) {
      const filler = 'x'.repeat(k % 97)
      if (k % 4999 === 0) {
        out.push(`{"responses_create_params": {"input": "${filler}`) // truncated
        expectedBad.push(k)
      } else if (k % 3331 === 0) {
        out.push(`{"responses_create_params": {"input": []}, "note": "${filler}"}`)
        expectedMissing.push(k)
      } else if (k % 1000 === 0) {
        out.push('   ') // blank
      } else {
        out.push(`{"responses_create_params": {"input": [{"role": "user", "content": "${filler}\\n\\"q\\""}]}, "exp_cal_state": {"${k}": {"event_id": ${k}}}}${k % 7 === 0 ? '\r' : ''}`)
      }
    }
    lines = out.length
    await writeFile(file, out.join('\n') + '\n')
  })

  afterAll(async () => {
    await rm(dir, {recursive: true, force: true})
  })

  it('splits only after newlines', async () => {
    const {size} = await import('node:fs').then((fs) => fs.statSync(file))
    const bounds: number[] = await lineAlignedBounds(file, size, 4)
    expect(bounds).toHaveLength(5)
    const text = await import('node:fs').then((fs) => fs.readFileSync(file))
    for (const b of bounds.slice(1, -1)) expect(text[b - 1]).toBe(0x0a)
  })

  it('stitches ranges into exactly the sequential result', async () => {
    const options = {fields: FIELDS, maxProblems: 100, maxMissingLines: 100}
    const one = await scanWithSample(file, {...options, threads: 1})
    const four = await scanWithSample(file, {...options, threads: 4, minParallelBytes: 1})
    expect(one.threads).toBe(1)
    expect(four.threads).toBe(4)
    expect(four.stats).toEqual(one.stats)
    expect(one.stats.lines).toBe(lines)
    expect(one.stats.problems.map((p: any) => p.line)).toEqual(expectedBad)
    expect(one.stats.missing[1].lines).toEqual(expectedMissing)
    // The sample: the first 16 rows, then rows from across the file, each at its true line.
    const rowsByLine = (await import('node:fs')).readFileSync(file, 'utf8').split('\n')
    expect(four.sample.slice(0, 16).map((s: any) => s.line)).toEqual(Array.from({length: 16}, (_, k) => k + 1))
    for (const s of four.sample) expect(rowsByLine[s.line - 1]).toBe(s.text)
    expect(Math.max(...four.sample.map((s: any) => s.line))).toBeGreaterThan(lines / 2)
  })
})
