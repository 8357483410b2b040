import {execa} from 'execa'
import {chmod, copyFile, mkdtemp, readFile, rm, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import type {Check, CheckResult} from '../types.js'
import {type LoadedFile, recipeFiles} from './recipe-files.js'
import {assignments, flagValues, keyValueWord, type LogicalLine} from './shell.js'

type Outcome = Omit<CheckResult, 'id' | 'rung' | 'title'>
type Result = Omit<CheckResult, 'rung'>

function results(id: string, title: string, problems: Outcome[], pass: string): Outcome | Result[] {
  if (problems.length === 0) return {status: 'pass', message: pass}
  return problems.map((p) => ({id, title, ...p}))
}

// ------------------------------------------------------------------ env.sh

/** Names that are training hyperparameters, budgets or parser choices, never deployment values. */
const HYPERPARAMETER = /(?:^|_)(?:LR|LEARNING_RATE|BATCH_SIZE|GLOBAL_BATCH\w*|MICRO_BATCH\w*|ROLLOUT_BATCH\w*|N_SAMPLES\w*|SAMPLES_PER_PROMPT|NUM_ROLLOUTS?|NUM_EPOCHS?|EPOCHS?|CONTEXT_LEN\w*|CONTEXT_LENGTH|MAX_CONTEXT\w*|MAX_PROMPT\w*|MAX_RESPONSE\w*|MAX_TOKENS\w*|PROMPT_LEN\w*|RESPONSE_LEN\w*|TEMPERATURE|TOP_P|TOP_K|\w*PARSER|KL_\w+|ENTROPY\w*|EPS_CLIP\w*|WEIGHT_DECAY|ADAM_\w+|TENSOR_PARALLEL\w*|TP_SIZE|PP_SIZE|CP_SIZE|SAVE_INTERVAL|DATA_LIMIT|MAX_STEPS|WARMUP\w*|ADVANTAGE\w*)(?:$|_)/

export const envDeploymentOnly: Check = {
  id: 'static.env-deployment-only',
  title: 'env.sh holds deployment values only',
  async run(ctx) {
    const {env} = await recipeFiles(ctx)
    if (!env) return {status: 'fail', message: 'env.sh missing'}
    const problems: Outcome[] = []
    for (const a of assignments(env.lines)) {
      if (HYPERPARAMETER.test(a.name)) {
        problems.push({status: 'fail', message: `${a.name} is a training hyperparameter, budget or parser setting`, file: env.name, line: a.line, hint: `Hard-code it in the training script; env.sh is for machines, ports and paths only.`})
      }
    }
    const source = assignments(env.lines).find((a) => a.name === 'NEMO_GYM_SOURCE_DATA')
    if (source && /_relax\.jsonl/.test(source.value)) {
      problems.push({status: 'fail', message: 'NEMO_GYM_SOURCE_DATA points at a converted *_relax.jsonl preview', file: env.name, line: source.line, hint: 'Point it at the raw Gym JSONL; the training job converts it.'})
    }
    return results('static.env-deployment-only', 'env.sh holds deployment values only', problems, `${assignments(env.lines).length} deployment variables`)
  },
}

// ------------------------------------------------------------------ training script

const ARRAYS = ['CKPT_ARGS', 'ROLLOUT_ARGS', 'GRPO_ARGS', 'OPTIMIZER_ARGS', 'PERF_ARGS', 'SGLANG_ARGS', 'TRACKING_ARGS', 'MISC_ARGS'] as const

function submitLine(run: LoadedFile): LogicalLine | undefined {
  return [...run.lines].reverse().find((l) => /(?:^|\s|\/)ray\s+job\s+submit\b/.test(l.text))
}

function numberFlag(run: LoadedFile, flag: string): {value: number; line: number} | undefined {
  const found = flagValues(run.lines, flag).find((f) => /^\d+(\.\d+)?$/.test(f.value))
  return found ? {value: Number(found.value), line: found.line} : undefined
}

export const trainingArrays: Check = {
  id: 'static.run-arrays',
  title: 'the training script defines every argument array and passes it',
  async run(ctx) {
    const {run} = await recipeFiles(ctx)
    if (!run) return {status: 'fail', message: 'training script missing'}
    const submit = submitLine(run)
    const problems: Outcome[] = []
    for (const name of ARRAYS) {
      if (!run.lines.some((l) => l.text.startsWith(`${name}=(`))) problems.push({status: 'fail', message: `${name} is not defined`, file: run.name, hint: 'Hard-code every argument array in the training script.'})
      else if (submit && !submit.text.includes(`\${${name}[@]}`)) problems.push({status: 'fail', message: `${name} is defined but not passed to ray job submit`, file: run.name, line: submit.line})
    }
    return results(this.id, this.title, problems, `${ARRAYS.length} arrays defined and passed`)
  },
}

export const submitsLast: Check = {
  id: 'static.run-submit',
  title: 'the training script ends with ray job submit',
  async run(ctx) {
    const {run} = await recipeFiles(ctx)
    if (!run) return {status: 'fail', message: 'training script missing'}
    const last = run.lines.at(-1)
    if (!last || !/(?:^|\s|\/)ray\s+job\s+submit\b/.test(last.text)) {
      return {status: 'fail', message: `the last command is not ray job submit: ${last?.text.slice(0, 80) ?? '(empty)'}`, file: run.name, line: last?.line, hint: 'The direct script must itself submit the job as its final command.'}
    }
    return {status: 'pass', message: `ray job submit at line ${last.line}`}
  },
}

export const noWaitOnlyWhenAsked: Check = {
  id: 'static.run-no-wait',
  title: 'ray job submit waits unless RAY_NO_WAIT=1',
  async run(ctx) {
    const {run} = await recipeFiles(ctx)
    if (!run) return {status: 'fail', message: 'training script missing'}
    const problems: Outcome[] = []
    const openIfs: LogicalLine[] = []
    for (const l of run.lines) {
      if (/^(?:if|elif)\s/.test(l.text)) {
        if (l.text.startsWith('elif')) openIfs.pop()
        openIfs.push(l)
      }
      if (/^fi\b|;\s*fi$/.test(l.text)) openIfs.pop()
      if (!l.text.includes('--no-wait')) continue
      if (/\$\{RAY_NO_WAIT:?\+/.test(l.text)) {
        problems.push({status: 'fail', message: '${RAY_NO_WAIT:+--no-wait} adds --no-wait for any non-empty value, RAY_NO_WAIT=0 included', file: run.name, line: l.line, hint: 'Add --no-wait only when [[ "${RAY_NO_WAIT:-0}" == "1" ]].'})
        continue
      }
      const guard = /RAY_NO_WAIT[^\]]*?(?:==?|-eq)\s*["']?1["']?/
      const inline = /\[\[?[^\]]*RAY_NO_WAIT[^\]]*\]\]?\s*&&/.test(l.text) && guard.test(l.text)
      const guarded = openIfs.some((i) => guard.test(i.text))
      if (!inline && !guarded) problems.push({status: 'fail', message: '--no-wait is not conditional on RAY_NO_WAIT=1', file: run.name, line: l.line, hint: 'Waiting must be the default so the job log streams and failures surface.'})
    }
    return results(this.id, this.title, problems, 'waits by default')
  },
}

export const noDelegation: Check = {
  id: 'static.run-no-delegation',
  title: 'the training script does not delegate to another recipe',
  async run(ctx) {
    const {run} = await recipeFiles(ctx)
    if (!run) return {status: 'fail', message: 'training script missing'}
    const problems: Outcome[] = []
    for (const l of run.lines) {
      const other = l.text.match(/recipes\/([A-Za-z0-9_.-]+)\//)
      if (other && other[1] !== ctx.target.id) problems.push({status: 'fail', message: `uses another recipe's files (recipes/${other[1]}/)`, file: run.name, line: l.line, hint: 'Copy what you need; each recipe is one self-contained script.'})
      const script = l.text.match(/(?:^|\s)(?:exec\s+)?(?:bash|sh|source|\.)\s+["']?[^\s"']*?(run-[A-Za-z0-9_.-]*nemo-gym-[A-Za-z0-9_.-]+\.sh)/)
      if (script && script[1] !== run.name) problems.push({status: 'fail', message: `delegates to ${script[1]}`, file: run.name, line: l.line, hint: 'Hard-code the parameters here instead of wrapping another launcher.'})
    }
    return results(this.id, this.title, problems, 'self-contained')
  },
}

export const rawSourceData: Check = {
  id: 'static.run-raw-source',
  title: 'training reads the raw Gym JSONL, never *_relax.jsonl',
  async run(ctx) {
    const {run} = await recipeFiles(ctx)
    if (!run) return {status: 'fail', message: 'training script missing'}
    const problems: Outcome[] = []
    for (const a of assignments(run.lines)) {
      if (a.name === 'NEMO_GYM_SOURCE_DATA' && /_relax\.jsonl/.test(a.value)) problems.push({status: 'fail', message: 'NEMO_GYM_SOURCE_DATA is set to a converted *_relax.jsonl', file: run.name, line: a.line})
    }
    const submit = submitLine(run)
    if (submit) {
      if (/_relax\.jsonl/.test(submit.text)) problems.push({status: 'fail', message: 'ray job submit passes a *_relax.jsonl file', file: run.name, line: submit.line})
      if (!submit.text.includes('${NEMO_GYM_SOURCE_DATA}') && !submit.text.includes('$NEMO_GYM_SOURCE_DATA')) {
        problems.push({status: 'fail', message: 'ray job submit does not pass NEMO_GYM_SOURCE_DATA as the source data', file: run.name, line: submit.line, hint: 'The job converts the raw file itself (run_training.sh <gateway> <source> <prompt> <limit>).'})
      }
    }
    return results(this.id, this.title, problems, 'raw source data')
  },
}

export const noWorkingDir: Check = {
  id: 'static.run-no-working-dir',
  title: 'no Ray working_dir upload',
  async run(ctx) {
    const {run} = await recipeFiles(ctx)
    if (!run) return {status: 'fail', message: 'training script missing'}
    const hit = run.lines.find((l) => /--working-dir\b|working_dir|\bWORKING_DIR=/.test(l.text))
    if (hit) return {status: 'fail', message: `uploads a Ray working_dir: ${hit.text.slice(0, 100)}`, file: run.name, line: hit.line, hint: 'Every node sees the same absolute checkout; put it on PYTHONPATH instead of uploading it.'}
    return {status: 'pass', message: 'uses the shared checkout in place'}
  },
}

export const samplesPerPrompt: Check = {
  id: 'static.run-samples',
  title: 'at least 4 samples per prompt',
  async run(ctx) {
    const {run} = await recipeFiles(ctx)
    if (!run) return {status: 'fail', message: 'training script missing'}
    const n = numberFlag(run, '--n-samples-per-prompt')
    if (!n) return {status: 'fail', message: '--n-samples-per-prompt is not set to a number', file: run.name}
    if (n.value < 4) return {status: 'fail', message: `--n-samples-per-prompt ${n.value}: GRPO needs group variance`, file: run.name, line: n.line, hint: 'Use at least 4; one sample per prompt gives zero advantage.'}
    return {status: 'pass', message: `--n-samples-per-prompt ${n.value}`}
  },
}

export const contextBudgets: Check = {
  id: 'static.run-context',
  title: 'context budgets leave room to generate',
  async run(ctx) {
    const {run} = await recipeFiles(ctx)
    if (!run) return {status: 'fail', message: 'training script missing'}
    const prompt = numberFlag(run, '--rollout-max-prompt-len')
    const response = numberFlag(run, '--rollout-max-response-len')
    const context = numberFlag(run, '--rollout-max-context-len')
    const perGpu = numberFlag(run, '--max-tokens-per-gpu')
    const missing = Object.entries({'--rollout-max-prompt-len': prompt, '--rollout-max-response-len': response, '--rollout-max-context-len': context, '--max-tokens-per-gpu': perGpu}).filter(([, v]) => !v).map(([k]) => k)
    if (missing.length > 0) return {status: 'fail', message: `not set: ${missing.join(', ')}`, file: run.name}
    const problems: Outcome[] = []
    if (prompt!.value >= context!.value) problems.push({status: 'fail', message: `prompt ${prompt!.value} is not below context ${context!.value}`, file: run.name, line: prompt!.line})
    if (response!.value > context!.value) problems.push({status: 'fail', message: `response ${response!.value} exceeds context ${context!.value}`, file: run.name, line: response!.line})
    if (perGpu!.value < context!.value) problems.push({status: 'fail', message: `--max-tokens-per-gpu ${perGpu!.value} is below context ${context!.value}`, file: run.name, line: perGpu!.line})
    return results(this.id, this.title, problems, `prompt ${prompt!.value} < context ${context!.value}, response ${response!.value} <= context, ${perGpu!.value} tokens per GPU`)
  },
}

/** The Gateway registration in the start script: max deadline and interrupt policy. */
function gatewaySpec(start: LoadedFile | undefined, ctx: Parameters<Check['run']>[0]): {maxDeadline?: number; policy?: string} {
  if (ctx.target.contract) return {maxDeadline: ctx.target.contract.gateway.max_deadline_s, policy: ctx.target.contract.gateway.interrupt_policy}
  if (!start) return {}
  const deadline = start.text.match(/"max_deadline_s"\s*:\s*(\d+(?:\.\d+)?)/)
  const policy = start.text.match(/"interrupt_policy"\s*:\s*"([a-z]+)"/)
  return {maxDeadline: deadline ? Number(deadline[1]) : undefined, policy: policy?.[1]}
}

export const trialTiming: Check = {
  id: 'static.run-trial-timing',
  title: 'agent timeout, deadline and interrupt policy match the Gateway',
  async run(ctx) {
    const {run, start} = await recipeFiles(ctx)
    if (!run) return {status: 'fail', message: 'training script missing'}
    const problems: Outcome[] = []
    const deadline = keyValueWord(run.lines, 'NEMO_GYM_DEADLINE_S')
    const policy = keyValueWord(run.lines, 'NEMO_GYM_INTERRUPT_POLICY')
    const timeout = numberFlag(run, '--agent-timeout')
    const gateway = gatewaySpec(start, ctx)
    if (!deadline) problems.push({status: 'fail', message: '--agent-env sets no NEMO_GYM_DEADLINE_S (the thin client would default to 1800 s)', file: run.name})
    if (!timeout) problems.push({status: 'fail', message: '--agent-timeout is not set', file: run.name})
    if (deadline && timeout && timeout.value <= Number(deadline.value)) {
      problems.push({status: 'fail', message: `--agent-timeout ${timeout.value} is not above the trial deadline ${deadline.value}`, file: run.name, line: timeout.line, hint: 'Use deadline + 60 so the Gateway reports the trial before Relax kills the agent.'})
    }
    if (deadline && gateway.maxDeadline !== undefined && Number(deadline.value) > gateway.maxDeadline) {
      problems.push({status: 'fail', message: `NEMO_GYM_DEADLINE_S ${deadline.value} exceeds the Gateway max_deadline_s ${gateway.maxDeadline}`, file: run.name, line: deadline.line, hint: 'The Gateway answers 400 for every trial.'})
    }
    if (gateway.maxDeadline === undefined) problems.push({status: 'fail', message: 'the Gateway max_deadline_s cannot be found in the start script', file: start?.name})
    if (!policy) problems.push({status: 'fail', message: '--agent-env sets no NEMO_GYM_INTERRUPT_POLICY', file: run.name})
    else if (gateway.policy && policy.value !== gateway.policy) {
      problems.push({status: 'fail', message: `NEMO_GYM_INTERRUPT_POLICY=${policy.value}, but the Gateway registers ${gateway.policy}`, file: run.name, line: policy.line, hint: 'The Gateway refuses trials whose interrupt policy differs.'})
    }
    return results(this.id, this.title, problems, `deadline ${deadline?.value} s <= ${gateway.maxDeadline} s, agent timeout ${timeout?.value} s, policy ${policy?.value}`)
  },
}

// ------------------------------------------------------------------ prepare script

/** The raw filename the recipe expects: from the contract, else env.sh's default path. */
function expectedRawFilename(ctx: Parameters<Check['run']>[0], env: LoadedFile | undefined): string | undefined {
  if (ctx.target.contract) return ctx.target.contract.data.raw_filename
  const source = env && assignments(env.lines).find((a) => a.name === 'NEMO_GYM_SOURCE_DATA')
  const m = source?.value.match(/([A-Za-z0-9_.-]+\.jsonl)/)
  return m?.[1]
}

const FAKE_DOCKER = `#!/usr/bin/env bash
printf '%s\\n' "$*" >> "$GYMRECIPE_FAKE_DOCKER_LOG"
exit 0
`

/**
 * Run the prepare script's host side with a recording fake `docker` first on PATH and an empty
 * env.sh: bad NEMO_GYM_SOURCE_DATA values must stop it before any container runs, the right one must not.
 */
export const prepareGuardsSourcePath: Check = {
  id: 'static.prepare-source-path',
  title: 'prepare requires an absolute NEMO_GYM_SOURCE_DATA ending in the raw filename',
  async run(ctx) {
    const {prepare, env} = await recipeFiles(ctx)
    if (!prepare) return {status: 'fail', message: 'prepare script missing'}
    const raw = expectedRawFilename(ctx, env)
    if (!raw) return {status: 'fail', message: 'cannot tell the expected raw filename (no recipe.yaml, no NEMO_GYM_SOURCE_DATA in env.sh)', file: env?.name}
    const sandbox = await mkdtemp(path.join(os.tmpdir(), 'gymrecipe-prepare-'))
    try {
      await copyFile(prepare.path, path.join(sandbox, prepare.name))
      await writeFile(path.join(sandbox, 'env.sh'), '# emptied for the static check\n')
      const bin = path.join(sandbox, 'bin')
      await execa('mkdir', ['-p', bin])
      await writeFile(path.join(bin, 'docker'), FAKE_DOCKER)
      await chmod(path.join(bin, 'docker'), 0o755)
      const attempt = async (value: string) => {
        const log = path.join(sandbox, `docker-${Math.random().toString(16).slice(2)}.log`)
        const r = await execa('bash', [path.join(sandbox, prepare.name)], {
          reject: false,
          timeout: 20_000,
          cwd: sandbox,
          env: {PATH: `${bin}:${process.env.PATH}`, NEMO_GYM_SOURCE_DATA: value, NEMO_GYM_IMAGE: 'gymrecipe-static-check:none', GYMRECIPE_FAKE_DOCKER_LOG: log, HOME: sandbox},
          extendEnv: false,
        })
        const calls = (await readFile(log, 'utf8').catch(() => '')).split('\n').filter(Boolean)
        return {exitCode: r.exitCode ?? -1, ranContainer: calls.some((c) => /^(run|create|container (run|create))\b/.test(c)), stderr: String(r.stderr)}
      }
      const data = path.join(sandbox, 'shared')
      const bad: Array<[string, string]> = [
        ['a relative path', `data/${raw}`],
        ['a different file name', path.join(data, `other_${raw}`)],
        ['the converted preview', path.join(data, raw.replace(/\.jsonl$/, '_relax.jsonl'))],
      ]
      const problems: Outcome[] = []
      for (const [label, value] of bad) {
        const r = await attempt(value)
        if (r.exitCode === 0 || r.ranContainer) problems.push({status: 'fail', message: `accepted ${label} (${value}) as NEMO_GYM_SOURCE_DATA`, file: prepare.name, hint: `Require an absolute path ending in /${raw} before starting any container.`})
      }
      const good = await attempt(path.join(data, raw))
      if (!good.ranContainer) problems.push({status: 'fail', message: `rejected the valid path ${path.join(data, raw)}: ${good.stderr.trim().split('\n').at(-1) ?? ''}`, file: prepare.name})
      return results(this.id, this.title, problems, `rejects relative, renamed and *_relax.jsonl paths; accepts /.../${raw}`)
    } finally {
      await rm(sandbox, {recursive: true, force: true})
    }
  },
}

// ------------------------------------------------------------------ start script

export const startIsolatesRay: Check = {
  id: 'static.start-private-ray',
  title: 'the start script unsets RAY_ADDRESS and RAY_JOB_SUBMISSION_ID before its private Ray',
  async run(ctx) {
    const {start} = await recipeFiles(ctx)
    if (!start) return {status: 'fail', message: 'start script missing'}
    const rayStart = start.lines.find((l) => /\bray["']?\s+start\b/.test(l.text))
    const unsets = start.lines.filter((l) => /^unset\s/.test(l.text))
    const unsetAddress = unsets.find((l) => /\bRAY_ADDRESS\b/.test(l.text))
    const unsetSubmission = unsets.find((l) => /\bRAY_JOB_SUBMISSION_ID\b/.test(l.text))
    const problems: Outcome[] = []
    if (!rayStart) problems.push({status: 'fail', message: 'no `ray start` for a private Gym Ray', file: start.name, hint: 'Gym must run on its own Ray, never the Relax cluster.'})
    if (!unsetAddress) problems.push({status: 'fail', message: 'RAY_ADDRESS is not unset', file: start.name, line: rayStart?.line, hint: 'An inherited RAY_ADDRESS attaches Gym to the Relax cluster.'})
    if (!unsetSubmission) problems.push({status: 'fail', message: 'RAY_JOB_SUBMISSION_ID is not unset', file: start.name, line: rayStart?.line})
    for (const u of [unsetAddress, unsetSubmission]) {
      if (u && rayStart && u.line > rayStart.line) problems.push({status: 'fail', message: `unset at line ${u.line} comes after ray start`, file: start.name, line: u.line})
    }
    return results(this.id, this.title, problems, `unset at line ${unsetAddress?.line}, ray start at line ${rayStart?.line}`)
  },
}

export const startChecksOwnership: Check = {
  id: 'static.start-ownership',
  title: 'the start script labels its container and checks the label before replacing it',
  async run(ctx) {
    const {start} = await recipeFiles(ctx)
    if (!start) return {status: 'fail', message: 'start script missing'}
    const problems: Outcome[] = []
    const create = start.lines.find((l) => /docker\s+(?:container\s+)?(?:create|run)\b/.test(l.text) && !/--rm\b/.test(l.text))
    const labelled = start.lines.some((l) => /--label[\s=]+["']?ai\.relax\.recipe=/.test(l.text))
    const read = start.lines.find((l) => /inspect\b.*ai\.relax\.recipe/.test(l.text))
    const removal = start.lines.find((l) => /docker\s+(?:container\s+)?rm\b/.test(l.text) && !/on_interrupt|NEW_ID/.test(l.text))
    if (!create) problems.push({status: 'fail', message: 'no docker create/run of the service container', file: start.name})
    if (!labelled) problems.push({status: 'fail', message: 'the container is not created with --label ai.relax.recipe=<recipe>', file: start.name, line: create?.line, hint: 'Without the label nobody can tell whose container it is.'})
    if (!read) problems.push({status: 'fail', message: 'the existing container\'s ai.relax.recipe label is never read', file: start.name, line: removal?.line, hint: 'Inspect the label and refuse to replace a container another recipe owns.'})
    if (read && removal && read.line > removal.line) problems.push({status: 'fail', message: `a container is removed at line ${removal.line} before its label is checked at line ${read.line}`, file: start.name, line: removal.line})
    if (read) {
      const after = start.lines.filter((l) => l.line > read.line && (!removal || l.line < removal.line))
      if (!after.some((l) => /\bexit\s+[1-9]/.test(l.text))) problems.push({status: 'fail', message: 'a foreign label does not stop the script (no exit between the label check and the removal)', file: start.name, line: read.line})
    }
    return results(this.id, this.title, problems, `label read at line ${read?.line}, container replaced only after`)
  },
}
