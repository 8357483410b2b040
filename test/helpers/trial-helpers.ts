/**
 * Helpers for the trial and training rung tests: run one rung's checks with the ladder's own
 * runner (without climbing the rungs below), and start the host Gym emulator for a
 * generated recipe.
 */
import {runRung} from '../../src/ladder/runner.js'
import type {CheckContext, CheckResult, RungDefinition} from '../../src/ladder/types.js'
import {resolveRecipe} from '../../src/recipe/target.js'
import {type GymLayout, freePortBlock} from './relax-fixture.js'
import {Scratch} from '../../src/ladder/scratch-store.js'

/** One rung's results, run by the product's own runner (without climbing the rungs below). */
export async function runRungChecks(definition: RungDefinition, ctx: CheckContext): Promise<CheckResult[]> {
  return (await runRung(definition, ctx, {render: false})).checks
}

export async function rungContext(relaxRoot: string, id: string, options: Partial<CheckContext['options']> & Record<string, unknown> = {}): Promise<CheckContext> {
  const target = await resolveRecipe(relaxRoot, id)
  return {target, options: {env: {}, smoke: false, ...options} as CheckContext['options'], scratch: new Scratch()}
}

export function byId(results: CheckResult[]): Record<string, CheckResult> {
  return Object.fromEntries(results.map((r) => [r.id, r]))
}

/** A 127.0.0.1 port layout (gateway, agent, resource, head, ray GCS, ray dashboard). */
export async function hostLayout(base = 23000): Promise<GymLayout> {
  const start = await freePortBlock(6, base)
  return {host: '127.0.0.1', bindHost: '127.0.0.1', gateway: start, agent: start + 1, resource: start + 2, head: start + 3, rayPort: start + 4, rayDashboardPort: start + 5}
}

/** Summarize failing results for an assertion message. */
export function failures(results: CheckResult[]): string {
  return results.filter((r) => r.status !== 'pass').map((r) => `${r.id} [${r.status}]: ${r.message}`).join('\n')
}
