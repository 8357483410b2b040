import type {LadderReport} from '../ladder/types.js'

/** A plain summary after the live listr2 output: what failed, where, and what to do. */
export function summarizeLadder(report: LadderReport): string[] {
  const lines: string[] = []
  if (report.smoke) lines.push('SMOKE RUN: the data is not a training split; nothing here proves a real training run.')
  for (const rung of report.rungs) {
    if (rung.status === 'not-run') {
      lines.push(`- ${rung.rung}: not run (a lower rung did not pass)`)
      continue
    }
    lines.push(`${rung.status === 'pass' ? '✔' : '✖'} ${rung.rung}: ${rung.status}`)
    for (const check of rung.checks.filter((c) => c.status !== 'pass')) {
      const where = check.file ? ` (${check.file}${check.line ? `:${check.line}` : ''})` : ''
      lines.push(`    ${check.status === 'fail' ? '✖' : '↓ not checked:'} ${check.title}: ${check.status === 'fail' ? check.message : check.message.replace(/^not checked: /, '')}${where}`)
      if (check.hint) lines.push(`      hint: ${check.hint}`)
    }
  }
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
