/**
 * Rules of the training rung on hand-made outputs: step-line parsing, log scanning,
 * groups, checkpoints, and the reward-zero triage (each verdict told apart).
 */
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {type DumpSample, checkpointState, groupStats, parseStepLines, readRolloutDumps, scanLog} from '../../src/ladder/training/outputs.js'
import {classifyFailure, triage} from '../../src/ladder/training/triage.js'

const sample = (over: Partial<DumpSample>): DumpSample => ({
  file: 'x', line: 1, rollout_id: 0, group_index: 0, sample_index: 0, reward: 0, status: 'completed', agent_turns: 1, response: '[]', ...over,
})

describe('step lines', () => {
  it('reads train/grad_norm from Relax step lines in their usual shapes', () => {
    const log = [
      "(MegatronTrainRayActor pid=42) [2026-01-01 10:00:00,000] INFO model.py:612 - step 0: {'train/pg_loss': -0.01, 'train/grad_norm': 0.734, 'train/step': 0}",
      "step 1: {'train/grad_norm': nan, 'train/step': 1}",
      "step 2: {'train/grad_norm': np.float64(0.25), 'train/step': 2}",
      "step 3: {'train/grad_norm': tensor(1.5, device='cuda:0'), 'train/step': 3}",
      'step 4: {"train/grad_norm": inf, "train/step": 4}',
      "step 5: {'train/pg_loss': 0.1, 'train/step': 5}",
      'not a step 6 line',
    ].join('\n')
    const steps = parseStepLines(log)
    expect(steps.map((s) => [s.step, s.gradNorm])).toEqual([[0, 0.734], [1, Number.NaN], [2, 0.25], [3, 1.5], [4, Infinity], [5, null]])
    expect(steps[0].line).toBe(1)
  })
})

describe('log scanning', () => {
  it('finds OOMs and tracebacks and quotes the exception line', () => {
    const text = [
      'INFO all good',
      'Traceback (most recent call last):',
      '  File "x.py", line 3, in f',
      '    g()',
      'RuntimeError: boom',
      'INFO torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB',
    ].join('\n')
    expect(scanLog(text, 'driver.log')).toEqual([
      {source: 'driver.log', line: 2, kind: 'traceback', text: 'RuntimeError: boom'},
      {source: 'driver.log', line: 6, kind: 'oom', text: 'INFO torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB'},
    ])
    expect(scanLog('step 0: {}\nSaved rollout result (8 samples) to /x', 'l')).toEqual([])
  })
})

describe('groups and checkpoints', () => {
  let tmp: string
  beforeAll(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'gr-training-unit-'))
  })
  afterAll(async () => {
    await fs.rm(tmp, {recursive: true, force: true})
  })

  it('groups by (rollout_id, group_index) and detects reward variance', () => {
    const stats = groupStats([
      sample({group_index: 0, reward: 1}), sample({group_index: 0, reward: 0}),
      sample({group_index: 1, reward: 0}), sample({group_index: 1, reward: 0}),
      sample({rollout_id: 1, group_index: 0, reward: {scalar: 0.5}}),
    ])
    expect(stats.map((g) => [g.key, g.size, g.variance])).toEqual([['0/0', 2, true], ['0/1', 2, false], ['1/0', 1, false]])
  })

  it('reports malformed dump records and reads the checkpoint tracker', async () => {
    const save = path.join(tmp, 'save')
    await fs.mkdir(path.join(save, 'rollout_result', 'train'), {recursive: true})
    await fs.writeFile(path.join(save, 'rollout_result', 'train', '0.jsonl'), '{"rollout_id": 0}\nnot json\n')
    const dumps = await readRolloutDumps(save)
    expect(dumps.problems.map((p) => [p.line, p.message.slice(0, 19)])).toEqual([[1, 'missing sample_inde'], [2, 'not JSON (Unexpecte']])
    await fs.writeFile(path.join(save, 'latest_checkpointed_iteration.txt'), '3\n')
    expect(await checkpointState(save)).toMatchObject({iteration: '3', iterDirExists: false, iterDirs: []})
    await fs.mkdir(path.join(save, 'iter_0000003'))
    expect((await checkpointState(save)).iterDirExists).toBe(false) // empty directory
    await fs.writeFile(path.join(save, 'iter_0000003', 'common.pt'), 'x')
    expect(await checkpointState(save)).toMatchObject({iteration: '3', iterDirExists: true, iterDirs: ['iter_0000003']})
  })
})

describe('reward triage', () => {
  it('[r2e-gym#13] callback/lifecycle failures: cleanup_unverified, lease_expired, 410', () => {
    expect(classifyFailure("NeMo Gym thin client failed: trial relax-1 ended failed: {'code': 'cleanup_unverified', 'type': 'CleanupError', 'cause': {'code': 'aborted'}}")).toBe('lifecycle')
    expect(classifyFailure("trial relax-1 ended aborted: {'code': 'lease_expired'}")).toBe('lifecycle')
    expect(classifyFailure("ended failed: {'code': 'agent_error', 'message': 'agent /run returned HTTP 500: model call failed with HTTP 410: callback capability is unavailable'}")).toBe('lifecycle')
    const t = triage([], [{error: "trial x ended failed: {'code': 'cleanup_unverified', 'type': 'CleanupError'}"}], '')
    expect(t.verdict).toBe('lifecycle')
    expect(t.text).toBe('triage: callback/lifecycle failed (1 lifecycle; error codes cleanup_unverified×1)')
  })

  it('reads the real Gateway: a bare error code, a callback cancelled at abort, an SSE error event', () => {
    // The real Gateway's trial error carries the code alone; the cause is only in its log.
    expect(classifyFailure("NeMo Gym thin client failed: trial relax-1 ended failed: {'code': 'agent_error'}")).toBe('verifier')
    expect(classifyFailure('trial relax-2 ended failed: {"code": "cleanup_probe_failed"}')).toBe('lifecycle')
    // A model callback in flight at abort is cancelled: a 500 for the agent, CancelledError in the log.
    expect(classifyFailure('model call failed with HTTP 500: Internal Server Error (asyncio.exceptions.CancelledError)')).toBe('lifecycle')
    // Claude Code style agents see capability loss as an SSE error event inside a 200.
    expect(classifyFailure('event: error data: {"type": "error", "error": {"type": "api_error", "message": "callback capability is unknown or no longer active"}}')).toBe('lifecycle')
    const t = triage([], [{error: "trial relax-3 ended failed: {'code': 'agent_error'}"}], '')
    expect(t.text).toBe('triage: the verifier never ran or could not parse the response (1 verifier; error codes agent_error×1)')
  })

  it('[workplace-assistant#0] the verifier never ran: reward null, truncation, deadline', () => {
    expect(classifyFailure("trial relax-1 ended truncated without a reward (error={'code': 'deadline_exceeded'}); dropping the sample")).toBe('verifier')
    const t = triage([sample({reward: null}), sample({status: 'truncated', reward: 0})], [], '')
    expect(t.verdict).toBe('verifier')
    expect(t.counts).toMatchObject({verifier: 2, model: 0})
  })

  it('the verifier could not parse the response: <think> left in, empty answers', () => {
    const t = triage([sample({response: '<think>hmm</think>[]'}), sample({response: ''})], [], '')
    expect(t.verdict).toBe('verifier')
    expect(t.examples[0]).toContain('<think>')
  })

  it('the environment failed: seed_session / verify errors, 5xx', () => {
    expect(classifyFailure("ended failed: {'code': 'agent_error', 'message': 'agent /run returned HTTP 500: seed_session failed with HTTP 500'}")).toBe('environment')
    const log = "AGENTIC ROLLOUT ... error=NeMo Gym thin client failed: trial relax-2 ended failed: {'code': 'agent_error', 'message': 'agent /run returned HTTP 500: verify failed with HTTP 500'}"
    const t = triage([], [], log)
    expect(t.verdict).toBe('environment')
    expect(t.errorCodes).toEqual({agent_error: 1})
  })

  it('the model answered wrongly: every trial completed and was scored 0', () => {
    const t = triage([sample({}), sample({sample_index: 1})], [], '')
    expect(t).toMatchObject({verdict: 'model', text: 'triage: the model answered wrongly (2 model)'})
  })

  it('the most severe cause wins when causes mix', () => {
    const t = triage([sample({})], [{error: "ended aborted: {'code': 'lease_expired'}"}, {error: 'seed_session failed with HTTP 500'}], '')
    expect(t.verdict).toBe('lifecycle')
    expect(t.text).toBe('triage: callback/lifecycle failed (1 lifecycle, 1 environment, 1 model; error codes lease_expired×1)')
  })
})
