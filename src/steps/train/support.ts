/** What a training run needs around it: the recorded contract, the submit-only entrypoint, the Gateway's trial count, the job as printed. */
import path from 'node:path'
import {ExitCode, GymError} from '../../errors.js'
import type {RecipeTarget} from '../../recipe/types.js'
import type {JobDetails} from '../../runtime/ray-jobs.js'
import {recordGatewayUse} from '../../runtime/gateway-ledger.js'
import {readyz} from '../../runtime/http.js'
import type {RecipeContract} from '../../contract/types.js'
import {trainingGateway} from '../../contract/endpoints.js'
import {shellWord} from '../../shell-words.js'

export function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve()
    else signal.addEventListener('abort', () => resolve(), {once: true})
  })
}

export function publicJob(job: JobDetails | undefined): Omit<JobDetails, 'runtime_env'> | null {
  if (!job) return null
  const {runtime_env: _runtimeEnv, ...rest} = job
  return rest
}

export async function requireContract(target: RecipeTarget): Promise<RecipeTarget & {contract: RecipeContract}> {
  if (!target.contract) {
    throw new GymError(`${target.dir} has no recipe.yaml`, {
      code: 'E_CONTRACT_MISSING',
      exit: ExitCode.usage,
      hint: 'train needs the recorded contract (model, raw filename, ports); generate the recipe with `gymrecipe new`.',
    })
  }
  return target as RecipeTarget & {contract: RecipeContract}
}

/**
 * Without RELAX_ENTRYPOINT_MODE the training script sources Relax's scripts/entrypoint/local.sh,
 * which may kill stray python/ray processes and stop other jobs. gymrecipe never stops anything
 * broadly, so it plays the entrypoint's harmless part itself: the mode, the model config dir and a
 * runtime env (the script adds the checkout to PYTHONPATH). Values the caller set are kept.
 */
export function submitOnlyEntrypoint(relaxRoot: string, scriptEnv: Record<string, string>): Record<string, string> {
  if (scriptEnv.RELAX_ENTRYPOINT_MODE) return {}
  // Only what is missing: the script inherits the rest, and a caller's RUNTIME_ENV_JSON may hold
  // tokens, so it must never be echoed in the printed command or --json.
  const added: Record<string, string> = {RELAX_ENTRYPOINT_MODE: 'gymrecipe'}
  if (!scriptEnv.MODEL_CONFIG_DIR) added.MODEL_CONFIG_DIR = path.join(relaxRoot, 'scripts', 'models')
  if (!scriptEnv.RUNTIME_ENV_JSON) added.RUNTIME_ENV_JSON = '{"env_vars":{}}'
  return added
}

/** The Gateway's trials after this job are gymrecipe's own from now on (see the service rung). */
export async function recordTrainingTrials(recipeDir: string, gateway: ReturnType<typeof trainingGateway>, submissionId: string, env: NodeJS.ProcessEnv): Promise<void> {
  if ('problem' in gateway) return
  const {answer} = await readyz(gateway.url, 5000)
  const body = answer?.json as {service_epoch?: unknown; trials?: unknown} | undefined
  if (typeof body?.service_epoch === 'string' && typeof body.trials === 'number') {
    await recordGatewayUse(recipeDir, {serviceEpoch: body.service_epoch, trialsAfter: body.trials, by: `training ${submissionId}`}, env)
  }
}

export function envWords(env: Record<string, string>): string {
  return Object.entries(env)
    .map(([k, v]) => `${k}=${shellWord(v)}`)
    .join(' ')
}
