/**
 * Long reads show progress on a terminal: `tasks build` and `rollouts ingest` on files big enough
 * to take a few seconds, run in a tmux pane, show a rewritten progress line (share, size, lines,
 * rate) while they work, and their summary when done. Through a pipe or under --json they stay
 * quiet (a plain line every ten seconds at most).
 */
import {execa} from 'execa'
import {existsSync} from 'node:fs'
import {mkdtemp, readFile, rm, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {repoRoot, runCli} from '../helpers/cli.js'

const ROWS = 40_000
// ingest reads about 250 MiB/s here: 120,000 rollouts (245 MiB) take about a second, several of the
// 250 ms progress intervals, where 40,000 could finish before the first line was captured
const ROLLOUTS = 120_000
let dir: string

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'gr-progress-'))
  const seed = JSON.parse((await readFile(path.join(repoRoot, 'test/fixtures/tasks/seed-rows.jsonl'), 'utf8')).split('\n')[0])
  const rows = Array.from({length: ROWS}, (_, i) => JSON.stringify({...seed, seed_id: i})).join('\n')
  await writeFile(path.join(dir, 'rows.jsonl'), `${rows}\n`)
  const spec = path.join(repoRoot, 'test/fixtures/tasks/workplace-declarative.yaml')
  await runCli(['tasks', 'build', path.join(repoRoot, 'test/fixtures/tasks/seed-rows.jsonl'), '--spec', spec, '-o', path.join(dir, 'bundles.jsonl')])
  await runCli(['tasks', 'export', path.join(dir, 'bundles.jsonl'), '-o', path.join(dir, 'tasks.jsonl')])
  const index = /"_ng_task_index":\s*(\d+)/.exec(await readFile(path.join(dir, 'tasks.jsonl'), 'utf8'))![1]
  const rollout = `{"_ng_task_index":${index},"reward":1,"response":{"output":[{"type":"message","content":[{"type":"output_text","text":"${'x'.repeat(2000)}"}]}]}}`
  const chunk = `${Array(10_000).fill(rollout).join('\n')}\n`
  await writeFile(path.join(dir, 'rollouts.jsonl'), Array(ROLLOUTS / 10_000).fill(chunk))
}, 120_000)

afterAll(async () => {
  await rm(dir, {recursive: true, force: true})
})

/** Run a command in a tmux pane; return every distinct screen seen while it ran, and the last. */
async function watch(args: string[]): Promise<{during: string[]; final: string; exit: number}> {
  const session = `gr-progress-${process.pid}-${args[0]}`
  const done = path.join(dir, `${args[0]}.exit`)
  const command = [process.execPath, path.join(repoRoot, 'bin/run.js'), ...args].map((a) => JSON.stringify(a)).join(' ')
  await execa('tmux', ['new-session', '-d', '-s', session, '-x', '250', '-y', '50', `env NO_COLOR=1 ${command}; echo $? > ${JSON.stringify(done)}; sleep 600`])
  const during = new Set<string>()
  try {
    for (let i = 0; i < 1200 && !existsSync(done); i++) {
      during.add(String((await execa('tmux', ['capture-pane', '-t', session, '-p'])).stdout))
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    const final = String((await execa('tmux', ['capture-pane', '-t', session, '-p'])).stdout)
    return {during: [...during], final, exit: Number((await readFile(done, 'utf8')).trim())}
  } finally {
    await execa('tmux', ['kill-session', '-t', session], {reject: false})
  }
}

describe('progress on a terminal', () => {
  it('tasks build shows how far it has read while it works', async () => {
    const r = await watch(['tasks', 'build', path.join(dir, 'rows.jsonl'), '--spec', path.join(repoRoot, 'test/fixtures/tasks/workplace-declarative.yaml'), '-o', path.join(dir, 'out.jsonl')])
    expect(r.exit).toBe(0)
    const progress = r.during.filter((screen) => /^tasks build: \d+% of \S+rows\.jsonl \(\d+\.\d MiB of \d+\.\d MiB\), \d+ lines, \d+\.\d MiB\/s$/m.test(screen) && !screen.includes('Wrote'))
    expect(progress.length, r.during.join('\n----\n')).toBeGreaterThan(0)
    expect(r.final).toContain(`Wrote ${ROWS} scenario bundles to`)
  }, 180_000)

  it('rollouts ingest shows how far it has read while it works', async () => {
    const r = await watch(['rollouts', 'ingest', '--tasks', path.join(dir, 'tasks.jsonl'), '--rollouts', path.join(dir, 'rollouts.jsonl'), '-o', path.join(dir, 'normalized.jsonl')])
    expect(r.exit).toBe(0)
    const progress = r.during.filter((screen) => /^rollouts ingest: \d+% of \S+rollouts\.jsonl \(/m.test(screen) && !screen.includes('Wrote'))
    expect(progress.length, r.during.join('\n----\n')).toBeGreaterThan(0)
    expect(r.final).toContain(`Wrote ${ROLLOUTS} records to`)
  }, 180_000)

  it('through a pipe a short run prints no progress lines, and --json prints only the envelope', async () => {
    const piped = await runCli(['tasks', 'build', path.join(dir, 'rows.jsonl'), '--spec', path.join(repoRoot, 'test/fixtures/tasks/workplace-declarative.yaml'), '-o', path.join(dir, 'piped.jsonl'), '--json'])
    expect(piped.exitCode).toBe(0)
    expect(piped.stderr).not.toContain('tasks build:')
    expect(piped.envelope).toMatchObject({status: 'ok', exit_code: 0, result: {bundles: ROWS}})
  }, 180_000)
})
