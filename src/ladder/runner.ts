import {Listr, type ListrTask} from 'listr2'

import type {Check, CheckContext, CheckResult, LadderReport, Rung, RungDefinition, RungReport} from './types.js'
import {RUNGS} from './types.js'
import {hintOf, messageOf} from '../errors.js'

/** Skip messages start with this; the renderers say it once. */
const NOT_CHECKED = /^not checked: /

export interface RunLadderOptions {
  /** Render progress for people (listr2); false under --json. */
  render: boolean
  /** Climb from this rung (default: static). Lower rungs are still required: they run first. */
  level: Rung
  /** Check this one rung alone against what is deployed now; the ladder is not climbed. */
  only?: boolean
}

async function runCheck(check: Check, rung: Rung, ctx: CheckContext): Promise<CheckResult[]> {
  try {
    const outcome = await check.run(ctx)
    if (Array.isArray(outcome)) return outcome.map((r) => ({...r, rung}))
    return [{id: check.id, rung, title: check.title, ...outcome}]
  } catch (error) {
    // A check that crashes has proven nothing either way: not checked, with the reason.
    return [{id: check.id, rung, title: check.title, status: 'skip', message: `not checked: the check could not run: ${messageOf(error)}`, hint: hintOf(error)}]
  }
}

/** Only a rung whose every check passed passes: a skipped check, or no check at all, proves nothing. */
function rungStatus(checks: CheckResult[]): RungReport['status'] {
  if (checks.some((c) => c.status === 'fail')) return 'fail'
  if (checks.length === 0 || checks.some((c) => c.status === 'skip')) return 'incomplete'
  return 'pass'
}

function describe(result: CheckResult): string {
  const where = result.file ? ` [${result.file}${result.line ? `:${result.line}` : ''}]` : ''
  return `${result.message}${where}`
}

export interface RunRungOptions {
  /** Render progress for people (listr2); false under --json. */
  render: boolean
  /** Told each result as its check finishes (e.g. to print it). */
  onCheck?: (result: CheckResult) => void
}

/** Run the checks of one rung, in order, and judge it. The ladder and `train` both run rungs here. */
export async function runRung(definition: RungDefinition, ctx: CheckContext, options: RunRungOptions): Promise<RungReport> {
  const {rung} = definition
  const results: CheckResult[] = []
  const tasks: ListrTask[] = definition.checks(ctx).map((check) => ({
    title: check.title,
    task: async (_c, task) => {
      const outcome = await runCheck(check, rung, ctx)
      results.push(...outcome)
      for (const result of outcome) options.onCheck?.(result)
      const failed = outcome.filter((r) => r.status === 'fail')
      const skipped = outcome.filter((r) => r.status === 'skip')
      if (failed.length > 0) throw new Error(failed.map(describe).join('\n'))
      if (skipped.length > 0) task.skip(`not checked: ${skipped.map((r) => describe(r).replace(NOT_CHECKED, '')).join('; ')}`)
      else if (outcome.length === 1) task.title = `${check.title}: ${outcome[0].message}`
    },
  }))
  const listr = new Listr([{title: `${rung} rung`, task: (_c, task) => task.newListr(tasks, {concurrent: false, exitOnError: false})}], {
    renderer: options.render ? 'default' : 'silent',
    fallbackRenderer: 'simple',
    exitOnError: false,
    collectErrors: false,
    rendererOptions: {collapseSubtasks: false, showErrorMessage: true},
    registerSignalListeners: false,
  } as any)
  await listr.run().catch(() => undefined)
  return {rung, status: rungStatus(results), checks: results}
}

/**
 * Climb the ladder up to `level`. Every rung below it runs first; the climb stops at the
 * first rung that fails or could not be fully checked ("skip" is never a pass).
 */
export async function runLadder(definitions: RungDefinition[], ctx: CheckContext, options: RunLadderOptions): Promise<LadderReport> {
  const top = RUNGS.indexOf(options.level)
  const wanted = options.only ? [options.level] : RUNGS.slice(0, top + 1)
  const reports: RungReport[] = []
  let stopped = false

  for (const rung of wanted) {
    const definition = definitions.find((d) => d.rung === rung)
    if (stopped || !definition) {
      reports.push({rung, status: 'not-run', checks: []})
      stopped = true
      continue
    }
    const report = await runRung(definition, ctx, {render: options.render})
    reports.push(report)
    if (report.status !== 'pass') stopped = true
  }

  const failed = reports.find((r) => r.status !== 'pass')
  return {
    recipe: ctx.target.id,
    dir: ctx.target.dir,
    level: options.level,
    climbed: !options.only,
    status: failed ? 'fail' : 'pass',
    stoppedAt: failed?.rung ?? null,
    smoke: ctx.options.smoke || (ctx.target.contract?.data.smoke ?? false),
    rungs: reports,
  }
}
