/** Reading the training script (run-<model>-nemo-gym-<recipe>.sh): its flags, their values, its submit line; a check run once per training script. */

import type {Check, CheckOutcome, NamedResult} from '../types.js'
import {recipeFiles} from './recipe-files.js'
import type {LoadedFile} from '../../recipe/files.js'
import {arrays, type LogicalLine, type Resolved, resolveWord} from '../../recipe/shell.js'

// ------------------------------------------------------------------ training scripts

export const ARRAYS = ['CKPT_ARGS', 'ROLLOUT_ARGS', 'GRPO_ARGS', 'OPTIMIZER_ARGS', 'PERF_ARGS', 'SGLANG_ARGS', 'TRACKING_ARGS', 'MISC_ARGS'] as const

/** Flags whose values are where a deployment keeps things or what it calls a run, not training values. */
export const DEPLOYMENT_FLAGS = new Set(['--prompt-data', '--agent-command', '--agent-cwd', '--hf-checkpoint', '--ref-load', '--load', '--save', '--tb-project-name', '--tb-experiment-name', '--input-key', '--metadata-key'])
/** --agent-env entries that are addresses, not trial settings. */
export const DEPLOYMENT_AGENT_ENV = new Set(['NEMO_GYM_URL'])

export interface Flag {
  flag: string
  /** The word as written, e.g. "${NEMO_GYM_NUM_ROLLOUT}". */
  raw: string
  line: number
  array: string
}

/** Every flag of every argument array of a training script, with the value word that follows it. */
export function flagsOf(run: LoadedFile): Flag[] {
  return memoized(run, () => {
    const out: Flag[] = []
    for (const [array, words] of arrays(run.text)) {
      for (let i = 0; i < words.length; i++) {
        if (!words[i].value.startsWith('--')) continue
        if (words[i].value === '--agent-env') {
          while (i + 1 < words.length && !words[i + 1].value.startsWith('--')) {
            const w = words[++i]
            const eq = w.value.indexOf('=')
            if (eq > 0) out.push({flag: `--agent-env ${w.value.slice(0, eq)}`, raw: w.value.slice(eq + 1), line: w.line, array})
          }
          continue
        }
        const next = words[i + 1]
        const value = next && !next.value.startsWith('--') ? next.value : ''
        if (value) i++
        out.push({flag: words[i - (value ? 1 : 0)].value, raw: value, line: words[i].line, array})
      }
    }
    return out
  })
}

// Each script's flags are read once, however many checks ask.
const flagsByScript = new WeakMap<LoadedFile, Flag[]>()
function memoized(run: LoadedFile, make: () => Flag[]): Flag[] {
  if (!flagsByScript.has(run)) flagsByScript.set(run, make())
  return flagsByScript.get(run)!
}

export interface Value {
  value?: string
  flag?: Flag
  fromEnv: Resolved['fromEnv']
}

export function flagValue(run: LoadedFile, flag: string): Value {
  const found = flagsOf(run).find((f) => f.flag === flag)
  if (!found) return {fromEnv: []}
  return {...resolveWord(found.raw, run.lines), flag: found}
}

export function numberOf(v: Value): number | undefined {
  return v.value !== undefined && /^-?\d+(\.\d+)?$/.test(v.value) ? Number(v.value) : undefined
}

export const SUBMIT = /(?:^|\s|\/)ray\s+job\s+submit\b/

export function submitLine(run: LoadedFile): LogicalLine | undefined {
  return [...run.lines].reverse().find((l) => SUBMIT.test(l.text))
}

export type CheckRun = Parameters<Check['run']>[0]

/**
 * Run a check on every training script of the folder: one violation in any of them fails the
 * check; a script it cannot read is "not checked" with the reason, never a failure.
 */
export function perTrainingScript(id: string, title: string, check: (run: LoadedFile, ctx: CheckRun) => Promise<{problems: CheckOutcome[]; pass: string}> | {problems: CheckOutcome[]; pass: string}): Check {
  return {
    id,
    title,
    async run(ctx) {
      const {training} = await recipeFiles(ctx)
      if (training.length === 0) return {status: 'fail', message: 'no training script (run-*.sh) in the recipe folder'}
      const out: NamedResult[] = []
      for (const run of training) {
        const {problems, pass} = await check(run, ctx)
        if (problems.length === 0) out.push({id, title, status: 'pass', message: training.length > 1 ? `${run.name}: ${pass}` : pass, file: run.name})
        else out.push(...problems.map((p) => ({id, title, file: run.name, ...p})))
      }
      return out
    },
  }
}
