/**
 * The line that explains a failed trial, picked from container log lines as the fixture and the
 * real service print them: the Gateway's failure block for the trial, the agent's patched
 * traceback, and the abort lines (CancelledError, Gym's "No response returned.") that never explain.
 */
import {describe, expect, it} from 'vitest'

import {triage} from '../../src/ladder/training/triage.js'
import {explainFailure} from '../../src/ladder/trial/explain.js'

const REQUEST = 'gymrecipe-trial-calendar-abc123'
const ROLLOUT = '9f2c1e0d4b6a8c7e5f3a1b2c4d6e8f00-0'

describe('explainFailure', () => {
  it("quotes the agent's rejected model reply from the Gateway's block for the trial", () => {
    const lines = [
      '(calendar_simple_agent) INFO:     127.0.0.1:50112 - "POST /run HTTP/1.1" 500',
      `(relax_gateway_model) NeMo Gym trial failed request_id=${REQUEST} rollout_id=${ROLLOUT} environment=calendar config=calendar-v1`,
      '(relax_gateway_model) Traceback (most recent call last):',
      '(relax_gateway_model)   File "gateway.py", line 740, in _finish',
      '(relax_gateway_model) RuntimeError: agent /run returned HTTP 500: {"detail":"Received an invalid response from model server: 1 validation error for NeMoGymResponse\\nusage..."}',
      '(relax_gateway_model) NeMo Gym trial finished request_id=someone-else status=completed reward=1.0',
    ]
    expect(explainFailure(lines, {requestId: REQUEST, rolloutIds: [ROLLOUT]})).toEqual({
      line: lines[4].trim(),
      tie: `a log line of trial ${REQUEST}`,
    })
  })

  it('never quotes the abort lines of a cancelled callback', () => {
    const lines = [
      `(relax_gateway_model) INFO:     127.0.0.1:1 - "POST /ng-rollout/${ROLLOUT}/v1/responses HTTP/1.1" 500`,
      '(relax_gateway_model) Traceback (most recent call last):',
      '(relax_gateway_model) asyncio.exceptions.CancelledError',
      '(relax_gateway_model) Traceback (most recent call last):',
      '(relax_gateway_model) RuntimeError: No response returned.',
      '(relax_gateway_model) RuntimeError: No response returned.',
      `(calendar) KeyError: 'exp_cal_state' while grading ${ROLLOUT}`,
    ]
    expect(explainFailure(lines, {requestId: REQUEST, rolloutIds: [ROLLOUT]})?.line).toBe(`(calendar) KeyError: 'exp_cal_state' while grading ${ROLLOUT}`)
  })

  it("falls back to the window's own lines when none names the trial, and says so", () => {
    const lines = ['(workplace_assistant) Traceback (most recent call last):', '(workplace_assistant) ValueError: session not initialized']
    expect(explainFailure(lines, {requestId: REQUEST, rolloutIds: []})).toEqual({
      line: '(workplace_assistant) ValueError: session not initialized',
      tie: 'a log line written while the trial ran (none names it)',
    })
  })

  it('finds nothing in a log that explains nothing', () => {
    expect(explainFailure(['(calendar) INFO: started', '(calendar) INFO: ready'], {requestId: REQUEST, rolloutIds: []})).toBeUndefined()
  })
})

describe("triage reads the Gateway's first cause", () => {
  it('cleanup_unverified caused by agent_error is the agent failing, not a lifecycle failure', () => {
    const t = triage([], [{error: "trial x ended failed: {'code': 'cleanup_unverified', 'type': 'CleanupError', 'cause': 'agent_error'}"}], '')
    expect(t.verdict).toBe('verifier')
    expect(t.errorCodes).toEqual({cleanup_unverified: 1})
  })

  it("Gym's 'No response returned.' is an abort (lifecycle)", () => {
    const t = triage([], [{error: 'RuntimeError: No response returned.'}], '')
    expect(t.verdict).toBe('lifecycle')
  })
})
