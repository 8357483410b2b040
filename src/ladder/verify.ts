import {assertGymRoot} from '../contract/gym-config/paths.js'
import {RUNG_DEFINITIONS} from './rungs.js'
import {type LadderPrinter, runLadder} from './runner.js'
import {resolveRecipe} from '../recipe/target.js'
import type {LadderOptions, LadderReport, Rung} from './types.js'
import {checkContext} from './context.js'

export interface VerifyOptions extends LadderOptions {
  relaxRoot: string
  recipe: string
  level: Rung
  /** Where the climb's lines go (absent: nothing printed). */
  printer?: LadderPrinter
  /** Check `level` alone instead of climbing to it. */
  only?: boolean
}

/** Resolve the recipe and climb the ladder up to `level`. */
export async function verifyRecipe(o: VerifyOptions): Promise<LadderReport> {
  await assertGymRoot(o.gymRoot)
  const target = await resolveRecipe(o.relaxRoot, o.recipe)
  return runLadder(RUNG_DEFINITIONS, checkContext(target, o), {printer: o.printer, level: o.level, only: o.only})
}
