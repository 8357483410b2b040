import {Listr, type ListrTask} from 'listr2'

import {checkLines, checkText, rungLine} from './render.js'
import type {Check, CheckContext, CheckResult, LadderReport, Rung, RungDefinition, RungReport} from './types.js'
import {RUNGS} from './types.js'
import {recordVerdict} from './state.js'
import {hintOf, messageOf} from '../errors.js'
import {redactorFor} from '../redact.js'
import {terminalSafe} from '../terminal-text.js'


/**
 * Where a climb's lines go: the command's printer (redacted, silent under --json) and its
 * warnings (printed for people, gathered into the --json envelope). Absent: nothing is printed.
 */
export interface LadderPrinter {
  /** Draw each check live in its place (listr2): only on a terminal, never under --json. */
  live: boolean
  line(text: string): void
  warn(text: string): void
}

export interface RunLadderOptions {
  printer?: LadderPrinter
  /** Climb from this rung (default: static). Lower rungs are still required: they run first. */
  level: Rung
  /** Check this one rung alone against what is deployed now; the ladder is not climbed. */
  only?: boolean
}

async function runCheck(check: Check, rung: Rung, ctx: CheckContext): Promise<CheckResult[]> {
  let results: CheckResult[]
  try {
    const outcome = await check.run(ctx)
    results = Array.isArray(outcome) ? outcome.map((r) => ({...r, rung})) : [{id: check.id, rung, title: check.title, ...outcome}]
  } catch (error) {
    // A check that crashes has proven nothing either way: not checked, with the reason.
    results = [{id: check.id, rung, title: check.title, status: 'skip', message: `not checked: the check could not run: ${messageOf(error)}`, hint: hintOf(error)}]
  }
  // Messages quote inputs (files, services, logs) and are drawn on the terminal as they come, by
  // the live renderer too: secrets and control characters are taken out here, once.
  const redact = redactorFor(ctx.options.env)
  const clean = (text: string) => terminalSafe(redact.text(text))
  return results.map((r) => ({...r, message: clean(r.message), ...(r.hint === undefined ? {} : {hint: clean(r.hint)}), ...(r.file === undefined ? {} : {file: clean(r.file)}), ...(r.evidence === undefined ? {} : {evidence: redact.value(r.evidence)})}))
}

/** Only a rung whose every check passed passes: a skipped check, or no check at all, proves nothing. */
function rungStatus(checks: CheckResult[]): RungReport['status'] {
  if (checks.some((c) => c.status === 'fail')) return 'fail'
  if (checks.length === 0 || checks.some((c) => c.status === 'skip')) return 'incomplete'
  return 'pass'
}

export interface RunRungOptions {
  /** Where the rung's lines go: live on a terminal, one plain line per check otherwise; absent: silent. */
  printer?: LadderPrinter
  /** Told each result as its check finishes (e.g. to print it). */
  onCheck?: (result: CheckResult) => void
}

/**
 * Run the checks of one rung, in order, judge it, and record the verdict with its inputs. The
 * ladder and `train` both run rungs here.
 */
export async function runRung(definition: RungDefinition, ctx: CheckContext, options: RunRungOptions): Promise<RungReport> {
  const printer = options.printer
  const report = printer?.live ? await runLive(definition, ctx, printer, options) : await runPlain(definition, ctx, options)
  await recordVerdict(ctx, report).catch((error: unknown) => {
    // The verdict stands; only its later reading (handoff, stale rungs) is lost.
    printer?.warn(`warning: the ${report.rung} verdict could not be recorded: ${messageOf(error)}`)
  })
  return report
}

async function runPlain(definition: RungDefinition, ctx: CheckContext, options: RunRungOptions): Promise<RungReport> {
  const say = options.printer ? (line: string) => options.printer!.line(line) : undefined
  say?.(`${definition.rung} rung`)
  const results: CheckResult[] = []
  for (const check of definition.checks(ctx)) {
    for (const result of await runCheck(check, definition.rung, ctx)) {
      results.push(result)
      options.onCheck?.(result)
      for (const line of checkLines(result, '  ')) say?.(line)
    }
  }
  const report: RungReport = {rung: definition.rung, status: rungStatus(results), checks: results}
  say?.(rungLine(report.rung, report.status))
  return report
}

/** On a terminal: listr2 shows each check running, then its mark and message in its place; the rung's verdict follows. */
async function runLive(definition: RungDefinition, ctx: CheckContext, printer: LadderPrinter, options: RunRungOptions): Promise<RungReport> {
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
      if (failed.length > 0) throw new Error(failed.map(checkText).join('\n'))
      if (skipped.length > 0) task.skip(skipped.map(checkText).join('\n'))
      else task.title = outcome.map(checkText).join('\n')
    },
  }))
  printer.line(`${rung} rung`)
  const listr = new Listr(tasks, {
    renderer: 'default',
    concurrent: false,
    exitOnError: false,
    collectErrors: false,
    rendererOptions: {collapseSubtasks: false, collapseSkips: true, suffixSkips: false, showSkipMessage: true, collapseErrors: true, showErrorMessage: true},
    registerSignalListeners: false,
  } as ConstructorParameters<typeof Listr>[1])
  await listr.run().catch(() => undefined)
  const report: RungReport = {rung, status: rungStatus(results), checks: results}
  printer.line(rungLine(rung, report.status))
  return report
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
    const report = await runRung(definition, ctx, {printer: options.printer})
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
