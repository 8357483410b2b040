import fs from 'node:fs/promises'
import path from 'node:path'
import {describe, expect, it} from 'vitest'

import {describeService, serviceUrls} from '../../src/ladder/service/describe.js'
import {describeOpenPorts, openToNetwork, parseVerifierOutput, serverErrorTraceback, tracebacksIn} from '../../src/ladder/service/checks.js'
import {resolveRecipe} from '../../src/recipe/target.js'
import {demuxLogBuffer} from '../../src/runtime/container.js'
import {generatedRecipe} from '../helpers/recipes.js'

describe('tracebacksIn', () => {
  it('finds each traceback with its exception line, reading through Gym\'s instance prefix', () => {
    const log = [
      'INFO:     Started server process',
      'ERROR:    Exception in ASGI application',
      'Traceback (most recent call last):',
      '  File "/gateway/app.py", line 10, in forward',
      '    await upstream()',
      'asyncio.exceptions.CancelledError',
      '(calendar) Traceback (most recent call last):',
      '(calendar)   File "/opt/nemo-gym/nemo_gym/server_utils.py", line 80, in handler',
      '(calendar)     body = json.dumps(raw)',
      '(calendar) TypeError: Object of type bytes is not JSON serializable',
    ].join('\n')
    const found = tracebacksIn(log)
    expect(found.map((t) => t.exception)).toEqual(['asyncio.exceptions.CancelledError', 'TypeError: Object of type bytes is not JSON serializable'])
    expect(found[1].lines[0]).toBe('(calendar) Traceback (most recent call last):')
    expect(found[1].lines.at(-1)).toBe('(calendar) TypeError: Object of type bytes is not JSON serializable')
    // A callback cancelled at abort is the abort working, not a Gym 500.
    expect(serverErrorTraceback(log)?.exception).toBe('TypeError: Object of type bytes is not JSON serializable')
    expect(serverErrorTraceback(log.split('\n').slice(0, 6).join('\n'))).toBeUndefined()
  })

  it('finds nothing in a log without tracebacks (a 422 validation line is not one)', () => {
    expect(tracebacksIn('(calendar) Validation error on POST /verify: Field required\n(calendar) Request body: {}')).toEqual([])
  })
})

describe('parseVerifierOutput', () => {
  it('reads the direct verifier line, workplace wording, golden lines and missing values', () => {
    expect(parseVerifierOutput('calendar verifier contract passed: correct_reward=1.0 incorrect_reward=0.0\n')).toMatchObject({correct: 1, incorrect: 0})
    expect(parseVerifierOutput('Workplace Assistant verifier contract passed: equivalent_reward=1.0 incorrect_reward=0.0')).toMatchObject({correct: 1, incorrect: 0})
    expect(parseVerifierOutput('x verifier contract failed: correct_reward=1.0 incorrect_reward=1.0 (expected ...)')).toMatchObject({correct: 1, incorrect: 1})
    expect(parseVerifierOutput('r2e golden verification passed: task_row=0 reward=1.0 active_trials=0').golden).toBe(1)
    expect(parseVerifierOutput('Traceback (most recent call last):\nRuntimeError: boom')).toMatchObject({correct: undefined, incorrect: undefined})
  })
})

describe('demuxLogBuffer', () => {
  it('splits Docker frames by stream and passes raw (TTY) output through', () => {
    const frame = (kind: number, text: string) => {
      const body = Buffer.from(text)
      const head = Buffer.alloc(8)
      head[0] = kind
      head.writeUInt32BE(body.length, 4)
      return Buffer.concat([head, body])
    }
    const buf = Buffer.concat([frame(1, 'out 1\n'), frame(2, 'err 1\n'), frame(1, 'out 2\n')])
    expect(demuxLogBuffer(buf)).toEqual([{stream: 'stdout', text: 'out 1\n'}, {stream: 'stderr', text: 'err 1\n'}, {stream: 'stdout', text: 'out 2\n'}])
    expect(demuxLogBuffer(Buffer.from('plain text\n'), true)).toEqual([{stream: 'stdout', text: 'plain text\n'}])
    expect(demuxLogBuffer(Buffer.from('not a frame at all\n'))).toEqual([{stream: 'stdout', text: 'not a frame at all\n'}])
  })
})

describe('describeService', () => {
  it('takes names, ports, commit and verifier from recipe.yaml, with env.sh overrides', async () => {
    const {relaxRoot} = await generatedRecipe('calendar', 'desc-cal')
    const target = await resolveRecipe(relaxRoot, 'desc-cal')
    const d = await describeService(target, {GYM_HOST: '127.0.0.1', NEMO_GYM_IMAGE: 'img:x', NEMO_GYM_GATEWAY_PORT: '25000'})
    expect(d).toMatchObject({container: 'nemo-gym-desc-cal', imageTag: 'img:x', gatewayPort: 25000, resourcePort: 25002, commit: 'a85670eb167ba9b48cc53a36a070eed815e6c40d'})
    expect(d.ports.map((p) => p.label)).toEqual(expect.arrayContaining(['gateway', 'agent', 'resource', 'head', 'private Ray GCS']))
    const urls = serviceUrls(d, {GYM_HOST: '127.0.0.2', NEMO_GYM_GATEWAY_PORT: '25010'})!
    // The running container's own values win, and the resource port moves with the gateway.
    expect(urls).toMatchObject({gateway: 'http://127.0.0.2:25010', resource: 'http://127.0.0.2:25012'})
    expect(d.verifier!.args(urls)).toEqual(['--resource-url', 'http://127.0.0.2:25012'])
    expect(d.verifier!.script).toBe('/opt/relax-integration/examples/nemo_gym_agentic/recipes/desc-cal/verify_desc_cal.py')
  })

  it('reads a hand-written recipe from its files, and leaves unknowns undefined', async () => {
    const {relaxRoot, dir} = await generatedRecipe('calendar', 'desc-hand')
    await fs.rm(path.join(dir, 'recipe.yaml'))
    const target = await resolveRecipe(relaxRoot, 'desc-hand')
    const d = await describeService(target, {GYM_HOST: '127.0.0.1', NEMO_GYM_CONTAINER: 'ignored'})
    expect(d.container).toBe('nemo-gym-desc-hand')
    expect(d.commit).toBe('a85670eb167ba9b48cc53a36a070eed815e6c40d')
    expect(d.verifier?.python).toBe('/opt/nemo-gym/resources_servers/calendar/.venv/bin/python')
    expect(d.verifier?.args({gymHost: 'h', gateway: 'g'})).toEqual([])
    expect(d.resourceUrlDefault).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    expect(d.ports).toEqual([])

    // The reference launchers' style: NEMO_GYM_CONTAINER with a default, overridable from env.sh.
    await fs.writeFile(path.join(dir, 'start_desc_hand_gym.sh'), '#!/usr/bin/env bash\nNEMO_GYM_CONTAINER="${NEMO_GYM_CONTAINER:-nemo-gym-multienv}"\ndocker create --name "${NEMO_GYM_CONTAINER}" img\n')
    await fs.writeFile(path.join(dir, 'verify_desc_hand.py'), '"""no python named here"""\n')
    await fs.writeFile(path.join(dir, 'README.md'), 'nothing\n')
    const hand = await describeService(target, {})
    expect(hand.container).toBe('nemo-gym-multienv')
    expect(hand.commit).toBeUndefined()
    expect(hand.verifier).toBeUndefined()
    expect((await describeService(target, {NEMO_GYM_CONTAINER: 'mine'})).container).toBe('mine')
  })
})

describe('the private Ray ports open to the network', () => {
  const labels = new Map([[24118, 'private Ray GCS'], [24119, 'private Ray dashboard']])
  it('names the GCS and dashboard first, then workers in port order, whatever order the socket table lists them in', () => {
    const table = [
      {address: '0.0.0.0', port: 24174},
      {address: '127.0.0.1', port: 24150},
      {address: '::', port: 24121},
      {address: '0.0.0.0', port: 24119},
      {address: '0.0.0.0', port: 24118},
    ]
    const open = openToNetwork(table, labels)
    expect(open.map((l) => l.port)).toEqual([24118, 24119, 24121, 24174])
    expect(openToNetwork([...table].reverse(), labels)).toEqual(open)
    expect(describeOpenPorts(open, labels)).toBe('0.0.0.0 (every interface):24118 (private Ray GCS), 0.0.0.0 (every interface):24119 (private Ray dashboard), :: (every interface):24121 (Ray worker), 0.0.0.0 (every interface):24174 (Ray worker)')
  })
  it('shows six and counts the rest', () => {
    const many = Array.from({length: 9}, (_, i) => ({address: '10.0.0.5', port: 24120 + i}))
    expect(describeOpenPorts(openToNetwork(many, labels), labels)).toMatch(/^10\.0\.0\.5:24120 \(Ray worker\), .*10\.0\.0\.5:24125 \(Ray worker\), and 3 more$/)
  })
})
