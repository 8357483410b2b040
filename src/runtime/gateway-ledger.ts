/**
 * What gymrecipe itself submitted to a Gateway process. `/readyz` counts every trial since the
 * process started (its service_epoch); zero means no stale requester reached a fresh service. Once
 * gymrecipe's own trial rung or training has used the service, those trials are expected: the
 * ledger records how many trials the Gateway reported right after that use, per epoch.
 *
 * Kept outside the Relax checkout under ${XDG_STATE_HOME:-$HOME/.local/state}/gymrecipe/gateway/.
 */
import {readTextIfExists, writeFileAtomic} from './fs.js'
import {recipeStatePath} from './state-paths.js'

export interface GatewayUse {
  serviceEpoch: string
  /** /readyz `trials` right after gymrecipe's use ended. */
  trialsAfter: number
  /** What used it, e.g. "trial rung" or "training relax-nemo-gym-calendar-...". */
  by: string
  at: string
}

function ledgerPath(recipeDir: string, env: NodeJS.ProcessEnv): string {
  return recipeStatePath('gateway', recipeDir, env)
}

/** Record a use; a newer use on the same epoch only raises the count, a new epoch replaces it. */
export async function recordGatewayUse(recipeDir: string, use: Omit<GatewayUse, 'at'>, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const previous = await lastGatewayUse(recipeDir, env)
  const trialsAfter = previous?.serviceEpoch === use.serviceEpoch ? Math.max(previous.trialsAfter, use.trialsAfter) : use.trialsAfter
  await writeFileAtomic(ledgerPath(recipeDir, env), `${JSON.stringify({...use, trialsAfter, at: new Date().toISOString()}, null, 2)}\n`)
}

export async function lastGatewayUse(recipeDir: string, env: NodeJS.ProcessEnv = process.env): Promise<GatewayUse | undefined> {
  const text = await readTextIfExists(ledgerPath(recipeDir, env))
  if (text === undefined) return undefined
  try {
    const value = JSON.parse(text)
    if (typeof value?.serviceEpoch === 'string' && typeof value?.trialsAfter === 'number' && typeof value?.by === 'string') return value as GatewayUse
  } catch {
    // An unreadable ledger explains nothing.
  }
  return undefined
}
