import {describe, expect, it} from 'vitest'

import {episodeOutcome} from '../../../src/gym/call/episode.js'
import {harnessOutcome} from '../../../src/gym/call/harness.js'
import {parseJson, stringifyJson} from '../../../src/json/index.js'
import {episodeShape, harnessShape} from '../../fixtures/call/services.js'

const lossless = (v: unknown) => parseJson(JSON.stringify(v))

describe('harness terminal-message rules', () => {
  it('takes the final assistant text when the last item is a completed assistant message', () => {
    const outcome = harnessOutcome(lossless(harnessShape('final', 'q1')))
    expect(outcome).toMatchObject({kind: 'answer', answer: 'answer to q1'})
    expect(outcome.kind === 'answer' && outcome.toolTrace.map((i: any) => i.type)).toEqual(['function_call', 'function_call_output'])
  })

  it('accepts an unset top-level status only with that terminal message and nothing pending', () => {
    expect(harnessOutcome(lossless(harnessShape('unset_status_final', 'q')))).toMatchObject({kind: 'answer'})
    expect(harnessOutcome(lossless(harnessShape('unset_status_pending', 'q')))).toMatchObject({kind: 'unfinished', reason: expect.stringContaining('pending tool call')})
  })

  it.each([
    ['pending_tool', 'pending tool call: function_call lookup'],
    ['commentary', 'commentary'],
    ['refusal', 'refusal without text'],
    ['incomplete', 'response is incomplete (max_output_tokens)'],
    ['in_progress_message', 'not "completed"'],
    ['empty', 'no output items'],
  ])('gives no answer for %s', (shape, reason) => {
    const outcome = harnessOutcome(lossless(harnessShape(shape, 'q')))
    expect(outcome.kind).toBe('unfinished')
    expect(outcome.kind === 'unfinished' && outcome.reason).toContain(reason)
  })

  it('treats a failed or in-progress response as unfinished and a shapeless one as malformed', () => {
    expect(harnessOutcome({status: 'failed', output: []})).toMatchObject({kind: 'unfinished', reason: 'response status is "failed"'})
    expect(harnessOutcome(lossless(harnessShape('no_output', 'q')))).toMatchObject({kind: 'malformed'})
    expect(harnessOutcome([1])).toMatchObject({kind: 'malformed'})
  })
})

describe('gym-episode outcomes', () => {
  it('a result is completed even with reward 0 or a masked sample', () => {
    expect(episodeOutcome(lossless(episodeShape('result')))).toMatchObject({ok: true, fields: {episode_status: 'completed', mask_sample: false}})
    const zero = episodeOutcome(lossless(episodeShape('result_zero')))
    expect(zero.ok && zero.fields.episode_status).toBe('completed')
    expect(zero.ok && stringifyJson(zero.fields.reward)).toBe('0')
    expect(zero.ok && zero.fields.mask_sample).toBe(false)
    const masked = episodeOutcome(lossless(episodeShape('masked')))
    expect(masked.ok && masked.fields).toMatchObject({episode_status: 'completed', mask_sample: true})
  })

  it('reads failure envelopes, including the older message/kind/retryable shape', () => {
    expect(episodeOutcome(lossless(episodeShape('failure')))).toEqual({
      ok: true,
      fields: {
        episode_status: 'failed',
        episode_failure_kind: 'timeout',
        episode_failure_reason: 'user simulator timed out',
        episode_failure_stage: 'usersim',
        episode_terminal: true,
        reward: null,
        mask_sample: null,
      },
    })
    expect(episodeOutcome(lossless(episodeShape('legacy_failure')))).toMatchObject({
      ok: true,
      fields: {episode_status: 'failed', episode_failure_kind: 'agent_error', episode_failure_reason: 'agent crashed', episode_terminal: false},
    })
  })

  it.each([
    ['both', 'both `result` and `failure`'],
    ['neither', 'neither'],
    ['bad_reward', 'reward'],
  ])('treats %s as malformed', (kind, reason) => {
    const outcome = episodeOutcome(lossless(episodeShape(kind)))
    expect(outcome.ok).toBe(false)
    expect(!outcome.ok && outcome.reason).toContain(reason)
  })
})
