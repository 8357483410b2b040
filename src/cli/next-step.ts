/**
 * The exact command to run next, with the paths just used, printed when a command succeeds
 * (and, after a failed climb, the command that re-checks once the listed problems are fixed).
 */
import path from 'node:path'

import {type LadderReport, RUNG_DEFINITIONS} from '../ladder/index.js'
import {shellWord} from '../shell-words.js'


export function relaxRootWord(relaxRoot: string): string {
  return shellWord(path.resolve(relaxRoot))
}

/** `next: …` after a climb (verify, prepare, start), or undefined when the recipe is proven end to end. */
export function nextAfterLadder(report: LadderReport, relaxRoot: string): string | undefined {
  const root = relaxRootWord(relaxRoot)
  const recipe = shellWord(report.recipe)
  if (report.status !== 'pass') return `next: fix what is listed above, then re-check with gymrecipe verify ${recipe} --level ${report.level} --relax-root ${root}`
  if (!report.climbed) return `next: climb the whole ladder with gymrecipe verify ${recipe} --level ${report.level} --relax-root ${root}`
  const next = RUNG_DEFINITIONS.find((d) => d.rung === report.level)?.next?.(recipe, root)
  return next ? `next: ${next}` : undefined
}
