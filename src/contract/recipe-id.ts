import {usageError} from '../errors.js'
import {RECIPE_ID_PATTERN} from './schema.js'

/** Recipe ids become folder, container and label names: a strict alphabet, no path separators. */
export function assertRecipeId(id: string): void {
  if (!new RegExp(RECIPE_ID_PATTERN).test(id) || id.length > 48) {
    throw usageError(`invalid recipe id "${id}"`, 'Use lowercase letters, digits and hyphens, starting with a letter or digit (e.g. calendar-v2).')
  }
}
