import {promises as fsp} from 'node:fs'
import path from 'node:path'

import {ExitCode, GymError} from '../errors.js'
import {RUNG_DEFINITIONS} from './rungs.js'
import {runLadder} from './runner.js'
import {resolveRecipe} from './target.js'
import type {LadderOptions, LadderReport, Rung} from './types.js'
import {Scratch} from './scratch-store.js'

export interface VerifyOptions extends LadderOptions {
  relaxRoot: string
  recipe: string
  level: Rung
  render: boolean
  /** Check `level` alone instead of climbing to it. */
  only?: boolean
}

/** Resolve the recipe and climb the ladder up to `level`. */
export async function verifyRecipe(o: VerifyOptions): Promise<LadderReport> {
  if (o.gymRoot !== undefined && !(await fsp.stat(o.gymRoot).catch(() => undefined))?.isDirectory()) {
    throw new GymError(`the Gym root ${path.resolve(o.gymRoot)} is not a directory`, {
      code: 'E_GYM_ROOT',
      exit: ExitCode.usage,
      hint: 'Point --gym-root (or GYMRECIPE_GYM_ROOT) at a checkout of NVIDIA-NeMo/Gym.',
      location: {field: '--gym-root'},
    })
  }
  const target = await resolveRecipe(o.relaxRoot, o.recipe)
  return runLadder(RUNG_DEFINITIONS, {target, options: o, scratch: new Scratch()}, {render: o.render, level: o.level, only: o.only})
}
