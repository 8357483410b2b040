/**
 * Verifier examples that mean something: every built-in's known-wrong output must be well-formed
 * enough to reach the grader's comparison (a malformed tool call scores 0 only because it
 * raises), and the generated verifier must hold the grader to its exact failure reward and
 * report a server that never answers in one line.
 */
import {execa} from 'execa'
import {mkdtemp, readFile, rm, writeFile} from 'node:fs/promises'
import http from 'node:http'
import type {AddressInfo} from 'node:net'
import os from 'node:os'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {loadContractFile} from '../../src/contract/load.js'
import type {RecipeContract} from '../../src/contract/types.js'
import {renderRecipe} from '../../src/scaffold/render.js'
import {turnsToOutputItems} from '../../src/scaffold/view.js'
import {snapshotRoot} from '../helpers/cli.js'

const DIRECT_BUILTINS = ['calendar', 'workplace-assistant'] as const

async function builtin(name: string): Promise<RecipeContract> {
  return loadContractFile(path.resolve('recipes', `${name}.yaml`))
}

/** The /verify body the verifier starts from: the inline payload, or the task row in the Gym checkout. */
async function baseRow(c: RecipeContract): Promise<any> {
  if (c.verifier.payload) return c.verifier.payload
  const lines = (await readFile(path.join(snapshotRoot, c.verifier.task!.file), 'utf8')).split('\n').filter((l) => l.trim())
  return JSON.parse(lines[c.verifier.task!.row])
}

function problemsOfCall(item: any, tools: any[]): string[] {
  const tool = tools.find((t) => t.name === item.name)
  if (!tool) return [`${item.name} is not a tool of the task row`]
  let args: any
  try {
    args = JSON.parse(item.arguments)
  } catch {
    return [`${item.name} arguments are not JSON`]
  }
  if (!args || typeof args !== 'object' || Array.isArray(args)) return [`${item.name} arguments are not an object`]
  const properties = tool.parameters?.properties ?? {}
  const out: string[] = []
  for (const key of Object.keys(args)) {
    if (!(key in properties)) out.push(`${item.name} has an argument "${key}" the tool does not take`)
    else if (properties[key].type === 'string' && typeof args[key] !== 'string') out.push(`${item.name}.${key} is not a string`)
  }
  for (const key of tool.parameters?.required ?? []) if (!(key in args)) out.push(`${item.name} misses the required argument ${key}`)
  return out
}

describe.each(DIRECT_BUILTINS)('the %s verifier examples', (name) => {
  it('are well-formed, so the known-wrong output is scored by comparison rather than by an error', async () => {
    const c = await builtin(name)
    const row = await baseRow(c)
    const tools: any[] = row.responses_create_params?.tools ?? []
    for (const turns of [c.verifier.correct, c.verifier.wrong]) {
      const problems = turnsToOutputItems(turns).flatMap((item: any) => (item.type === 'function_call' ? problemsOfCall(item, tools) : []))
      expect(problems).toEqual([])
    }
    const texts = (turns: typeof c.verifier.correct) => turns.filter((t) => t.text !== undefined).map((t) => t.text!)
    const correctText = texts(c.verifier.correct).at(-1)
    if (correctText?.trim().startsWith('[')) {
      // A schedule answer: the wrong one is the same JSON shape with a different value.
      const keys = (text: string) => (JSON.parse(text) as any[]).map((e) => Object.keys(e).sort())
      expect(keys(texts(c.verifier.wrong).at(-1)!)).toEqual(keys(correctText))
    }
  })

  it('differ only in what the grader compares', async () => {
    const c = await builtin(name)
    expect(JSON.stringify(c.verifier.wrong)).not.toEqual(JSON.stringify(c.verifier.correct))
    expect(c.verifier.failure_reward).toBe(0)
  })
})

describe('the generated direct verifier against a grader', () => {
  let server: http.Server
  let url: string
  let mode: 'hang' | 'half' | 'exact' | 'endless' | 'trickle' = 'exact'
  let dir: string
  let script: string

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let body = ''
      req.on('data', (chunk) => (body += chunk))
      req.on('end', () => {
        if (mode === 'hang') return // accept, never answer
        if (mode === 'endless' || mode === 'trickle') {
          res.writeHead(200, {'content-type': 'application/json'})
          const chunk = Buffer.alloc(mode === 'endless' ? 1 << 16 : 1, 0x20)
          const pump = () => {
            if (mode === 'trickle') return void (res.writableEnded || res.destroyed ? undefined : (res.write(chunk), setTimeout(pump, 100)))
            while (!res.destroyed && res.write(chunk)) {
              // fill until the socket pushes back
            }
          }
          res.on('drain', pump)
          res.on('error', () => undefined)
          pump()
          return
        }
        const wrong = body.includes('11:00')
        const reward = wrong ? (mode === 'half' ? 0.5 : 0.0) : 1.0
        res.writeHead(200, {'content-type': 'application/json'})
        res.end(JSON.stringify({reward}))
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    dir = await mkdtemp(path.join(os.tmpdir(), 'gr-verifier-'))
    const files = await renderRecipe(await builtin('calendar'))
    const verify = files.find((f) => f.role === 'verify')!
    script = path.join(dir, verify.name)
    await writeFile(script, verify.content)
  })

  afterAll(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
    await rm(dir, {recursive: true, force: true})
  })

  const runVerifier = (timeout = '2') => execa('python3', [script, '--resource-url', url, '--timeout', timeout], {reject: false, timeout: 30_000})

  it('passes when the wrong answer gets exactly the failure reward', async () => {
    mode = 'exact'
    const r = await runVerifier()
    expect(r.exitCode).toBe(0)
    expect(r.stdout).toContain('correct_reward=1.0 incorrect_reward=0.0')
  })

  it("fails when the wrong answer gets a reward other than the grader's failure reward", async () => {
    mode = 'half'
    const r = await runVerifier()
    expect(r.exitCode).toBe(1)
    expect(r.stderr.trim()).toBe('calendar verifier contract failed: correct_reward=1.0 incorrect_reward=0.5 (expected correct=1, incorrect=0)')
  })

  it('an endless answer is cut at the byte cap and said so, in one line', async () => {
    mode = 'endless'
    const r = await runVerifier('60')
    expect(r.exitCode).toBe(1)
    expect(r.stderr).not.toContain('Traceback')
    expect(r.stderr.trim().split('\n')).toEqual([`POST ${url}/verify answered more than 16777216 bytes; the answer was not read further`])
  })

  it('an answer that trickles in forever ends at the deadline, in one line', async () => {
    mode = 'trickle'
    const r = await runVerifier('2')
    expect(r.exitCode).toBe(1)
    expect(r.timedOut).toBe(false)
    expect(r.stderr.trim().split('\n')).toEqual([`POST ${url}/verify did not answer within 2 s`])
  })

  it('reports a grader that never answers as one line, not a traceback', async () => {
    mode = 'hang'
    const r = await runVerifier('1')
    expect(r.exitCode).toBe(1)
    expect(r.stderr).not.toContain('Traceback')
    expect(r.stderr.trim().split('\n')).toEqual([`POST ${url}/verify did not answer within 1 s`])
  })
})

describe('a wrong answer taken from another row', () => {
  it('is sent with its own row, as the grader scored it; the correct one with the task row', async () => {
    const bodies: any[] = []
    const server = http.createServer((req, res) => {
      let body = ''
      req.on('data', (chunk) => (body += chunk))
      req.on('end', () => {
        bodies.push(JSON.parse(body))
        res.writeHead(200, {'content-type': 'application/json'})
        res.end(JSON.stringify({reward: bodies.length === 1 ? 1.0 : 0.0}))
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const dir = await mkdtemp(path.join(os.tmpdir(), 'gr-verifier-'))
    try {
      const c = await builtin('calendar')
      c.verifier.task = {file: 'environments/calendar/data/example.jsonl', row: 0}
      c.verifier.payload = null
      c.verifier.wrong_task = {file: c.verifier.task.file, row: 3}
      const verify = (await renderRecipe(c)).find((f) => f.role === 'verify')!
      const script = path.join(dir, verify.name)
      await writeFile(script, verify.content)
      const rows = path.join(snapshotRoot, c.verifier.task!.file)
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      const r = await execa('python3', [script, '--resource-url', url, '--task-jsonl', rows], {reject: false, timeout: 30_000})
      expect(r.exitCode, r.stderr).toBe(0)
      const lines = (await readFile(rows, 'utf8')).split('\n').filter((l) => l.trim())
      const {agent_ref: _a, ...taskRow} = JSON.parse(lines[c.verifier.task!.row])
      const {agent_ref: _b, ...wrongRow} = JSON.parse(lines[3])
      expect(bodies).toHaveLength(2)
      expect({...bodies[0], response: undefined}).toEqual({...taskRow, response: undefined})
      expect({...bodies[1], response: undefined}).toEqual({...wrongRow, response: undefined})
      expect(bodies[1].response.output).toEqual(turnsToOutputItems(c.verifier.wrong))
    } finally {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
      await rm(dir, {recursive: true, force: true})
    }
  })
})

describe('an output that fed tool results back', () => {
  it('is replayed as the agent made it: one session seeded with the task row, each call run on the resources server, its live answer as the output, then /verify in that session', async () => {
    // A stateful grader: a session cookie from /seed_session, a tool that adds to the session's total,
    // and /verify rewarding a total of 5 reached in that session with the tool's own answers.
    const seen: Array<{path: string; cookie: string | undefined; body: any}> = []
    const totals = new Map<string, number>()
    const server = http.createServer((req, res) => {
      let text = ''
      req.on('data', (chunk) => (text += chunk))
      req.on('end', () => {
        const body = JSON.parse(text)
        const cookie = /session=(\w+)/.exec(req.headers.cookie ?? '')?.[1]
        seen.push({path: req.url!, cookie, body})
        const reply = (status: number, value: unknown, headers: Record<string, string> = {}) => {
          res.writeHead(status, {'content-type': 'application/json', ...headers})
          res.end(JSON.stringify(value))
        }
        if (req.url === '/seed_session') {
          const id = `s${seen.length}`
          totals.set(id, 0)
          return reply(200, {}, {'set-cookie': `session=${id}; Path=/`})
        }
        if (req.url === '/add') {
          if (!cookie || !totals.has(cookie)) return reply(400, {detail: 'no session'})
          totals.set(cookie, totals.get(cookie)! + body.n)
          return reply(200, {total: totals.get(cookie)})
        }
        if (req.url === '/verify') {
          const outputs = body.response.output.filter((i: any) => i.type === 'function_call_output').map((i: any) => i.output)
          const live = outputs.every((o: string) => /^\{"total": ?\d+\}$/.test(o))
          return reply(200, {reward: cookie && totals.get(cookie) === 5 && live ? 1.0 : 0.0})
        }
        reply(404, {detail: 'no route'})
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const dir = await mkdtemp(path.join(os.tmpdir(), 'gr-verifier-'))
    try {
      const c = await builtin('calendar')
      c.verifier.payload = {responses_create_params: {input: [{role: 'user', content: 'make 5'}]}, target: 5}
      c.verifier.task = null
      // Recorded results that the live ones replace ("stale" would fail the grader's check).
      c.verifier.correct = [{tool_call: {name: 'add', arguments: {n: 2}}}, {tool_output: 'stale'}, {tool_call: {name: 'add', arguments: {n: 3}}}, {tool_output: 'stale'}, {text: 'five'}]
      c.verifier.wrong = [{tool_call: {name: 'add', arguments: {n: 4}}}, {tool_output: 'stale'}, {text: 'four'}]
      const verify = (await renderRecipe(c)).find((f) => f.role === 'verify')!
      const script = path.join(dir, verify.name)
      await writeFile(script, verify.content)
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      const r = await execa('python3', [script, '--resource-url', url], {reject: false, timeout: 30_000})
      expect(r.exitCode, r.stderr).toBe(0)
      expect(r.stdout).toContain('correct_reward=1.0 incorrect_reward=0.0')
      expect(seen.map((s) => s.path)).toEqual(['/seed_session', '/add', '/add', '/verify', '/seed_session', '/add', '/verify'])
      // The seed carries the task row; every later call of a run rides on the session it made.
      expect(seen[0].body).toEqual(c.verifier.payload)
      expect(seen.slice(1, 4).map((s) => s.cookie)).toEqual(['s1', 's1', 's1'])
      expect(seen.slice(5, 7).map((s) => s.cookie)).toEqual(['s5', 's5'])
      expect(seen[3].body.response.output.filter((i: any) => i.type === 'function_call_output').map((i: any) => i.output)).toEqual(['{"total":2}', '{"total":5}'])
    } finally {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
      await rm(dir, {recursive: true, force: true})
    }
  })
})
