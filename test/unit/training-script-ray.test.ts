/**
 * What the generated training script does around `ray job submit`, run with real bash and real
 * Python: it resolves the Ray Jobs endpoint exactly as gymrecipe does (runtime/ray-jobs.ts), and it
 * refuses, before submitting, an entrypoint argument that one of Ray's two entrypoint joins
 * (shlex.join in Ray 2.58, list2cmdline before) would hand on changed.
 */
import {execFileSync} from 'node:child_process'
import path from 'node:path'
import {beforeAll, describe, expect, it} from 'vitest'

import {loadContractFile} from '../../src/contract/load.js'
import {resolveJobsEndpoint} from '../../src/runtime/ray-jobs.js'
import {renderRecipe} from '../../src/scaffold/render.js'

let script = ''

/** The lines of the rendered script from `start` up to (not including) the first line matching `end`. */
function block(start: RegExp, end: RegExp): string {
  const lines = script.split('\n')
  const from = lines.findIndex((l) => start.test(l))
  const to = lines.findIndex((l, i) => i > from && end.test(l))
  expect(from).toBeGreaterThanOrEqual(0)
  expect(to).toBeGreaterThan(from)
  return lines.slice(from, to).join('\n')
}

beforeAll(async () => {
  const contract = await loadContractFile(path.resolve('recipes', 'calendar.yaml'))
  const files = await renderRecipe(contract)
  script = files.find((f) => f.role === 'run')!.content
})

describe('the Jobs endpoint of the generated script', () => {
  const cases: Array<Record<string, string>> = [
    {RAY_API_SERVER_ADDRESS: 'http://api:1', RAY_DASHBOARD_ADDRESS: 'http://h:1234', RAY_ADDRESS: 'http://r:2'},
    {RAY_DASHBOARD_ADDRESS: 'http://h:1234', RAY_ADDRESS: '10.0.0.5:6379'},
    {RAY_ADDRESS: 'http://10.0.0.5:8265'},
    {RAY_ADDRESS: 'https://head.example:443'},
    {RAY_ADDRESS: '10.0.0.5:6379'},
    {RAY_ADDRESS: 'head-0:6379', RAY_DASHBOARD_PORT: '28265'},
    {RAY_ADDRESS: 'auto'},
    {RAY_ADDRESS: 'head-0'},
    {},
  ]

  it.each(cases)('%j resolves to the same address in bash and in gymrecipe', (env) => {
    const resolution = block(/^RAY_DASHBOARD_PORT=/, /^CKPT_ARGS=\(/)
    const out = execFileSync('bash', ['-c', `SCRIPT_DIR=/x\n${resolution}\nprintf '%s\\n%s' "$DASHBOARD_ADDRESS" "$DASHBOARD_SOURCE"`], {env: {PATH: process.env.PATH, ...env}, encoding: 'utf8'})
    const [address, source] = out.split('\n')
    const resolved = resolveJobsEndpoint(env)
    expect(address).toBe(resolved.address)
    expect(resolved.source.startsWith(source)).toBe(true)
  })

  it('refuses a Ray Client address in both, before anything is submitted', () => {
    const resolution = block(/^RAY_DASHBOARD_PORT=/, /^CKPT_ARGS=\(/)
    let status = 0
    let stderr = ''
    try {
      execFileSync('bash', ['-c', `SCRIPT_DIR=/x\n${resolution}`], {env: {PATH: process.env.PATH, RAY_ADDRESS: 'ray://head:10001'}, encoding: 'utf8', stdio: 'pipe'})
    } catch (error) {
      status = (error as {status: number}).status
      stderr = String((error as {stderr: string}).stderr)
    }
    expect(status).toBe(2)
    expect(stderr).toContain('Ray Client address')
    expect(() => resolveJobsEndpoint({RAY_ADDRESS: 'ray://head:10001'})).toThrow(/Ray Client address/)
  })

  it.each(['8265; id', 'A[$(id)]', '-1'])('refuses the RAY_DASHBOARD_PORT %j in both, before anything is submitted', (port) => {
    const resolution = block(/^RAY_DASHBOARD_PORT=/, /^CKPT_ARGS=\(/)
    let status = 0
    let stderr = ''
    try {
      execFileSync('bash', ['-c', `SCRIPT_DIR=/x\n${resolution}`], {env: {PATH: process.env.PATH, RAY_ADDRESS: '10.0.0.5:6379', RAY_DASHBOARD_PORT: port}, encoding: 'utf8', stdio: 'pipe'})
    } catch (error) {
      status = (error as {status: number}).status
      stderr = String((error as {stderr: string}).stderr)
    }
    expect(status).toBe(2)
    expect(stderr).toContain('RAY_DASHBOARD_PORT must be a port number')
    expect(() => resolveJobsEndpoint({RAY_ADDRESS: '10.0.0.5:6379', RAY_DASHBOARD_PORT: port})).toThrow(/RAY_DASHBOARD_PORT must be a port number/)
  })

  it('hands the endpoint to `ray job submit` and `ray job status` as RAY_API_SERVER_ADDRESS, which Ray\'s CLI takes before RAY_ADDRESS', () => {
    expect(script).toMatch(/^RAY_API_SERVER_ADDRESS="\$\{DASHBOARD_ADDRESS\}" ray job submit /m)
    expect(script).toMatch(/RAY_API_SERVER_ADDRESS="\$\{DASHBOARD_ADDRESS\}" ray job status /)
  })
})

describe('entrypoint arguments every Ray version passes on unchanged', () => {
  // What /bin/sh hands the job for each argument after each join, from real Python and dash.
  function roundTrips(words: string[]): Array<{word: string; shlex: boolean; list2cmdline: boolean}> {
    const python = `
import json, shlex, subprocess, sys
words = json.loads(sys.argv[1])
out = []
for w in words:
    res = {}
    for name, join in (("shlex", shlex.join), ("list2cmdline", subprocess.list2cmdline)):
        got = subprocess.run(["/bin/sh", "-c", "printf '%s\\\\0' " + join([w])], capture_output=True, cwd="/", env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}).stdout
        res[name] = got == (w.encode() + b"\\0")
    out.append({"word": w, **res})
print(json.dumps(out))
`
    return JSON.parse(execFileSync('python3', ['-c', python, JSON.stringify(words)], {encoding: 'utf8'}))
  }

  function portable(word: string): boolean {
    const fn = block(/^entrypoint_portable\(\) \{/, /^# A waiting `ray job submit`/)
    try {
      execFileSync('bash', ['-c', `${fn}\nentrypoint_portable "$1"`, 'bash', word], {stdio: 'pipe'})
      return true
    } catch {
      return false
    }
  }

  const words = [
    'plain', '/abs/path/run_training.sh', 'http://127.0.0.1:29100', '{"actor":[1,8],"rollout":[1,8]}', '. /x/run_agent_app.sh',
    'NEMO_GYM_URL=http://h:1', 'a b', 'name with "quotes" inside', "it's here", '--tb-experiment-name', 'run-2026-12-06-05:30:31',
    '$HOME', 'a$b', '`id`', 'back\\slash', 'x;y', "it's", 'a|b', 'a&b', '(x)', '<in', '#comment', '~user', 'line\nbreak', '',
  ]

  /** The refusals the script's comment states: sh may expand these even where this machine's shell did not. */
  function statedReason(word: string): boolean {
    if (word === '' || /[$`\\\n]/.test(word)) return true
    return !/[ \t]/.test(word) && (/['";|&<>()]/.test(word) || /^[#~]/.test(word))
  }

  it('accepts an argument only when both joins give /bin/sh back the same word', () => {
    for (const {word, shlex, list2cmdline} of roundTrips(words)) {
      expect(shlex, `shlex.join always round-trips: ${JSON.stringify(word)}`).toBe(true)
      const accepted = portable(word)
      // Never accept what the older join would change; refuse only for a stated reason.
      if (!list2cmdline) expect({word, accepted}).toEqual({word, accepted: false})
      if (list2cmdline && accepted === false) expect({word, reason: statedReason(word)}).toEqual({word, reason: true})
    }
  })

  it('the generated entrypoint itself is portable: the script checks the same words it submits', () => {
    const checked = /^entrypoint_portable (bash "\$\{RUN_TRAINING_SCRIPT\}"[\s\S]*?)\n\n/m.exec(script)?.[1]
    const submitted = /^ {2}-- (bash "\$\{RUN_TRAINING_SCRIPT\}"[\s\S]*?) \\\n {2}2>&1 \| tee/m.exec(script)?.[1]
    expect(checked).toBeDefined()
    expect(checked).toBe(submitted)
  })
})
