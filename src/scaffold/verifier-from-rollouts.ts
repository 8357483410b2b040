/**
 * Verifier examples from an environment's own example rollouts: many Gym resources servers ship
 * `data/*rollout*.jsonl`, each line a real response the real grader scored, for a task row of the
 * environment's example data. The best-scored one is the known-correct output; a lower-scored one
 * (of the same task when there is one) the known-wrong output. Where every rollout earned the top
 * reward, a wrong output is derived (an answer that says nothing), which the service rung then
 * proves the running grader rejects. Where a judge model grades, the wrong output is another task's
 * rewarded answer instead: whether a near miss passes depends on which judge is asked.
 */
import {promises as fsp} from 'node:fs'
import path from 'node:path'

import type {VerifierOverride} from '../contract/from-gym.js'
import {type ConfigRoot, exampleRowsFiles} from '../contract/gym-config/example-rows.js'
import {configRootPath} from '../contract/gym-config/paths.js'
import type {GymGraph} from '../contract/gym-config.js'
import type {RecipeContract, ScriptedTurn} from '../contract/types.js'
import {isInside} from '../runtime/fs.js'
import {readInputText} from '../runtime/read-input.js'
import {resourcesServerOf} from '../contract/gym-config/graph.js'
import {secondModels} from '../contract/gym-config/second-models.js'

/** How much of each rollout or task file is read: enough for the first rows, never a whole dump. */
const SAMPLE_BYTES = 16 * 1024 * 1024
const DERIVED_WRONG = 'I cannot answer this.'

export interface RolloutVerifier {
  override: VerifierOverride
  /** Where the examples came from, in words, for the notes. */
  from: string
}

interface TaskRow {
  file: string
  row: number
}

interface Rollout {
  file: string
  line: number
  reward: number
  key: string
  turns: ScriptedTurn[]
  /** The output feeds tool results back (function_call_output): replayed to /verify as recorded, never scripted through the Gateway. */
  usesToolResults: boolean
  /** A call whose name or arguments cannot be written back as a turn. */
  unreplayable: boolean
  /** The task as the rollout itself carries it (its fields beyond the prompt), when it does. */
  payload?: Record<string, unknown>
}

async function sampleLines(file: string): Promise<string[]> {
  const text = await readInputText(file, {what: path.basename(file), maxBytes: SAMPLE_BYTES, head: true}).catch(() => undefined)
  return text === undefined ? [] : text.split('\n')
}

function parse(line: string): Record<string, unknown> | undefined {
  if (!line.trim()) return undefined
  try {
    const value = JSON.parse(line.replace(/^\uFEFF/, ''))
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined
  } catch {
    return undefined
  }
}

/**
 * The task a row or rollout is about: its prompt as (role, text) pairs. A rollout records the
 * input as the model server saw it (each message with `type`, keys reordered, text in parts), so
 * only what the model read is compared.
 */
function keyOf(row: Record<string, unknown>): string | undefined {
  const params = row.responses_create_params as {input?: unknown} | undefined
  if (!params || typeof params !== 'object' || params.input === undefined) return undefined
  const input = typeof params.input === 'string' ? [{role: 'user', content: params.input}] : params.input
  if (!Array.isArray(input)) return undefined
  const textOf = (content: unknown): string =>
    typeof content === 'string' ? content : Array.isArray(content) ? content.map((part) => (part && typeof part === 'object' && typeof (part as {text?: unknown}).text === 'string' ? (part as {text: string}).text : '')).join('') : ''
  return JSON.stringify(input.map((m) => (m && typeof m === 'object' ? [String((m as {role?: unknown}).role ?? 'user'), textOf((m as {content?: unknown}).content)] : [])))
}

/**
 * The response as verifier turns: function calls, the tool results the rollout recorded after
 * them (a /verify call grades them as they were; nothing runs the tools again) and assistant text
 * (reasoning left out). `unreplayable`: a call whose name or arguments cannot be written back.
 */
function turnsOf(output: unknown): {turns: ScriptedTurn[]; usesToolResults: boolean; unreplayable: boolean} {
  const turns: ScriptedTurn[] = []
  let usesToolResults = false
  let unreplayable = false
  for (const item of Array.isArray(output) ? output : []) {
    if (!item || typeof item !== 'object') continue
    const it = item as Record<string, unknown>
    if (it.type === 'function_call_output') {
      usesToolResults = true
      // Only after a call written back: a result always answers the call before it.
      if (turns.some((t) => t.tool_call)) turns.push({tool_output: typeof it.output === 'string' ? it.output : JSON.stringify(it.output ?? null)})
      else unreplayable = true
    }
    if (it.type === 'function_call' && typeof it.name === 'string') {
      let args: unknown
      try {
        args = typeof it.arguments === 'string' ? JSON.parse(it.arguments) : it.arguments
      } catch {
        args = undefined
      }
      if (args && typeof args === 'object' && !Array.isArray(args) && /^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(it.name)) turns.push({tool_call: {name: it.name, arguments: args as Record<string, unknown>}})
      else unreplayable = true
    }
    if (it.type === 'message' && it.role === 'assistant' && Array.isArray(it.content)) {
      const text = it.content.map((c) => (c && typeof c === 'object' && typeof (c as {text?: unknown}).text === 'string' ? (c as {text: string}).text : '')).join('')
      if (text) turns.push({text})
    }
  }
  return {turns, usesToolResults, unreplayable}
}

/**
 * Example rollout files in the given data folders: under each config root first (a file there
 * shadows the checkout's of the same name, as Gym searches), then under the Gym root; each with the
 * name reports show (`${NAME}/…` under a root).
 */
async function rolloutFiles(gymRoot: string, dirs: string[], roots: ConfigRoot[]): Promise<Array<{file: string; shown: string}>> {
  const files: Array<{file: string; shown: string}> = []
  const seen = new Set<string>()
  for (const dir of [...new Set(dirs)]) {
    for (const base of [...roots.map((r) => ({dir: path.resolve(r.dir), name: r.name as string | undefined})), {dir: gymRoot, name: undefined}]) {
      const abs = path.resolve(base.dir, dir)
      if (!isInside(base.dir, abs)) continue
      for (const name of (await fsp.readdir(abs).catch(() => [] as string[])).sort()) {
        const relative = path.join(path.relative(base.dir, abs), name)
        if (!/rollout.*\.jsonl$/.test(name) || seen.has(relative)) continue
        seen.add(relative)
        files.push({file: path.join(abs, name), shown: base.name === undefined ? relative : configRootPath(base.name, relative)})
      }
    }
  }
  return files
}

/**
 * Verifier (and, for a text answer, trial) examples for the agent's environment from its example
 * rollouts, or why there are none.
 */
/**
 * Task rows of the environment's own data, by prompt: the row a rollout answered; and the rows of
 * the first example file by position, since Gym's rollout collection records `_ng_task_index`.
 */
async function taskRows(root: string, graph: GymGraph, agentId: string, roots: ConfigRoot[]): Promise<{tasks: Map<string, TaskRow>; firstRows: TaskRow[]}> {
  const tasks = new Map<string, TaskRow>()
  const firstRows: TaskRow[] = []
  for (const [n, example] of (await exampleRowsFiles(root, graph, agentId, roots)).entries()) {
    let row = 0
    for (const line of await sampleLines(example.file)) {
      if (!line.trim()) continue
      const parsed = parse(line)
      const key = parsed && keyOf(parsed)
      if (key && !tasks.has(key)) tasks.set(key, {file: example.path, row})
      if (n === 0) firstRows.push({file: example.path, row})
      row++
    }
  }
  return {tasks, firstRows}
}

/** The rewarded rollouts with a model answer; a rollout tied to its row by index is added to `tasks`. */
async function readRollouts(files: Array<{file: string; shown: string}>, tasks: Map<string, TaskRow>, firstRows: TaskRow[]): Promise<Rollout[]> {
  const rollouts: Rollout[] = []
  for (const file of files) {
    for (const [index, line] of (await sampleLines(file.file)).entries()) {
      const parsed = parse(line)
      const key = parsed && keyOf(parsed)
      if (!parsed || !key || typeof parsed.reward !== 'number' || !Number.isFinite(parsed.reward)) continue
      // A prompt the environment rewrote at seed time (so it matches no row) still names its row by index.
      const taskIndex = parsed._ng_task_index
      if (!tasks.has(key) && typeof taskIndex === 'number' && Number.isInteger(taskIndex) && firstRows[taskIndex]) tasks.set(key, firstRows[taskIndex])
      const {turns, usesToolResults, unreplayable} = turnsOf((parsed.response as {output?: unknown} | undefined)?.output)
      const {response: _response, reward: _reward, ...task} = parsed
      const payload = Object.keys(task).some((k) => k !== 'responses_create_params') ? task : undefined
      if (turns.length > 0) rollouts.push({file: file.shown, line: index + 1, reward: parsed.reward, key, turns, usesToolResults, unreplayable, ...(payload ? {payload} : {})})
    }
  }
  return rollouts
}

/** A rewarded text answer to another task, unlike the correct one: wrong here whoever judges it. */
function offTopicAnswer(replayable: Rollout[], correct: Rollout): Rollout | undefined {
  const text = (r: Rollout) => (r.turns.every((t) => t.text !== undefined) ? r.turns.map((t) => t.text!.trim()).join('\n') : undefined)
  const own = text(correct)
  if (own === undefined) return undefined
  const others = replayable.filter((r) => r.key !== correct.key && text(r) !== undefined && text(r) !== own)
  return others.sort((a, b) => b.reward - a.reward)[0]
}

export async function verifierFromRollouts(gymRoot: string, graph: GymGraph, agentId: string, base: RecipeContract, roots: ConfigRoot[] = []): Promise<RolloutVerifier | {none: string}> {
  const root = path.resolve(gymRoot)
  const agent = graph.agents.find((a) => a.id === agentId)
  const resource = resourcesServerOf(graph, agent)
  const datasets = (agent?.datasets ?? []).filter((d) => d.jsonlFpath && !path.isAbsolute(d.jsonlFpath))
  const dirs = [...datasets.map((d) => path.dirname(d.jsonlFpath!)), ...(resource ? [`resources_servers/${resource.implementation}/data`] : [])]
  const files = await rolloutFiles(root, dirs, roots)
  if (files.length === 0) return {none: `no example rollouts (data/*rollout*.jsonl) next to its data${resource ? ` or in resources_servers/${resource.implementation}/data` : ''}`}

  const {tasks, firstRows} = await taskRows(root, graph, agentId, roots)
  const rollouts = await readRollouts(files, tasks, firstRows)
  // A rollout replays from its task row, or from the task fields it carries itself.
  const replayable = rollouts.filter((r) => (tasks.has(r.key) || r.payload !== undefined) && !r.unreplayable)
  if (replayable.length === 0) {
    const why = rollouts.length === 0 ? 'none with a reward and a model answer' : rollouts.every((r) => r.unreplayable) ? 'no call in them that can be written back (a function name or arguments that are not a JSON object)' : 'none answers a task row of its example data or carries its task fields'
    return {none: `its example rollouts (${files.map((f) => f.shown).join(', ')}) have ${why}`}
  }
  const top = Math.max(...replayable.map((r) => r.reward))
  // A best answer that earned nothing is no known-correct output: the grader never said yes to it.
  if (top <= 0) {
    return {none: `none of its replayable example rollouts (${files.map((f) => f.shown).join(', ')}) earned a reward above 0 (the best earned ${top}${rollouts.some((r) => r.reward > 0) ? '; those that did hold calls that cannot be written back' : ''})`}
  }
  const correct = replayable.find((r) => r.reward === top && tasks.has(r.key)) ?? replayable.find((r) => r.reward === top)!
  // The most clearly wrong answer first: a graded-down near miss proves less about the grader.
  const lower = rollouts.filter((r) => r.reward < top && !r.unreplayable).sort((a, b) => a.reward - b.reward)
  const sameTask = lower.find((r) => r.key === correct.key)
  // Another task's answer is graded on its own row, as the grader scored it: one fit for one row
  // may be right for another (any text, where a message is all a row expects).
  const ownRow = sameTask ? undefined : lower.find((r) => tasks.has(r.key))
  // A judge's verdict on a near miss is the judge's own: the deployment's judge may be more lenient
  // than the one that graded the rollouts. Another task's rewarded answer, graded on this task, is
  // wrong for any judge.
  const judged = agent !== undefined && secondModels(graph, agent).some((m) => m.role === 'judge' && m.enabled && m.owner === resource?.id)
  const offTopic = judged ? offTopicAnswer(replayable, correct) : undefined
  const wrong = offTopic ?? sameTask ?? ownRow ?? lower[0]
  const wrongTask = !offTopic && ownRow ? tasks.get(ownRow.key)! : undefined
  const task = tasks.get(correct.key)
  const where = (r: Rollout) => `${r.file}:${r.line} (reward ${r.reward})`
  const textOnly = task !== undefined && correct.turns.every((t) => t.text !== undefined)
  const override: VerifierOverride = {
    verifier: {
      kind: 'direct',
      python: base.verifier.python,
      task: task ?? null,
      payload: task ? null : correct.payload!,
      correct: correct.turns,
      wrong: wrong ? wrong.turns : [{text: DERIVED_WRONG}],
      ...(wrongTask && task ? {wrong_task: wrongTask} : {}),
      success_reward: top,
      failure_reward: offTopic ? null : sameTask ? sameTask.reward : wrongTask && task ? ownRow!.reward : null,
    },
    // A replay through the Gateway needs the tool results too: only a text answer is scripted here.
    trial: textOnly && task
      ? {
          task,
          turns: correct.turns,
          expect: {status: 'completed', reward: top, tool_calls: 0, tool_outputs: 0, tool_result_history: [0]},
          deadline_s: base.trial?.deadline_s ?? 600,
          lease_s: base.trial?.lease_s ?? 60,
          cleanup_probe: false,
        }
      : null,
  }
  const wrongFrom = offTopic ? `${where(offTopic)}, another task's rewarded answer graded on this task (a judge model grades it, so no near miss)` : sameTask ? `${where(sameTask)}, same task` : wrongTask && task ? `${where(wrong)} for ${wrongTask.file} row ${wrongTask.row}, graded on its own row` : wrong ? `${where(wrong)}, another task's answer` : `derived ("${DERIVED_WRONG}"): every rollout earned ${top}`
  const of = task ? `for ${task.file} row ${task.row}` : 'with the task fields it carries'
  return {override, from: `the example rollouts: correct ${where(correct)} ${of}; wrong ${wrongFrom}`}
}
