/**
 * Reward signal per environment of a recipe that trains several: an environment whose rewards
 * never vary teaches nothing, however well the others do, and an average over the whole run hides
 * it. Relax's rollout dumps carry no environment, so each sample is attributed by its prompt: the
 * last user message of the raw row it came from (Relax renders the row's input as the prompt).
 */
import {isJsonObject, parseJson} from '../../json/index.js'
import {readJsonlBatches} from '../../json/jsonl-files.js'
import type {DumpSample} from './outputs.js'
import {groupStats, rewardNumber} from './outputs.js'

/** The text of a message's content: a string, or the text parts of a list. */
function contentText(content: unknown): string | null {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return null
  const texts = content.flatMap((part) => (isJsonObject(part) && typeof part.text === 'string' ? [part.text] : []))
  return texts.length > 0 ? texts.join('') : null
}

/** The last user message of a list of chat messages. */
function lastUserOfMessages(messages: unknown[]): string | null {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]
    if (isJsonObject(m) && (m.role === 'user' || (m.role === undefined && m.type === undefined))) {
      const text = contentText(m.content)
      if (text !== null) return text.trim()
    }
  }
  return null
}

/** The last user turn of a raw Gym row's responses_create_params.input. */
export function rowPromptKey(row: unknown): string | null {
  if (!isJsonObject(row) || !isJsonObject(row.responses_create_params)) return null
  const input = row.responses_create_params.input
  if (typeof input === 'string') return input.trim() || null
  return Array.isArray(input) ? lastUserOfMessages(input) || null : null
}

const CHAT_USER_TURN = /<\|im_start\|>user\n([\s\S]*?)<\|im_end\|>/g

/** The last user turn of a dumped prompt: a list of messages, or a ChatML-rendered string. */
export function samplePromptKey(prompt: unknown): string | null {
  if (Array.isArray(prompt)) return lastUserOfMessages(prompt) || null
  if (typeof prompt !== 'string') return null
  let last: string | null = null
  for (const m of prompt.matchAll(CHAT_USER_TURN)) last = m[1].trim()
  return last || null
}

export interface EnvironmentSignal {
  environment: string
  samples: number
  groups: number
  groupsWithVariance: number
  meanReward: number | null
  /** Distinct rewards seen, a few. */
  rewards: number[]
}

export interface SignalByEnvironment {
  environments: EnvironmentSignal[]
  /** Samples whose prompt matches no row, or rows of several environments. */
  unattributed: number
  samplesOf: Map<string, DumpSample[]>
}

/** Index the raw rows by their last user turn: the environment each prompt belongs to (null: several). */
export async function promptIndex(file: string, routes: Set<string>): Promise<Map<string, string | null>> {
  const index = new Map<string, string | null>()
  for await (const batch of readJsonlBatches(file, 'NEMO_GYM_SOURCE_DATA')) {
    for (const {text} of batch) {
      let row: unknown
      try {
        row = parseJson(text)
      } catch {
        continue // the data rung reports it
      }
      if (!isJsonObject(row) || typeof row.environment !== 'string' || !routes.has(row.environment)) continue
      const key = rowPromptKey(row)
      if (key === null) continue
      const known = index.get(key)
      index.set(key, known === undefined || known === row.environment ? row.environment : null)
    }
  }
  return index
}

/** Each environment's samples, groups and rewards, the samples attributed through the prompt index. */
export function signalByEnvironment(samples: DumpSample[], index: Map<string, string | null>, environments: string[]): SignalByEnvironment {
  const samplesOf = new Map<string, DumpSample[]>(environments.map((e) => [e, []]))
  let unattributed = 0
  for (const sample of samples) {
    const key = samplePromptKey(sample.prompt)
    const environment = key === null ? undefined : index.get(key)
    const list = environment ? samplesOf.get(environment) : undefined
    if (list) list.push(sample)
    else unattributed++
  }
  return {
    unattributed,
    samplesOf,
    environments: environments.map((environment) => {
      const own = samplesOf.get(environment) ?? []
      const stats = groupStats(own)
      const rewards = own.map((s) => rewardNumber(s.reward)).filter((r): r is number => r !== null)
      return {
        environment,
        samples: own.length,
        groups: stats.length,
        groupsWithVariance: stats.filter((g) => g.variance).length,
        meanReward: rewards.length > 0 ? rewards.reduce((a, b) => a + b, 0) / rewards.length : null,
        rewards: [...new Set(rewards)].sort((a, b) => a - b).slice(0, 5),
      }
    }),
  }
}
