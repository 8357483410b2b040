/** The training script's checks: arrays, submit, fixed values, raw data, model config, budgets, timing against the Gateway. */
import {readdir} from 'node:fs/promises'
import path from 'node:path'

import type {CheckOutcome} from '../types.js'
import {recipeFiles} from './recipe-files.js'
import type {LoadedFile} from '../../recipe/files.js'
import {arrays, assignments, type LogicalLine, resolveWord} from '../../recipe/shell.js'

import {ARRAYS, type CheckRun, DEPLOYMENT_AGENT_ENV, DEPLOYMENT_FLAGS, flagsOf, flagValue, numberOf, perTrainingScript, SUBMIT, submitLine, type Value} from './run-script.js'

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
