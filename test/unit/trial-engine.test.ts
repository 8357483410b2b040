/**
 * Pure parts of the trial rung: the task conversion (same rules as convert_dataset.py, checked
 * against the script on the real snapshot rows), row picking, allowlist hints, secret scrubbing.
 */
import {execa} from 'execa'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {describe, expect, it} from 'vitest'

import {allowlistCovers} from '../../src/ladder/trial/context.js'
import {scrub, trialPayload} from '../../src/ladder/trial/engine.js'
import {pickRow, toRelaxTask} from '../../src/ladder/trial/task.js'
import {RELAX_FIXTURE_DIR, SNAPSHOT_DIR} from '../helpers/relax-fixture.js'

const CONVERTER = path.join(RELAX_FIXTURE_DIR, 'examples/nemo_gym_agentic/scripts/convert_dataset.py')

describe('trial task', () => {
  for (const file of ['environments/calendar/data/example.jsonl', 'resources_servers/workplace_assistant/data/example.jsonl', 'resources_servers/math_with_judge/data/example.jsonl']) {
    it(`converts ${file} exactly like convert_dataset.py`, async () => {
      const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'gr-trial-task-'))
      try {
        const out = path.join(tmp, 'out.jsonl')
        await execa('python3', [CONVERTER, '--input', path.join(SNAPSHOT_DIR, file), '--output', out])
        const expected = (await fs.readFile(out, 'utf8')).trim().split('\n').map((l) => JSON.parse(l))
        const text = await fs.readFile(path.join(SNAPSHOT_DIR, file), 'utf8')
        expected.forEach((row, i) => {
          const task = toRelaxTask(pickRow(text, i, file))
          expect({input: task.messages, metadata: task.metadata}).toEqual(row)
        })
      } finally {
        await fs.rm(tmp, {recursive: true, force: true})
      }
    })
  }

  it('names the file and the row count for a row that does not exist', () => {
    expect(() => pickRow('{"a":1}\n\n{"a":2}\n', 2, 'x.jsonl')).toThrow('x.jsonl has 2 row(s); trial.task.row 2 does not exist')
    expect(pickRow('{"a":1}\n\n{"a":2}\n', 1, 'x.jsonl')).toEqual({a: 2})
  })

  it('handles the GSM8K and R2E forms', () => {
    expect(toRelaxTask({question: 'What is 3 + 5?', expected_answer: 8})).toEqual({
      messages: [{role: 'user', content: 'Solve the following math problem. Make sure to put the answer (and only answer) inside \\boxed{}.\n\nWhat is 3 + 5?'}],
      metadata: {question: 'What is 3 + 5?', expected_answer: '8'},
    })
    expect(toRelaxTask({problem_statement: 'Fix it', responses_create_params: {input: [], metadata: {instance_dict: '{}'}}})).toEqual({
      messages: [{role: 'user', content: 'Fix it'}],
      metadata: {problem_statement: 'Fix it', responses_create_params: {metadata: {instance_dict: '{}'}, input: []}},
    })
  })
})

describe('allowlist hints and secrets', () => {
  it('tells whether env.sh\'s allowlist covers the callback host', () => {
    expect(allowlistCovers({NEMO_GYM_CALLBACK_ALLOWED_NETWORKS: '10.0.0.0/8'}, '127.0.0.1')).toEqual({configured: 'NEMO_GYM_CALLBACK_ALLOWED_NETWORKS=10.0.0.0/8', covered: false})
    expect(allowlistCovers({NEMO_GYM_CALLBACK_ALLOWED_NETWORKS: '10.0.0.0/8,127.0.0.0/8'}, '127.0.0.1').covered).toBe(true)
    expect(allowlistCovers({NEMO_GYM_CALLBACK_ALLOWED_HOSTS: 'relax-head'}, 'relax-head').covered).toBe(true)
    expect(allowlistCovers({}, '127.0.0.1')).toEqual({configured: 'no callback allowlist in env.sh', covered: null})
  })

  it('scrubs the api key from anything the Gateway echoes', () => {
    const payload = trialPayload({recipeId: 'r', environment: 'e', config: 'c', task: {messages: [], metadata: {}}, turns: [], interruptPolicy: 'protected', deadlineS: 1, leaseS: 1, captureArtifacts: false}, 'id', 'http://h:1/v1', 'secret-token-123')
    const echoed = {status: 422, body: {detail: [{loc: ['model_endpoint'], input: payload.model_endpoint}]}}
    const clean = scrub(echoed, 'secret-token-123')
    expect(JSON.stringify(clean)).not.toContain('secret-token-123')
    expect(JSON.stringify(clean)).toContain('<redacted>')
    expect(scrub(undefined, 'x')).toBeUndefined()
  })
})
