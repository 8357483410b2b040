import {usageError} from '../errors.js'
import {RECIPE_ID_PATTERN} from './schema.js'

/** Recipe ids become folder, container and label names: a strict alphabet, no path separators. */
/** Container, image and Ray names are built from it; longer ids make them unwieldy or too long. */
export const MAX_RECIPE_ID_LENGTH = 48

export function assertRecipeId(id: string): void {
  if (!new RegExp(RECIPE_ID_PATTERN).test(id) || id.length > MAX_RECIPE_ID_LENGTH) {
    throw usageError(`invalid recipe id "${id}"`, `Use at most ${MAX_RECIPE_ID_LENGTH} lowercase letters, digits and hyphens, starting with a letter or digit (e.g. calendar-v2).`)
  }
}
