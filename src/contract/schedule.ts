/**
 * The training schedule as a contract choice. `hybrid` is Relax's hybrid-async recipe for
 * workplace-assistant (run-qwen3-4B-8xgpu-nemo-gym-workplace-hybrid-async.sh): the job's GPUs split
 * in half between actor and rollout, `--max-staleness 2`, `--num-iters-per-train-update 1`,
 * `--hybrid` instead of `--colocate`, the actor's tensor parallelism and the SGLang engine size
 * capped by their half, and the router's circuit breaker off.
 */
import {usageError} from '../errors.js'
import type {RecipeContract, TrainingSchedule} from './types.js'

export type ScheduleMode = TrainingSchedule['mode']
export const SCHEDULE_MODES: readonly ScheduleMode[] = ['colocate', 'hybrid']

export const HYBRID_MAX_STALENESS = 2
export const HYBRID_ITERS_PER_TRAIN_UPDATE = 1

type Training = RecipeContract['training']

/** The largest divisor of `of` that is at most `cap`. */
function divisorAtMost(of: number, cap: number): number {
  for (let d = Math.min(of, cap); d > 1; d--) if (of % d === 0) return d
  return 1
}

/** The training values for a schedule; colocate drops the recorded schedule (the default). */
export function withSchedule(training: Training, mode: ScheduleMode): Training {
  const {schedule: _previous, ...rest} = training
  if (mode === 'colocate') return rest
  if (training.gpus < 2) throw usageError(`a hybrid schedule needs at least 2 GPUs (actor and rollout each their own), not ${training.gpus}`, 'Pass --gpus 2 or more, or --schedule colocate.', {field: '--schedule'})
  const actor = Math.floor(training.gpus / 2)
  const rollout = training.gpus - actor
  const parallel = training.perf.pipeline_parallel * training.perf.context_parallel
  const schedule: TrainingSchedule = {
    mode: 'hybrid',
    actor_gpus: actor,
    rollout_gpus: rollout,
    max_staleness: HYBRID_MAX_STALENESS,
    num_iters_per_train_update: HYBRID_ITERS_PER_TRAIN_UPDATE,
    num_data_storage_units: 1,
    use_health_check: true,
  }
  return {
    ...rest,
    perf: {...rest.perf, tensor_parallel: actor % parallel === 0 ? divisorAtMost(actor / parallel, rest.perf.tensor_parallel) : rest.perf.tensor_parallel},
    sglang: {...rest.sglang, num_gpus_per_engine: divisorAtMost(rollout, rest.sglang.num_gpus_per_engine), router_disable_circuit_breaker: true},
    exp_name: rest.exp_name.includes('hybrid') ? rest.exp_name : `${rest.exp_name}-hybrid-async`,
    schedule,
  }
}
