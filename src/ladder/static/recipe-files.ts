import {type RecipeFiles, readRecipeFiles} from '../../recipe/files.js'
import {once, ScratchKey} from '../scratch.js'
import type {CheckContext} from '../types.js'

const FILES = new ScratchKey<Promise<RecipeFiles>>('static.files')

/** The recipe's files, read once per run of the ladder. */
export function recipeFiles(ctx: CheckContext): Promise<RecipeFiles> {
  return once(ctx, FILES, () => readRecipeFiles(ctx.target))
}
