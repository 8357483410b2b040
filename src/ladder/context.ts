import type {RecipeTarget} from '../recipe/types.js'
import {Scratch} from './scratch-store.js'
import type {CheckContext, LadderOptions, StepHandoff} from './types.js'

/** The context every check of one climb shares: the recipe, the options, and what a step hands over. */
export function checkContext(target: RecipeTarget, options: LadderOptions, handoff?: StepHandoff): CheckContext {
  return {target, options, scratch: new Scratch(), ...(handoff ? {handoff} : {})}
}
