/**
 * What a person sees of a climb, on a terminal (a tmux pane, so the final screen is compared, not
 * the cursor moves) and without one (`| cat`), against committed expected output: a passing
 * climb, a failing one with a not-checked check, and one that could not be fully checked. Paths
 * are replaced by placeholders; set GYMRECIPE_UPDATE_EXPECTED=1 to rewrite the files after an
 * intended change, and review the diff.
 */
import {execa} from 'execa'
import {existsSync} from 'node:fs'
import {mkdir, mkdtemp, readFile, rm, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {repoRoot} from '../helpers/cli.js'
import {generatedRecipe} from '../helpers/recipes.js'

const EXPECTED = path.join(repoRoot, 'test/e2e/expected')
const ROW = '{"responses_create_params":{"input":[{"role":"user","content":"plan my day"}]},"exp_cal_state":{"1":{"event_id":1}}}'
const NO_DOCKER = 'unix:///nonexistent/docker.sock'

let relaxRoot: string
let data: string

beforeAll(async () => {
  ;({relaxRoot} = await generatedRecipe('calendar', 'render'))
  data = await mkdtemp(path.join(os.tmpdir(), 'gr-render-'))
  await mkdir(path.join(data, 'good'))
  await mkdir(path.join(data, 'bad'))
  await writeFile(path.join(data, 'good', 'render_train.jsonl'), `${ROW}\n`.repeat(32))
  await writeFile(path.join(data, 'bad', 'render_train.jsonl'), `${ROW}\n{"responses_create_params":{"input":[]}}\n[1]\n`)
}, 120_000)

afterAll(async () => {
  await rm(relaxRoot, {recursive: true, force: true})
  await rm(data, {recursive: true, force: true})
})

const climbs: Record<string, {args: string[]; source?: string; exit: number}> = {
  'static-pass': {args: ['--level', 'static'], exit: 0},
  'data-fail': {args: ['--only', 'data'], source: 'bad', exit: 4},
  'data-not-checked': {args: ['--only', 'data'], source: 'good', exit: 4},
}

function env(source?: string): Record<string, string> {
  return {DOCKER_HOST: NO_DOCKER, NO_COLOR: '1', ...(source ? {NEMO_GYM_SOURCE_DATA: path.join(data, source, 'render_train.jsonl')} : {})}
}

function normalize(text: string): string {
  return `${text
    .replaceAll(relaxRoot, '<relax-root>')
    .replaceAll(data, '<data>')
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n')
    .trim()}\n`
}

async function compare(name: string, actual: string): Promise<void> {
  const file = path.join(EXPECTED, name)
  if (process.env.GYMRECIPE_UPDATE_EXPECTED === '1' || !existsSync(file)) {
    if (process.env.CI || process.env.GYMRECIPE_REQUIRE_DOCKER) expect.fail(`${file} is missing: run with GYMRECIPE_UPDATE_EXPECTED=1 and commit it`)
    await writeFile(file, actual)
  }
  expect(actual).toBe(await readFile(file, 'utf8'))
}

const cli = (climb: {args: string[]}) => [process.execPath, path.join(repoRoot, 'bin/run.js'), 'verify', 'render', '--relax-root', relaxRoot, ...climb.args]

describe('the ladder as a person sees it', () => {
  it.each(Object.entries(climbs))('%s, without a terminal', async (name, climb) => {
    const [file, ...args] = cli(climb)
    const r = await execa(file, args, {reject: false, env: env(climb.source)})
    expect(r.exitCode).toBe(climb.exit)
    expect(r.stderr).toBe('')
    await compare(`${name}.plain.txt`, normalize(String(r.stdout)))
  }, 120_000)

  it.each(Object.entries(climbs))('%s, on a terminal', async (name, climb) => {
    const session = `gr-render-${process.pid}-${name}`
    const done = path.join(data, `${name}.exit`)
    const command = [...Object.entries(env(climb.source)).map(([k, v]) => `${k}=${JSON.stringify(v)}`), ...cli(climb).map((a) => JSON.stringify(a))].join(' ')
    await execa('tmux', ['new-session', '-d', '-s', session, '-x', '250', '-y', '120', `env ${command}; echo $? > ${JSON.stringify(done)}; sleep 600`])
    try {
      for (let i = 0; i < 600 && !existsSync(done); i++) await new Promise((resolve) => setTimeout(resolve, 200))
      expect(Number((await readFile(done, 'utf8')).trim())).toBe(climb.exit)
      const screen = await execa('tmux', ['capture-pane', '-t', session, '-p', '-S', '-200'])
      await compare(`${name}.tty.txt`, normalize(String(screen.stdout)))
    } finally {
      await execa('tmux', ['kill-session', '-t', session], {reject: false})
    }
  }, 180_000)
})
