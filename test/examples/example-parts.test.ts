import {execa} from 'execa'
import {spawn} from 'node:child_process'
import {once} from 'node:events'
import {mkdtemp, readFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {describe, expect, it} from 'vitest'

import {fillAnswer, nextStep} from '../../examples/lib/scripted-model.js'
import {processStartTime, RowStore} from '../../examples/pi-service/row-store.js'
import {repoRoot} from '../helpers/cli.js'
import {pidAlive} from '../helpers/processes.js'


describe('the scripted model', () => {
  const script = {rules: [{user: 'Q?', steps: [{tool: 'run_sql', arguments: {sql: 'SELECT 1'}}, {answer: '{{first_value}} (turn {{turn}}, before: {{earlier_user}})'}]}]}

  it('takes the next step after each tool call and fills the answer from the last tool result', () => {
    const first = nextStep(script, [{role: 'user', content: 'Q?'}])
    expect('step' in first && first.step.tool).toBe('run_sql')
    const conversation = [
      {role: 'user', content: [{type: 'text', text: 'earlier'}]},
      {role: 'assistant', content: 'ok'},
      {role: 'user', content: 'Q?'},
      {role: 'assistant', content: null, tool_calls: [{id: 'c1'}]},
      {role: 'tool', content: JSON.stringify({rows: [[42]]})},
    ]
    const second = nextStep(script, conversation)
    expect('step' in second && second.step.answer).toBeDefined()
    expect(fillAnswer((second as any).step.answer, conversation)).toBe('42 (turn 2, before: earlier)')
  })

  it('refuses a conversation it has no script for, instead of inventing an answer', () => {
    expect(nextStep(script, [{role: 'user', content: 'something else'}])).toEqual({error: 'no scripted answer for "something else"'})
    expect(nextStep(script, [{role: 'system', content: 'x'}])).toEqual({error: 'the conversation has no user message'})
    expect(fillAnswer('{{first_value}}|', [{role: 'tool', content: 'not json'}])).toBe('|')
  })
})

describe('the Pi service state: fencing what a killed service left behind', () => {
  it('ends a recorded process group whose leader has the recorded start time, and marks its turn interrupted', async () => {
    const store = new RowStore(await mkdtemp(path.join(os.tmpdir(), 'gr-fence-')))
    store.openRow('row-a')
    const child = spawn('sleep', ['60'], {detached: true, stdio: 'ignore'})
    const exited = once(child, 'exit')
    store.recordRunning({pid: child.pid!, start_time: processStartTime(child.pid!)!, row_id: 'row-a', turn: 1, started_at: new Date().toISOString()})
    store.turnStarted('row-a', 1, child.pid!)
    const fenced = await store.fenceStale()
    await exited
    expect(fenced.ended.map((r) => r.pid)).toEqual([child.pid])
    expect(fenced.interrupted).toEqual([{row_id: 'row-a', turn: 1}])
    expect(store.turns('row-a')).toMatchObject([{turn: 1, status: 'interrupted'}])
    // the record is gone: a second start fences nothing
    expect(await store.fenceStale()).toEqual({ended: [], interrupted: []})
  })

  it('leaves alone a live process whose start time differs (its pid was reused)', async () => {
    const store = new RowStore(await mkdtemp(path.join(os.tmpdir(), 'gr-fence-')))
    store.openRow('row-b')
    const child = spawn('sleep', ['60'], {detached: true, stdio: 'ignore'})
    try {
      store.recordRunning({pid: child.pid!, start_time: '1', row_id: 'row-b', turn: 1, started_at: new Date().toISOString()})
      store.turnStarted('row-b', 1, child.pid!)
      const fenced = await store.fenceStale()
      expect(fenced.ended).toEqual([])
      expect(pidAlive(child.pid!)).toBe(true)
      // the turn is still reported interrupted: its own process is gone
      expect(store.turns('row-b')[0]).toMatchObject({status: 'interrupted', reason: 'the service stopped during the turn'})
    } finally {
      process.kill(child.pid!, 'SIGKILL')
      await once(child, 'exit')
    }
  })

  it('reads a turn log cut short by a crash: the torn line is skipped, and the next record is not swallowed by it', async () => {
    const store = new RowStore(await mkdtemp(path.join(os.tmpdir(), 'gr-fence-')))
    store.openRow('row-c')
    store.turnStarted('row-c', 1, 123)
    store.turnEnded('row-c', 1, 'completed')
    store.turnStarted('row-c', 2, 456)
    const file = path.join(store.stateDir, 'rows', 'row-c', 'turns.jsonl')
    await execa('sh', ['-c', `printf '{"turn":2,"ev' >> ${file}`])
    expect((await readFile(file, 'utf8')).split('\n')).toHaveLength(4)
    expect(store.turns('row-c').map((t) => t.status)).toEqual(['completed', 'running'])
    // the next record starts on a line of its own, so it is read
    await store.fenceStale()
    expect(store.turns('row-c').map((t) => t.status)).toEqual(['completed', 'interrupted'])
  })
})

describe('the example commands refuse bad options', () => {
  it('examples/sql/run.ts wants --model-endpoint and --model together', async () => {
    const run = await execa(process.execPath, ['--import', 'tsx', 'examples/sql/run.ts', '--model-endpoint', 'http://127.0.0.1:9/v1'], {cwd: repoRoot, reject: false})
    expect(run.exitCode).toBe(2)
    expect(run.stderr).toContain('--model-endpoint and --model go together')
  })

  it('the services print their usage and exit 2 without their required options', async () => {
    for (const [script, usage] of [
      ['examples/sql/toy-sql-service.ts', 'usage: toy-sql-service.ts --database-dir DIR'],
      ['examples/sql/sql-agent.ts', 'usage: sql-agent.ts --model-endpoint'],
      ['examples/lib/scripted-model.ts', 'usage: scripted-model.ts --script'],
      ['examples/pi-service/service.ts', 'usage: service.ts --state-dir DIR'],
    ]) {
      const run = await execa(process.execPath, ['--import', 'tsx', script], {cwd: repoRoot, reject: false})
      expect(run.exitCode, script).toBe(2)
      expect(run.stderr, script).toContain(usage)
    }
  })
})
