import {isLosslessNumber} from 'lossless-json'

import {isJsonObject, numberValue} from '../../json/index.js'
import type {EpisodeFields} from './types.js'

export const EMPTY_EPISODE: EpisodeFields = {
  episode_status: null,
  episode_failure_kind: null,
  episode_failure_reason: null,
  episode_failure_stage: null,
  episode_terminal: null,
  reward: null,
  mask_sample: null,
}

export type EpisodeOutcome = {ok: true; fields: EpisodeFields} | {ok: false; reason: string}

/**
 * Read a Gym episode envelope `{episode_id, task_id, result | failure}`.
 * Exactly one of `result` and `failure` must be an object. A result is a
 * completed episode even with reward 0 or a masked sample. Older failure
 * shapes (`message` + `kind`/`retryable`, `message` + `terminal`) are read too.
 * Anything else is malformed and the caller keeps the raw response.
 */
export function episodeOutcome(response: unknown): EpisodeOutcome {
  if (!isJsonObject(response)) return {ok: false, reason: 'episode response is not a JSON object'}
  const hasResult = response.result !== undefined && response.result !== null
  const hasFailure = response.failure !== undefined && response.failure !== null
  if (hasResult === hasFailure) {
    return {ok: false, reason: hasResult ? 'episode response has both `result` and `failure`' : 'episode response has neither `result` nor `failure`'}
  }
  if (hasResult) {
    const result = response.result
    if (!isJsonObject(result)) return {ok: false, reason: '`result` is not an object'}
    let reward: unknown = null
    if (result.reward !== undefined && result.reward !== null) {
      if (numberValue(result.reward) === undefined) return {ok: false, reason: '`result.reward` is not a finite number'}
      reward = isLosslessNumber(result.reward) || typeof result.reward === 'number' ? result.reward : null
    }
    let mask = false
    if (result.mask_sample !== undefined && result.mask_sample !== null) {
      if (typeof result.mask_sample !== 'boolean') return {ok: false, reason: '`result.mask_sample` is not a boolean'}
      mask = result.mask_sample
    }
    return {ok: true, fields: {...EMPTY_EPISODE, episode_status: 'completed', reward, mask_sample: mask}}
  }
  const failure = response.failure
  if (!isJsonObject(failure)) return {ok: false, reason: '`failure` is not an object'}
  const reason = failure.failure_reason ?? failure.message
  if (typeof reason !== 'string') return {ok: false, reason: '`failure.failure_reason` (or legacy `failure.message`) is not a string'}
  const kind = failure.failure_kind ?? failure.kind ?? null
  if (kind !== null && typeof kind !== 'string') return {ok: false, reason: '`failure.failure_kind` is not a string'}
  const stage = failure.stage ?? null
  if (stage !== null && typeof stage !== 'string') return {ok: false, reason: '`failure.stage` is not a string'}
  let terminal: boolean | null = null
  if (failure.terminal !== undefined && failure.terminal !== null) {
    if (typeof failure.terminal !== 'boolean') return {ok: false, reason: '`failure.terminal` is not a boolean'}
    terminal = failure.terminal
  } else if (failure.retryable !== undefined && failure.retryable !== null) {
    if (typeof failure.retryable !== 'boolean') return {ok: false, reason: '`failure.retryable` is not a boolean'}
    terminal = !failure.retryable
  }
  return {
    ok: true,
    fields: {
      ...EMPTY_EPISODE,
      episode_status: 'failed',
      episode_failure_kind: kind as string | null,
      episode_failure_reason: reason,
      episode_failure_stage: stage as string | null,
      episode_terminal: terminal,
    },
  }
}
