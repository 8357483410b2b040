/**
 * Run the checks of one rung (no climb): used by `train` for the training rung after a job ends.
 * Same semantics as the ladder runner: a crashing check fails, a skipped check makes the rung
 * incomplete, and only "pass" is a pass.
 */
import type {Check, CheckContext, CheckResult, RungDefinition, RungReport} from '../ladder/types.js'

async function runCheck(check: Check, definition: RungDefinition, ctx: CheckContext): Promise<CheckResult[]> {
  try {
    const outcome = await check.run(ctx)
    if (Array.isArray(outcome)) return outcome.map((r) => ({...r, rung: definition.rung}))
    return [{id: check.id, rung: definition.rung, title: check.title, ...outcome}]
  } catch (error: any) {
    return [{id: check.id, rung: definition.rung, title: check.title, status: 'fail', message: `check crashed: ${error?.message ?? String(error)}`, hint: error?.hint}]
  }
}

export async function runSingleRung(definition: RungDefinition, ctx: CheckContext, onCheck?: (result: CheckResult) => void): Promise<RungReport> {
  const results: CheckResult[] = []
  for (const check of definition.checks(ctx)) {
    const outcome = await runCheck(check, definition, ctx)
    for (const result of outcome) onCheck?.(result)
    results.push(...outcome)
  }
  const status = results.some((c) => c.status === 'fail') ? 'fail' : results.some((c) => c.status === 'skip') || results.length === 0 ? 'incomplete' : 'pass'
  return {rung: definition.rung, status, checks: results}
}
