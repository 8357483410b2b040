import {chmod, copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {ENV_SH_RULE, envShProblems} from '../../env-sh.js'
import {run} from '../../runtime/process.js'
import {type Check, type CheckOutcome, type NamedResult, passOrProblems} from '../types.js'
import {recipeFiles} from './recipe-files.js'
import {launcherRole, type LoadedFile} from '../../recipe/files.js'
import {arrays, assignments, type LogicalLine, type Resolved, resolveWord} from '../../recipe/shell.js'


// ------------------------------------------------------------------ env.sh

/** Names that are training hyperparameters, budgets or parser choices, never deployment values. */
const HYPERPARAMETER = /(?:^|_)(?:LR|LEARNING_RATE|BATCH_SIZE|GLOBAL_BATCH\w*|MICRO_BATCH\w*|ROLLOUT_BATCH\w*|N_SAMPLES\w*|SAMPLES_PER_PROMPT|NUM_ROLLOUTS?|NUM_EPOCHS?|EPOCHS?|CONTEXT_LEN\w*|CONTEXT_LENGTH|MAX_CONTEXT\w*|MAX_PROMPT\w*|MAX_RESPONSE\w*|MAX_TOKENS\w*|PROMPT_LEN\w*|RESPONSE_LEN\w*|TEMPERATURE|TOP_P|TOP_K|\w*PARSER|KL_\w+|ENTROPY\w*|EPS_CLIP\w*|WEIGHT_DECAY|ADAM_\w+|TENSOR_PARALLEL\w*|TP_SIZE|PP_SIZE|CP_SIZE|SAVE_INTERVAL|DATA_LIMIT|MAX_STEPS|WARMUP\w*|ADVANTAGE\w*)(?:$|_)/

/** env.sh is not committed in Relax (.gitignore): without it the checks that read it cannot run. */
function envMissing(ctx: Parameters<Check['run']>[0]): CheckOutcome {
  return {
    status: 'skip',
    message: 'not checked: there is no env.sh (Relax keeps it out of git; each deployment writes its own)',
    hint: ctx.target.contract ? `Recreate it with \`gymrecipe new ${ctx.target.id}\`, then set GYM_HOST, MODEL_DIR and NEMO_GYM_SOURCE_DATA.` : "Create env.sh next to the scripts with the deployment values the recipe's README lists (GYM_HOST, MODEL_DIR, NEMO_GYM_SOURCE_DATA, ...).",
  }
}

export const envDeploymentOnly: Check = {
  id: 'static.env-deployment-only',
  title: 'env.sh holds deployment values only',
  async run(ctx) {
    const env = (await recipeFiles(ctx)).byRole.env
    if (!env) return envMissing(ctx)
    const problems: CheckOutcome[] = []
    for (const p of envShProblems(env.text)) {
      problems.push({status: 'fail', message: `line ${p.line} can run a command: ${p.problem}: ${JSON.stringify(p.text.slice(0, 80))}`, file: env.name, line: p.line, hint: ENV_SH_RULE})
    }
    for (const a of assignments(env.lines)) {
      if (HYPERPARAMETER.test(a.name)) {
        problems.push({status: 'fail', message: `${a.name} is a training hyperparameter, budget or parser setting`, file: env.name, line: a.line, hint: `Hard-code it in the training script; env.sh is for machines, ports and paths only.`})
      }
    }
    const source = assignments(env.lines).find((a) => a.name === 'NEMO_GYM_SOURCE_DATA')
    if (source && /_relax\.jsonl/.test(source.value)) {
      problems.push({status: 'fail', message: 'NEMO_GYM_SOURCE_DATA points at a converted *_relax.jsonl preview', file: env.name, line: source.line, hint: 'Point it at the raw Gym JSONL; the training job converts it.'})
    }
    return passOrProblems('static.env-deployment-only', 'env.sh holds deployment values only', problems, `${assignments(env.lines).length} deployment variables, no commands`)
  },
}

// ------------------------------------------------------------------ training scripts

const ARRAYS = ['CKPT_ARGS', 'ROLLOUT_ARGS', 'GRPO_ARGS', 'OPTIMIZER_ARGS', 'PERF_ARGS', 'SGLANG_ARGS', 'TRACKING_ARGS', 'MISC_ARGS'] as const

/** Flags whose values are where a deployment keeps things or what it calls a run, not training values. */
const DEPLOYMENT_FLAGS = new Set(['--prompt-data', '--agent-command', '--agent-cwd', '--hf-checkpoint', '--ref-load', '--load', '--save', '--tb-project-name', '--tb-experiment-name', '--input-key', '--metadata-key'])
/** --agent-env entries that are addresses, not trial settings. */
const DEPLOYMENT_AGENT_ENV = new Set(['NEMO_GYM_URL'])

interface Flag {
  flag: string
  /** The word as written, e.g. "${NEMO_GYM_NUM_ROLLOUT}". */
  raw: string
  line: number
  array: string
}

/** Every flag of every argument array of a training script, with the value word that follows it. */
function flagsOf(run: LoadedFile): Flag[] {
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

interface Value {
  value?: string
  flag?: Flag
  fromEnv: Resolved['fromEnv']
}

function flagValue(run: LoadedFile, flag: string): Value {
  const found = flagsOf(run).find((f) => f.flag === flag)
  if (!found) return {fromEnv: []}
  return {...resolveWord(found.raw, run.lines), flag: found}
}

function numberOf(v: Value): number | undefined {
  return v.value !== undefined && /^-?\d+(\.\d+)?$/.test(v.value) ? Number(v.value) : undefined
}

const SUBMIT = /(?:^|\s|\/)ray\s+job\s+submit\b/

function submitLine(run: LoadedFile): LogicalLine | undefined {
  return [...run.lines].reverse().find((l) => SUBMIT.test(l.text))
}

export type CheckRun = Parameters<Check['run']>[0]

/**
 * Run a check on every training script of the folder: one violation in any of them fails the
 * check; a script it cannot read is "not checked" with the reason, never a failure.
 */
function perTrainingScript(id: string, title: string, check: (run: LoadedFile, ctx: CheckRun) => Promise<{problems: CheckOutcome[]; pass: string}> | {problems: CheckOutcome[]; pass: string}): Check {
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

export const trainingArrays = perTrainingScript('static.run-arrays', 'the training script defines every argument array and passes it', (run) => {
  const submit = submitLine(run)
  const defined = arrays(run.text)
  const problems: CheckOutcome[] = []
  for (const name of ARRAYS) {
    if (!defined.has(name)) problems.push({status: 'fail', message: `${name} is not defined`, hint: 'Hard-code every argument array in the training script.'})
    else if (submit && !submit.text.includes(`\${${name}[@]}`)) problems.push({status: 'fail', message: `${name} is defined but not passed to ray job submit`, line: submit.line})
  }
  return {problems, pass: `${ARRAYS.length} arrays defined and passed`}
})

/**
 * A shell function of the script whose body reads the submitted job's state back (`ray job
 * status`): the one command allowed after the submission, so the script's exit says how the job
 * ended rather than how the CLI's log stream did.
 */
function judgesJobState(run: LoadedFile, line: LogicalLine): boolean {
  const call = /^([A-Za-z_][A-Za-z0-9_]*)(?:\s|$)/.exec(line.text)?.[1]
  if (!call) return false
  const start = run.lines.findIndex((l) => new RegExp(`^(?:function\\s+)?${call}\\s*\\(\\)\\s*\\{?`).test(l.text))
  if (start < 0) return false
  const end = run.lines.findIndex((l, i) => i > start && /^\}\s*$/.test(l.text))
  return run.lines.slice(start, end < 0 ? undefined : end).some((l) => /(?:^|\s|\()ray\s+job\s+status\b/.test(l.text))
}

/** The words after `-- ` of the submission, and the words an `entrypoint_portable` call checks, when there is one. */
function portabilityMismatch(run: LoadedFile, submit: LogicalLine): CheckOutcome | undefined {
  const check = run.lines.find((l) => /^entrypoint_portable\s/.test(l.text))
  if (!check) return undefined
  const words = (text: string | undefined) => text?.trim().split(/\s+/).join(' ')
  const checked = words(check.text.replace(/^entrypoint_portable\s+/, ''))
  const submitted = words(/ -- (.*?)(?:\s+2>&1\s*\|.*)?$/.exec(submit.text)?.[1])
  if (submitted === checked) return undefined
  return {status: 'fail', message: `entrypoint_portable (line ${check.line}) checks other words than ray job submit passes (line ${submit.line}): the submission is not the one checked`, line: check.line, hint: 'Give entrypoint_portable exactly the words after `--` of the submission.'}
}

export const submitsLast = perTrainingScript('static.run-submit', 'the training script ends with ray job submit', (run) => {
  const last = run.lines.at(-1)
  if (last && SUBMIT.test(last.text)) {
    const mismatch = portabilityMismatch(run, last)
    return mismatch ? {problems: [mismatch], pass: ''} : {problems: [], pass: `ray job submit at line ${last.line}`}
  }
  const before = run.lines.at(-2)
  if (last && before && SUBMIT.test(before.text) && judgesJobState(run, last)) {
    const mismatch = portabilityMismatch(run, before)
    if (mismatch) return {problems: [mismatch], pass: ''}
    return {problems: [], pass: `ray job submit at line ${before.line}, then the job's own state is read back (line ${last.line})`}
  }
  return {problems: [{status: 'fail', message: `the last command is not ray job submit: ${last?.text.slice(0, 80) ?? '(empty)'}`, line: last?.line, hint: "The direct script must itself submit the job as its final command (only a function that reads the job's state back with `ray job status` may follow)."}], pass: ''}
})

export const hyperparametersFixed = perTrainingScript('static.run-fixed-hyperparameters', 'no training value is read from an environment variable', (run) => {
  const problems: CheckOutcome[] = []
  const seen = new Set<string>()
  const report = (what: string, raw: string, line: number) => {
    for (const v of resolveWord(raw, run.lines).fromEnv) {
      if (seen.has(v.name)) continue
      seen.add(v.name)
      problems.push({status: 'fail', message: `${what} reads ${v.name} from the environment${v.line ? ` (assigned at line ${v.line})` : ''}: the run depends on the shell it was launched from`, line: v.line ?? line, hint: `Hard-code the value in the argument array; only machines, ports and paths may come from the environment (env.sh).`})
    }
  }
  for (const f of flagsOf(run)) {
    const name = f.flag.startsWith('--agent-env ') ? f.flag.slice('--agent-env '.length) : f.flag
    if (DEPLOYMENT_FLAGS.has(f.flag) || DEPLOYMENT_AGENT_ENV.has(name) || !f.raw.includes('$')) continue
    report(f.flag, f.raw, f.line)
  }
  // The data limit (fourth positional of run_training.sh) and the --resource layout are training values too.
  const submit = submitLine(run)
  const positional = submit?.text.match(/\s--\s+bash\s+(?:"[^"]*"|\S+)\s+("[^"]*"|\S+)\s+("[^"]*"|\S+)\s+("[^"]*"|\S+)\s+("[^"]*"|\S+)/)
  if (submit && positional && positional[4].includes('$')) report('the data limit passed to run_training.sh', positional[4], submit.line)
  const resource = submit?.text.match(/--resource\s+("[^"]*"|'[^']*'|\S+)/)
  if (submit && resource && resource[1].includes('$')) report('--resource', resource[1], submit.line)
  return {problems, pass: 'every argument is fixed in the script'}
})

export const noWaitOnlyWhenAsked = perTrainingScript('static.run-no-wait', 'ray job submit waits unless RAY_NO_WAIT=1', (run) => {
  const problems: CheckOutcome[] = []
  const openIfs: LogicalLine[] = []
  for (const l of run.lines) {
    if (/^(?:if|elif)\s/.test(l.text)) {
      if (l.text.startsWith('elif')) openIfs.pop()
      openIfs.push(l)
    }
    if (/^fi\b|;\s*fi$/.test(l.text)) openIfs.pop()
    if (!l.text.includes('--no-wait')) continue
    if (/\$\{RAY_NO_WAIT:?\+/.test(l.text)) {
      problems.push({status: 'fail', message: '${RAY_NO_WAIT:+--no-wait} adds --no-wait for any non-empty value, RAY_NO_WAIT=0 included', line: l.line, hint: 'Add --no-wait only when [[ "${RAY_NO_WAIT:-0}" == "1" ]].'})
      continue
    }
    const guard = /RAY_NO_WAIT[^\]]*?(?:==?|-eq)\s*["']?1["']?/
    const inline = /\[\[?[^\]]*RAY_NO_WAIT[^\]]*\]\]?\s*&&/.test(l.text) && guard.test(l.text)
    const guarded = openIfs.some((i) => guard.test(i.text))
    if (!inline && !guarded) problems.push({status: 'fail', message: '--no-wait is not conditional on RAY_NO_WAIT=1', line: l.line, hint: 'Waiting must be the default so the job log streams and failures surface.'})
  }
  return {problems, pass: 'waits by default'}
})

export const noDelegation = perTrainingScript('static.run-no-delegation', 'the training script does not delegate to another recipe', (run, ctx) => {
  const problems: CheckOutcome[] = []
  for (const l of run.lines) {
    const other = l.text.match(/recipes\/([A-Za-z0-9_.-]+)\//)
    if (other && other[1] !== ctx.target.id) problems.push({status: 'fail', message: `uses another recipe's files (recipes/${other[1]}/)`, line: l.line, hint: 'Copy what you need; each recipe is one self-contained script.'})
    const script = l.text.match(/(?:^|\s)(?:exec\s+)?(?:bash|sh|source|\.)\s+["']?[^\s"']*?(run-[A-Za-z0-9_.-]*nemo-gym[A-Za-z0-9_.-]*\.sh)/)
    if (script && script[1] !== run.name) problems.push({status: 'fail', message: `delegates to ${script[1]}`, line: l.line, hint: 'Hard-code the parameters here instead of wrapping another launcher.'})
  }
  return {problems, pass: 'self-contained'}
})

export const rawSourceData = perTrainingScript('static.run-raw-source', 'training reads the raw Gym JSONL, never *_relax.jsonl', (run) => {
  const problems: CheckOutcome[] = []
  for (const a of assignments(run.lines)) {
    if (a.name === 'NEMO_GYM_SOURCE_DATA' && /_relax\.jsonl/.test(a.value)) problems.push({status: 'fail', message: 'NEMO_GYM_SOURCE_DATA is set to a converted *_relax.jsonl', line: a.line})
  }
  const submit = submitLine(run)
  if (submit) {
    if (/_relax\.jsonl/.test(submit.text)) problems.push({status: 'fail', message: 'ray job submit passes a *_relax.jsonl file', line: submit.line})
    if (!submit.text.includes('${NEMO_GYM_SOURCE_DATA}') && !submit.text.includes('$NEMO_GYM_SOURCE_DATA')) {
      problems.push({status: 'fail', message: 'ray job submit does not pass NEMO_GYM_SOURCE_DATA as the source data', line: submit.line, hint: 'The job converts the raw file itself (run_training.sh <gateway> <source> <prompt> <limit>).'})
    }
  }
  // The job writes its converted prompt set to --prompt-data: <source>_relax.jsonl is the preview prepare published.
  const prompt = flagsOf(run).find((f) => f.flag === '--prompt-data')
  // --prompt-data "${PROMPT_SET}": the pattern is in PROMPT_SET's own assignment, which no default resolves.
  const promptVariable = prompt?.raw.match(/^\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?$/)?.[1]
  const promptText = promptVariable ? (assignments(run.lines).find((a) => a.name === promptVariable)?.value ?? '') : (prompt?.raw ?? '')
  if (prompt && /\$\{NEMO_GYM_SOURCE_DATA%\.jsonl\}_relax\.jsonl/.test(promptText)) {
    problems.push({status: 'fail', message: 'the converted prompt set is written to <NEMO_GYM_SOURCE_DATA>_relax.jsonl, over the preview prepare published next to the raw file', line: prompt.line, hint: 'Write the prompt set under the experiment directory (e.g. ${EXP_DIR}/data/...).'})
  }
  return {problems, pass: 'raw source data'}
})

/** `source "${MODEL_CONFIG_DIR}/qwen3-4B.sh"` or `. "${RELAX_ROOT}/scripts/models/qwen3-4B.sh"`: the model config a training script loads. */
const MODEL_SOURCE = /(?:^|[\s;&|])(?:source|\.)\s+["']?(\S*?(?:MODEL_CONFIG_DIR\b[^/]*|scripts\/models\}?))\/([A-Za-z0-9_.+-]+\.sh)["']?/

export const modelConfigExists = perTrainingScript('static.run-model-config', 'the model config the training script sources exists', async (run, ctx) => {
  const sourced = run.lines.flatMap((l) => {
    const m = l.text.match(MODEL_SOURCE)
    return m ? [{name: m[2], line: l.line}] : []
  })
  if (sourced.length === 0) {
    const passesModelArgs = /\$\{MODEL_ARGS\[@\]\}/.test(submitLine(run)?.text ?? '')
    if (passesModelArgs && !arrays(run.text).has('MODEL_ARGS')) {
      return {problems: [{status: 'fail', message: 'ray job submit passes ${MODEL_ARGS[@]}, but no model config from scripts/models is sourced and MODEL_ARGS is not defined', line: submitLine(run)?.line, hint: 'Source the model config, e.g. source "${MODEL_CONFIG_DIR}/qwen3-4B.sh".'}], pass: ''}
    }
    return {problems: [], pass: 'sources no model config (the script defines the model itself)'}
  }
  // Relax's entrypoints set MODEL_CONFIG_DIR to <relax-root>/scripts/models unless the deployment points it elsewhere.
  const dir = ctx.options.env.MODEL_CONFIG_DIR || path.join(ctx.target.relaxRoot, 'scripts', 'models')
  const available = await readdir(dir).catch(() => undefined)
  if (!available) {
    return {problems: [{status: 'skip', message: `not checked: ${dir} is not a folder, so ${sourced[0].name} cannot be looked up`, line: sourced[0].line, hint: ctx.options.env.MODEL_CONFIG_DIR ? 'Point MODEL_CONFIG_DIR at the folder of Relax model configs.' : 'Pass --relax-root your Relax checkout (the folder holding scripts/models).'}], pass: ''}
  }
  const problems: CheckOutcome[] = sourced.filter((s) => !available.includes(s.name)).map((s) => {
    const models = available.filter((f) => f.endsWith('.sh')).sort()
    return {
      status: 'fail',
      message: `sources ${s.name}, which is not in ${dir}: ray job submit would fail before training starts`,
      line: s.line,
      hint: models.length > 0 ? `Use one of ${models.slice(0, 8).join(', ')}${models.length > 8 ? ', …' : ''}; or regenerate with \`gymrecipe new ${ctx.target.id} --model-config <file>\`.` : `Add the model config to ${dir}.`,
    }
  })
  return {problems, pass: `sources ${[...new Set(sourced.map((s) => s.name))].join(', ')}, present in ${dir}`}
})

/**
 * The fourth argument of run_training.sh is the number of rows training converts and reads: it
 * must be the row count of the raw file, counted as Relax counts rows (non-empty lines), never a
 * smoke default or `wc -l`, which misses a last line without a newline.
 */
export const dataLimitIsRowCount = perTrainingScript('static.run-data-limit', 'training reads every row of the raw file', (run) => {
  const invocation = /\bbash\s+(?:"?\$\{?RUN_TRAINING_SCRIPT\}?"?|\S*run_training\.sh"?)\s/
  const call = run.lines.find((l) => invocation.test(l.text))
  const args = call?.text.split(invocation)[1]?.match(/"[^"]*"|'[^']*'|[^\s"']+/g)
  const limit = args?.[3]
  if (!call || !limit || limit.startsWith('-')) return {problems: [], pass: 'run_training.sh is given no row limit (it reads the whole file)'}
  const at = {line: call.line}
  const resolved = resolveWord(limit, run.lines)
  const name = limit.match(/^"?\$\{?([A-Za-z_]\w*)\}?"?$/)?.[1]
  const assigned = name ? assignments(run.lines).find((a) => a.name === name) : undefined
  if (resolved.value !== undefined && /^\d+$/.test(resolved.value)) {
    const from = resolved.fromEnv.length > 0 ? ` unless ${resolved.fromEnv.map((v) => v.name).join(' or ')} is set` : ''
    return {problems: [{status: 'fail', message: `training reads at most ${resolved.value} rows${from}: a smoke default left in the training script`, ...at, hint: "Count the raw file's rows: DATA_LIMIT=$(awk 'NF { count++ } END { print count + 0 }' \"${NEMO_GYM_SOURCE_DATA}\")."}], pass: ''}
  }
  if (assigned && /\bwc\s+-l\b/.test(assigned.value)) {
    return {problems: [{status: 'fail', message: `${name} is counted with wc -l, which misses a last row without a final newline`, line: assigned.line, hint: "Count non-empty lines as Relax does: awk 'NF { count++ } END { print count + 0 }'."}], pass: ''}
  }
  if (assigned && /\bawk\b/.test(assigned.value) && /\bNF\b/.test(assigned.value) && /NEMO_GYM_SOURCE_DATA/.test(assigned.value)) return {problems: [], pass: `${name} is the row count of NEMO_GYM_SOURCE_DATA (line ${assigned.line})`}
  return {problems: [{status: 'skip', message: `not checked: the row limit ${limit} cannot be worked out from the script`, ...at}], pass: ''}
})

export const noWorkingDir = perTrainingScript('static.run-no-working-dir', 'no Ray working_dir upload', (run) => {
  const hit = run.lines.find((l) => /--working-dir\b|working_dir|\bWORKING_DIR=/.test(l.text))
  if (hit) return {problems: [{status: 'fail', message: `uploads a Ray working_dir: ${hit.text.slice(0, 100)}`, line: hit.line, hint: 'Every node sees the same absolute checkout; put it on PYTHONPATH instead of uploading it.'}], pass: ''}
  return {problems: [], pass: 'uses the shared checkout in place'}
})

/** A value that cannot be worked out is "not checked", with the word as written. */
function unreadable(flag: string, v: Value): CheckOutcome {
  return {status: 'skip', message: v.flag ? `not checked: ${flag} is ${v.flag.raw}, which cannot be worked out from the script` : `not checked: ${flag} is not set`, line: v.flag?.line}
}

export const samplesPerPrompt = perTrainingScript('static.run-samples', 'at least 4 samples per prompt', (run) => {
  const v = flagValue(run, '--n-samples-per-prompt')
  const n = numberOf(v)
  if (n === undefined) return {problems: [unreadable('--n-samples-per-prompt', v)], pass: ''}
  if (n < 4) return {problems: [{status: 'fail', message: `--n-samples-per-prompt ${n}: GRPO needs group variance`, line: v.flag!.line, hint: 'Use at least 4; one sample per prompt gives zero advantage.'}], pass: ''}
  return {problems: [], pass: `--n-samples-per-prompt ${n}`}
})

export const contextBudgets = perTrainingScript('static.run-context', 'context budgets leave room to generate', (run) => {
  const read = (flag: string) => ({flag, v: flagValue(run, flag)})
  const prompt = read('--rollout-max-prompt-len')
  const response = read('--rollout-max-response-len')
  const context = read('--rollout-max-context-len')
  const perGpu = read('--max-tokens-per-gpu')
  const cpFlag = read('--context-parallel-size')
  // Relax's default context parallel size is 1.
  const cp = cpFlag.v.flag ? numberOf(cpFlag.v) : 1
  const unknown = [prompt, response, context, perGpu].filter((x) => numberOf(x.v) === undefined)
  if (unknown.length > 0 || cp === undefined) return {problems: [...unknown, ...(cp === undefined ? [cpFlag] : [])].map((x) => unreadable(x.flag, x.v)), pass: ''}
  const [p, r, c, t] = [prompt, response, context, perGpu].map((x) => numberOf(x.v)!)
  const problems: CheckOutcome[] = []
  if (p >= c) problems.push({status: 'fail', message: `prompt ${p} is not below context ${c}`, line: prompt.v.flag!.line})
  if (r > c) problems.push({status: 'fail', message: `response ${r} exceeds context ${c}`, line: response.v.flag!.line})
  // relax/utils/arguments.py: max_tokens_per_gpu x context_parallel_size >= rollout_max_context_len.
  if (t * cp < c) problems.push({status: 'fail', message: `--max-tokens-per-gpu ${t} x --context-parallel-size ${cp} = ${t * cp} is below context ${c}: Relax refuses to start`, line: perGpu.v.flag!.line})
  return {problems, pass: `prompt ${p} < context ${c}, response ${r} <= context, ${t} tokens per GPU x CP ${cp} >= context`}
})

/** The Gateway registration in the launchers: max deadline and interrupt policy, when written literally. */
async function gatewaySpec(ctx: CheckRun): Promise<{maxDeadline?: number; policy?: string; where?: string}> {
  if (ctx.target.contract) return {maxDeadline: ctx.target.contract.gateway.max_deadline_s, policy: ctx.target.contract.gateway.interrupt_policy, where: 'recipe.yaml'}
  for (const start of (await recipeFiles(ctx)).launchers) {
    const policy = start.text.match(/"interrupt_policy"\s*:\s*"([a-z]+)"/)
    const deadline = registeredMaxDeadline(start)
    if (deadline || policy) return {maxDeadline: deadline?.value, policy: policy?.[1], where: deadline ? `${start.name}, ${deadline.from}` : start.name}
  }
  return {}
}

/**
 * The max_deadline_s a launcher registers: a literal, or read by its Python heredoc from an
 * environment variable whose default the launcher sets (REASONING_GYM_CC_MAX_DEADLINE_S:-900).
 */
function registeredMaxDeadline(start: LoadedFile): {value: number; from: string} | undefined {
  const literal = start.text.match(/"max_deadline_s"\s*:\s*(\d+(?:\.\d+)?)\s*[,}\n]/)
  if (literal) return {value: Number(literal[1]), from: 'written literally'}
  const ENV_READ = String.raw`(?:int|float)\(\s*os\.environ(?:\.get\(\s*"(\w+)"(?:\s*,\s*"([\d.]+)")?\s*\)|\[\s*"(\w+)"\s*\])\s*\)`
  let read = start.text.match(new RegExp(`"max_deadline_s"\\s*:\\s*${ENV_READ}`))
  const named = start.text.match(/"max_deadline_s"\s*:\s*([A-Za-z_]\w*)\s*[,}\n]/)
  if (!read && named) read = start.text.match(new RegExp(`\\b${named[1]}\\s*=\\s*${ENV_READ}`))
  if (!read) return undefined
  const variable = read[1] ?? read[3]
  const resolved = numberOf({...resolveWord(`\${${variable}}`, start.lines)})
  const value = resolved ?? (read[2] === undefined ? undefined : Number(read[2]))
  return value === undefined ? undefined : {value, from: `${variable} (default ${value})`}
}

export const trialTiming = perTrainingScript('static.run-trial-timing', 'agent timeout, deadline and interrupt policy match the Gateway', async (run, ctx) => {
  const problems: CheckOutcome[] = []
  const deadlineV = flagValue(run, '--agent-env NEMO_GYM_DEADLINE_S')
  const policyV = flagValue(run, '--agent-env NEMO_GYM_INTERRUPT_POLICY')
  const timeoutV = flagValue(run, '--agent-timeout')
  const deadline = numberOf(deadlineV)
  const timeout = numberOf(timeoutV)
  const gateway = await gatewaySpec(ctx)
  if (!deadlineV.flag) problems.push({status: 'fail', message: '--agent-env sets no NEMO_GYM_DEADLINE_S (the thin client would default to 1800 s)'})
  else if (deadline === undefined) problems.push(unreadable('NEMO_GYM_DEADLINE_S', deadlineV))
  if (!timeoutV.flag) problems.push({status: 'fail', message: '--agent-timeout is not set (Relax defaults to 1800 s)'})
  else if (timeout === undefined) problems.push(unreadable('--agent-timeout', timeoutV))
  if (deadline !== undefined && timeout !== undefined && timeout <= deadline) {
    problems.push({status: 'fail', message: `--agent-timeout ${timeout} is not above the trial deadline ${deadline}`, line: timeoutV.flag!.line, hint: 'Use deadline + 60 so the Gateway reports the trial before Relax kills the agent.'})
  }
  if (gateway.maxDeadline === undefined) {
    problems.push({status: 'skip', message: 'not checked: no launcher writes the Gateway max_deadline_s as a number (it may come from an environment variable)'})
  } else if (deadline !== undefined && deadline > gateway.maxDeadline) {
    problems.push({status: 'fail', message: `NEMO_GYM_DEADLINE_S ${deadline} exceeds the Gateway max_deadline_s ${gateway.maxDeadline} (${gateway.where})`, line: deadlineV.flag!.line, hint: 'The Gateway answers 400 for every trial.'})
  }
  const policy = policyV.value
  if (!policyV.flag) problems.push({status: 'fail', message: '--agent-env sets no NEMO_GYM_INTERRUPT_POLICY'})
  else if (gateway.policy && policy !== gateway.policy) {
    problems.push({status: 'fail', message: `NEMO_GYM_INTERRUPT_POLICY=${policy}, but the Gateway registers ${gateway.policy}`, line: policyV.flag.line, hint: 'The Gateway refuses trials whose interrupt policy differs.'})
  }
  return {problems, pass: `deadline ${deadline} s <= ${gateway.maxDeadline} s, agent timeout ${timeout} s, policy ${policy}`}
})

// ------------------------------------------------------------------ prepare script

/**
 * The raw file name the recipe expects: the contract's, else the prepare script's own guard
 * (e.g. "must end with /calendar_train.jsonl"), else env.sh's default path.
 */
export function expectedRawFilename(ctx: CheckRun, prepare: LoadedFile, env: LoadedFile | undefined): {name: string; from: string} | undefined {
  if (ctx.target.contract) return {name: ctx.target.contract.data.raw_filename, from: 'recipe.yaml'}
  const guard = prepare.lines.find((l) => /NEMO_GYM_SOURCE_DATA|EXPECTED\w*=|must (?:end|match)/.test(l.text) && /\/[A-Za-z0-9_.-]+\.jsonl\b/.test(l.text))
  const fromGuard = guard?.text.match(/\/([A-Za-z0-9_.-]+\.jsonl)\b/)?.[1]
  if (fromGuard && !fromGuard.endsWith('_relax.jsonl')) return {name: fromGuard, from: `${prepare.name}:${guard!.line}`}
  const source = env && assignments(env.lines).find((a) => a.name === 'NEMO_GYM_SOURCE_DATA')
  const fromEnv = source?.value.match(/([A-Za-z0-9_.-]+\.jsonl)/)?.[1]
  return fromEnv ? {name: fromEnv, from: `${env!.name}:${source!.line}`} : undefined
}

const FAKE_DOCKER = `#!/usr/bin/env bash
printf '%s\\n' "$*" >> "$GYMRECIPE_FAKE_DOCKER_LOG"
exit 0
`

/**
 * Run each prepare script's host side with a recording fake `docker` first on PATH and an empty
 * env.sh: bad NEMO_GYM_SOURCE_DATA values must stop it before any container runs, the right one must not.
 */
export const prepareGuardsSourcePath: Check = {
  id: 'static.prepare-source-path',
  title: 'prepare requires an absolute NEMO_GYM_SOURCE_DATA ending in the raw filename',
  async run(ctx) {
    const files = await recipeFiles(ctx)
    if (files.prepare.length === 0) return {status: 'fail', message: 'no prepare script (prepare_*.sh) in the recipe folder'}
    const out: NamedResult[] = []
    const add = (prepare: LoadedFile, o: CheckOutcome) => out.push({id: this.id, title: this.title, file: prepare.name, ...o})
    for (const prepare of files.prepare) {
      if (!/\bNEMO_GYM_SOURCE_DATA\b/.test(prepare.text)) {
        add(prepare, {status: 'fail', message: `${prepare.name} never reads NEMO_GYM_SOURCE_DATA: it writes wherever its own defaults say, so nothing ties the prepared file to the path training reads`, hint: 'Take the destination from NEMO_GYM_SOURCE_DATA (absolute, ending in the raw file name) and refuse anything else before starting a container.'})
        continue
      }
      const overridden = assignments(prepare.lines).find((a) => a.name === 'NEMO_GYM_SOURCE_DATA' && !/\$\{NEMO_GYM_SOURCE_DATA\b/.test(a.value))
      if (overridden) {
        add(prepare, {status: 'fail', message: `${prepare.name} sets NEMO_GYM_SOURCE_DATA itself at line ${overridden.line} (${overridden.value.slice(0, 80)}), ignoring the path it is given`, line: overridden.line, hint: 'Read NEMO_GYM_SOURCE_DATA from the caller (env.sh) and refuse a path that is not absolute or does not end in the raw file name.'})
        continue
      }
      const raw = expectedRawFilename(ctx, prepare, files.byRole.env)
      if (!raw) {
        add(prepare, {status: 'skip', message: 'not checked: the expected raw file name is not written in the prepare script or env.sh', hint: 'Name it in the guard, e.g. "NEMO_GYM_SOURCE_DATA must end with /<name>.jsonl".'})
        continue
      }
      const problems = await probePrepare(prepare, raw.name)
      if (problems.length === 0) add(prepare, {status: 'pass', message: `rejects relative, renamed and *_relax.jsonl paths; accepts /.../${raw.name} (name from ${raw.from})`})
      for (const p of problems) add(prepare, p)
    }
    return out
  },
}

async function probePrepare(prepare: LoadedFile, raw: string): Promise<CheckOutcome[]> {
  const sandbox = await mkdtemp(path.join(os.tmpdir(), 'gymrecipe-prepare-'))
  try {
    await copyFile(prepare.path, path.join(sandbox, prepare.name))
    await writeFile(path.join(sandbox, 'env.sh'), '# emptied for the static check\n')
    // A recipe that trains on the user's own file reads it too: give it one, so only the
    // NEMO_GYM_SOURCE_DATA guard decides.
    await writeFile(path.join(sandbox, 'tasks.jsonl'), '{}\n')
    const bin = path.join(sandbox, 'bin')
    await mkdir(bin)
    await writeFile(path.join(bin, 'docker'), FAKE_DOCKER)
    await chmod(path.join(bin, 'docker'), 0o755)
    const attempt = async (value: string) => {
      const log = path.join(sandbox, `docker-${Math.random().toString(16).slice(2)}.log`)
      const r = await run('bash', [path.join(sandbox, prepare.name)], {
        timeout: 20_000,
        cwd: sandbox,
        env: {PATH: `${bin}:${process.env.PATH}`, NEMO_GYM_SOURCE_DATA: value, NEMO_GYM_TASK_DATA: path.join(sandbox, 'tasks.jsonl'), NEMO_GYM_IMAGE: 'gymrecipe-static-check:none', GYMRECIPE_FAKE_DOCKER_LOG: log, HOME: sandbox},
        extendEnv: false,
      })
      const calls = (await readFile(log, 'utf8').catch(() => '')).split('\n').filter(Boolean)
      return {exitCode: r.exitCode ?? -1, ranContainer: calls.some((c) => /^(run|create|container (run|create))\b/.test(c)), stderr: r.stderr}
    }
    const data = path.join(sandbox, 'shared')
    const bad: Array<[string, string]> = [
      ['a relative path', `data/${raw}`],
      ['a different file name', path.join(data, `other_${raw}`)],
      ['the converted preview', path.join(data, raw.replace(/\.jsonl$/, '_relax.jsonl'))],
    ]
    const problems: CheckOutcome[] = []
    for (const [label, value] of bad) {
      const r = await attempt(value)
      if (r.exitCode === 0 || r.ranContainer) problems.push({status: 'fail', message: `accepted ${label} (${value}) as NEMO_GYM_SOURCE_DATA`, hint: `Require an absolute path ending in /${raw} before starting any container.`})
    }
    const good = await attempt(path.join(data, raw))
    if (!good.ranContainer) problems.push({status: 'fail', message: `rejected the valid path ${path.join(data, raw)}: ${good.stderr.trim().split('\n').at(-1) ?? ''}`})
    return problems
  } finally {
    await rm(sandbox, {recursive: true, force: true})
  }
}

// ------------------------------------------------------------------ launchers

export const startIsolatesRay: Check = {
  id: 'static.start-private-ray',
  title: 'the start script unsets RAY_ADDRESS and RAY_JOB_SUBMISSION_ID before its private Ray',
  async run(ctx) {
    const {launchers} = await recipeFiles(ctx)
    const out: NamedResult[] = []
    const add = (file: string, o: CheckOutcome) => out.push({id: this.id, title: this.title, file, ...o})
    if (!launchers.some((start) => launcherRole(start).startsRay)) {
      return {status: 'fail', message: 'no launcher starts a private Gym Ray (`ray start --head`)', hint: 'Gym must run on its own Ray, never the Relax cluster.'}
    }
    for (const start of launchers) {
      const role = launcherRole(start)
      if (!role.startsRay) {
        if (role.startsGym) add(start.name, {status: 'pass', message: 'starts no Ray of its own: it attaches to the Ray it is run under'})
        continue
      }
      const rayStart = start.lines.find((l) => /\bray["']?\s+start\b/.test(l.text))!
      const unsets = start.lines.filter((l) => /(?:^|;|&&|\s)unset\s/.test(l.text))
      const unsetAddress = unsets.find((l) => /\bRAY_ADDRESS\b/.test(l.text))
      const unsetSubmission = unsets.find((l) => /\bRAY_JOB_SUBMISSION_ID\b/.test(l.text))
      const problems: CheckOutcome[] = []
      if (!unsetAddress) problems.push({status: 'fail', message: `RAY_ADDRESS is not unset before ray start (line ${rayStart.line})`, line: rayStart.line, hint: 'An inherited RAY_ADDRESS attaches Gym to the Relax cluster.'})
      if (!unsetSubmission) problems.push({status: 'fail', message: `RAY_JOB_SUBMISSION_ID is not unset before ray start (line ${rayStart.line})`, line: rayStart.line})
      for (const u of [unsetAddress, unsetSubmission]) {
        if (u && u.line > rayStart.line) problems.push({status: 'fail', message: `unset at line ${u.line} comes after ray start`, line: u.line})
      }
      if (problems.length === 0) add(start.name, {status: 'pass', message: `unset at line ${unsetAddress!.line}, ray start at line ${rayStart.line}`})
      for (const p of problems) add(start.name, p)
    }
    return out
  },
}

/** Where the README starts the service container by hand, when no script does. */
function readmeDockerRun(readme: LoadedFile | undefined): string | undefined {
  if (!readme) return undefined
  const at = readme.text.split('\n').findIndex((l) => /\bdocker\s+(?:run|create)\b/.test(l) && !/--rm\b/.test(l))
  return at < 0 ? undefined : `${readme.name}:${at + 1}`
}

export const startChecksOwnership: Check = {
  id: 'static.start-ownership',
  title: 'the start script labels its container and checks the label before replacing it',
  async run(ctx) {
    const files = await recipeFiles(ctx)
    const creators = files.launchers.filter((f) => launcherRole(f).createsContainer)
    if (creators.length === 0) {
      const where = readmeDockerRun(files.byRole.readme)
      return {
        status: 'skip',
        message: `not checked: no script creates the service container${where ? `; ${where} starts it with a hand-typed docker run` : ''}, so nothing checks whose container it replaces`,
        hint: 'A host-side launcher that creates the container with --label ai.relax.recipe=<recipe> and refuses to replace a container with another label makes this checkable.',
      }
    }
    const out: NamedResult[] = []
    for (const start of creators) {
      const problems: CheckOutcome[] = []
      const create = start.lines.find((l) => /\bdocker\s+(?:container\s+)?(?:create|run)\b/.test(l.text) && !/--rm\b/.test(l.text))
      const labelled = start.lines.some((l) => /--label[\s=]+["']?ai\.relax\.recipe=/.test(l.text))
      const read = start.lines.find((l) => /inspect\b.*ai\.relax\.recipe/.test(l.text))
      const removal = start.lines.find((l) => /\bdocker\s+(?:container\s+)?rm\b/.test(l.text) && !/on_interrupt|NEW_ID/.test(l.text))
      if (!labelled) problems.push({status: 'fail', message: 'the container is not created with --label ai.relax.recipe=<recipe>', line: create?.line, hint: 'Without the label nobody can tell whose container it is.'})
      if (!read) problems.push({status: 'fail', message: `the existing container's ai.relax.recipe label is never read${removal ? `, yet line ${removal.line} removes any container with that name` : ''}`, line: removal?.line, hint: 'Inspect the label and refuse to replace a container another recipe owns.'})
      if (read && removal && read.line > removal.line) problems.push({status: 'fail', message: `a container is removed at line ${removal.line} before its label is checked at line ${read.line}`, line: removal.line})
      if (read) {
        const after = start.lines.filter((l) => l.line > read.line && (!removal || l.line < removal.line))
        if (!after.some((l) => /\bexit\s+[1-9]/.test(l.text))) problems.push({status: 'fail', message: 'a foreign label does not stop the script (no exit between the label check and the removal)', line: read.line})
      }
      if (problems.length === 0) out.push({id: this.id, title: this.title, file: start.name, status: 'pass', message: `label read at line ${read!.line}, container replaced only after`})
      out.push(...problems.map((p) => ({id: this.id, title: this.title, file: start.name, ...p})))
    }
    return out
  },
}
