import {checkLines, type LadderReport} from '../ladder/index.js'

/** The summary after a climb: each rung's verdict, then what did not pass, where, and what to do. */
export function summarizeLadder(report: LadderReport): string[] {
  const lines: string[] = []
  if (report.smoke) lines.push('SMOKE RUN: the data is not a training split; nothing here proves a real training run.')
  // Each rung's verdict was shown as it finished; the summary gathers what needs attention.
  const attention = report.rungs.flatMap((rung) => rung.checks.filter((c) => c.status !== 'pass'))
  if (attention.length > 0) lines.push('', 'what did not pass:', ...attention.flatMap((check) => checkLines(check, '  ')))
  const notRun = report.rungs.filter((rung) => rung.status === 'not-run').map((rung) => rung.rung)
  if (notRun.length > 0) lines.push(`not run, because a lower rung did not pass: ${notRun.join(', ')}`)
  if (!report.climbed) {
    lines.push(
      report.status === 'pass'
        ? `${report.recipe}: the ${report.level} rung passed on its own; the ladder was not climbed, so the recipe is not verified`
        : `${report.recipe}: the ${report.level} rung, checked on its own, did not pass`,
    )
    return lines
  }
  lines.push(report.status === 'pass' ? `${report.recipe}: every rung up to ${report.level} passed` : `${report.recipe}: stopped at the ${report.stoppedAt} rung`)
  return lines
}

/** Why a climb did not pass, for the --json envelope: the first rung and check that did not pass. */
export function ladderFailure(report: LadderReport): {code: string; message: string; hint?: string} {
  const rung = report.rungs.find((r) => r.status !== 'pass' && r.status !== 'not-run')
  const check = rung?.checks.find((c) => c.status === 'fail') ?? rung?.checks.find((c) => c.status !== 'pass')
  const where = rung ? `the ${rung.rung} rung ${rung.status === 'fail' ? 'failed' : 'could not be fully checked'}` : `${report.recipe} did not pass`
  return {
    code: rung?.status === 'fail' ? 'E_RUNG_FAILED' : 'E_NOT_PROVEN',
    message: check ? `${where}: ${check.title}: ${check.message}` : where,
    hint: check?.hint,
  }
}
