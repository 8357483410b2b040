/** The training script's flags and arrays, read back into the contract's training values. */
import {loadBuiltin} from '../../contract/builtin.js'
import type {LoadedFile} from '../../recipe/files.js'
import {arrays, assignments, resolveWord, type Word} from '../../recipe/shell.js'
import {renderRecipe} from '../../scaffold/render.js'
import {Reading, numberOf, intOf} from './reading.js'

/** Contract values and the flags that carry them (as in the generated training script). */
export const TRAINING_FLAGS: Array<[string, string, 'int' | 'number' | 'bool' | 'text']> = [
  ['/training/agent_timeout_s', '--agent-timeout', 'int'],
  ['/training/rollout/num_rollout', '--num-rollout', 'int'],
  ['/training/rollout/batch_size', '--rollout-batch-size', 'int'],
  ['/training/rollout/n_samples_per_prompt', '--n-samples-per-prompt', 'int'],
  ['/training/rollout/max_prompt_len', '--rollout-max-prompt-len', 'int'],
  ['/training/rollout/max_response_len', '--rollout-max-response-len', 'int'],
  ['/training/rollout/max_context_len', '--rollout-max-context-len', 'int'],
  ['/training/rollout/temperature', '--rollout-temperature', 'number'],
  ['/training/rollout/global_batch_size', '--global-batch-size', 'int'],
  ['/training/perf/tensor_parallel', '--tensor-model-parallel-size', 'int'],
  ['/training/perf/sequence_parallel', '--sequence-parallel', 'bool'],
  ['/training/perf/pipeline_parallel', '--pipeline-model-parallel-size', 'int'],
  ['/training/perf/context_parallel', '--context-parallel-size', 'int'],
  ['/training/perf/expert_parallel', '--expert-model-parallel-size', 'int'],
  ['/training/perf/expert_tensor_parallel', '--expert-tensor-parallel-size', 'int'],
  ['/training/perf/micro_batch_size', '--micro-batch-size', 'int'],
  ['/training/perf/max_tokens_per_gpu', '--max-tokens-per-gpu', 'int'],
  ['/training/perf/log_probs_max_tokens_per_gpu', '--log-probs-max-tokens-per-gpu', 'int'],
  ['/training/perf/log_probs_chunk_size', '--log-probs-chunk-size', 'int'],
  ['/training/grpo/kl_loss_coef', '--kl-loss-coef', 'number'],
  ['/training/grpo/entropy_coef', '--entropy-coef', 'number'],
  ['/training/grpo/eps_clip', '--eps-clip', 'number'],
  ['/training/grpo/eps_clip_high', '--eps-clip-high', 'number'],
  ['/training/grpo/use_tis', '--use-tis', 'bool'],
  ['/training/optimizer/lr', '--lr', 'number'],
  ['/training/optimizer/weight_decay', '--weight-decay', 'number'],
  ['/training/optimizer/adam_beta1', '--adam-beta1', 'number'],
  ['/training/optimizer/adam_beta2', '--adam-beta2', 'number'],
  ['/training/sglang/num_gpus_per_engine', '--rollout-num-gpus-per-engine', 'int'],
  ['/training/sglang/mem_fraction_static', '--sglang-mem-fraction-static', 'number'],
  ['/training/sglang/cuda_graph_max_bs', '--sglang-cuda-graph-max-bs', 'int'],
  ['/training/sglang/router_policy', '--sglang-router-policy', 'text'],
  ['/training/save_interval', '--save-interval', 'int'],
  ['/training/parsers/tool_call', '--agentic-tool-call-parser', 'text'],
  ['/training/parsers/reasoning', '--agentic-reasoning-parser', 'text'],
]

/** Optional in the contract: absent in the script means Relax's own default (null). */
export const NULL_WHEN_ABSENT = new Set(['/training/perf/micro_batch_size', '/training/perf/log_probs_max_tokens_per_gpu', '/training/sglang/cuda_graph_max_bs', '/training/sglang/router_policy', '/training/parsers/reasoning'])

/** Every flag the generated training script writes: anything else a hand-written one passes is kept verbatim. */
export async function generatedFlags(): Promise<Set<string>> {
  const rendered = await renderRecipe(await loadBuiltin('calendar'))
  const run = rendered.find((f) => f.role === 'run')!
  return new Set([...arrays(run.content).values()].flat().map((w) => w.value).filter((v) => v.startsWith('--')))
}

export function readTraining(r: Reading, run: LoadedFile, generated: Set<string>): void {
  const where = (line: number) => `${run.name}:${line}`
  const words = [...arrays(run.text).values()].flat()
  const flagAt = (flag: string): {word: Word; value?: Word} | undefined => {
    const i = words.findIndex((w) => w.value === flag)
    return i === -1 ? undefined : {word: words[i], value: words[i + 1]}
  }
  for (const [pointer, flag, kind] of TRAINING_FLAGS) {
    const found = flagAt(flag)
    if (kind === 'bool') {
      r.set(pointer, Boolean(found), found ? where(found.word.line) : `${run.name} (not passed)`)
      continue
    }
    if (!found?.value) {
      if (NULL_WHEN_ABSENT.has(pointer)) r.set(pointer, null, `${run.name} (not passed: Relax's default)`)
      else r.missing(pointer, `${run.name} does not pass ${flag} (Relax's own default applies, which gymrecipe does not know)`)
      continue
    }
    const resolved = resolveWord(found.value.value, run.lines)
    const text = resolved.value
    const value = kind === 'int' ? intOf(text) : kind === 'number' ? numberOf(text) : text
    if (value === undefined) r.missing(pointer, `${flag} at ${where(found.value.line)} is ${found.value.value}, which cannot be worked out without running the script`)
    else r.set(pointer, value, `${where(found.value.line)}${resolved.fromEnv.length > 0 ? ` (default of ${resolved.fromEnv.map((v) => v.name).join(', ')})` : ''}`)
  }
  const checkpoint = flagAt('--hf-checkpoint')?.value
  // The model folder is the last part of the path; MODEL_DIR before it is the deployment's.
  const model = checkpoint?.value.replace(/\/+$/, '').split('/').at(-1)
  if (checkpoint && model && !model.includes('$')) r.set('/training/model/name', model, where(checkpoint.line))
  else r.missing('/training/model/name', `${run.name} passes no --hf-checkpoint ending in the model folder`)
  const named = run.name.match(/^run-(.+?)-(\d+)xgpu-nemo-gym/)
  if (named) {
    r.set('/training/model/slug', named[1], `the file name ${run.name}`)
    r.set('/training/gpus', Number(named[2]), `the file name ${run.name}`)
  } else {
    r.missing('/training/model/slug', `${run.name} is not named run-<model>-<N>xgpu-nemo-gym…`)
    r.missing('/training/gpus', `${run.name} is not named run-<model>-<N>xgpu-nemo-gym…`)
  }
  const sourced = run.lines.find((l) => /^(?:source|\.)\s/.test(l.text) && /scripts\/models|MODEL_CONFIG_DIR/.test(l.text))
  const script = sourced?.text.match(/\/([\w.-]+\.sh)"?\s*$/)?.[1]
  if (script) r.set('/training/model/config_script', script, where(sourced!.line))
  else r.missing('/training/model/config_script', `${run.name} sources no scripts/models/<model>.sh`)
  for (const [pointer, name] of [['/training/project_name', 'PROJECT_NAME'], ['/training/exp_name', 'EXP_NAME']] as const) {
    const a = assignments(run.lines).find((x) => x.name === name)
    const value = a && resolveWord(a.value, run.lines).value
    if (value) r.set(pointer, value, where(a!.line))
    else r.missing(pointer, `${run.name} sets no ${name}`)
  }
  // Flags the generated script does not write are kept verbatim, array by array.
  const known = new Set([...TRAINING_FLAGS.map(([, f]) => f), ...generated])
  const extra: Record<string, string[]> = {rollout: [], perf: [], grpo: [], optimizer: [], misc: []}
  for (const [name, list] of arrays(run.text)) {
    if (name === 'CKPT_ARGS') continue
    const bucket = name.startsWith('ROLLOUT') ? 'rollout' : name.startsWith('PERF') ? 'perf' : name.startsWith('GRPO') ? 'grpo' : name.startsWith('OPTIMIZER') ? 'optimizer' : 'misc'
    for (let i = 0; i < list.length; i++) {
      const w = list[i].value
      if (!w.startsWith('--')) continue
      if (known.has(w)) {
        if (w === '--agent-env') while (list[i + 1] && !list[i + 1].value.startsWith('--')) i++
        continue
      }
      const next = list[i + 1]?.value
      extra[bucket].push(next !== undefined && !next.startsWith('--') ? `${w}=${next}` : w)
    }
  }
  r.set('/training/extra_args', extra, `${run.name} (flags the generated script does not write)`)
  const agentEnv = (key: string) => {
    const i = words.findIndex((w) => w.value.startsWith(`${key}=`))
    return i === -1 ? undefined : {value: words[i].value.slice(key.length + 1), line: words[i].line}
  }
  const deadline = agentEnv('NEMO_GYM_DEADLINE_S')
  if (deadline && intOf(resolveWord(deadline.value, run.lines).value) !== undefined) r.set('/gateway/deadline_s', intOf(resolveWord(deadline.value, run.lines).value), where(deadline.line))
  const policy = agentEnv('NEMO_GYM_INTERRUPT_POLICY')
  if (policy) r.set('/gateway/interrupt_policy', policy.value, where(policy.line))
}
