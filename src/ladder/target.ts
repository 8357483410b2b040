import {promises as fsp} from 'node:fs'
import path from 'node:path'

import {loadContractFile} from '../contract/load.js'
import {assertRecipeId} from '../contract/recipe-id.js'
import {recipeFileNames, type RecipeFileNames} from '../contract/types.js'
import {ExitCode, GymError} from '../errors.js'
import {recipeDir} from '../scaffold/checkout.js'
import type {RecipeTarget} from './types.js'

/** Find the seven files of a hand-written recipe by their naming rules. */
function discoverFiles(entries: string[]): Partial<RecipeFileNames> {
  const pick = (re: RegExp) => entries.filter((e) => re.test(e)).sort()[0]
  return {
    env: entries.includes('env.sh') ? 'env.sh' : undefined,
    prepare: pick(/^prepare_.+\.sh$/),
    start: pick(/^start_.+_gym\.sh$/),
    run: pick(/^run-.+-nemo-gym-.+\.sh$/),
    verify: pick(/^verify_(?!.*_trial\.py$).+\.py$/),
    readme: entries.includes('README.md') ? 'README.md' : undefined,
    pitfall: entries.includes('PITFAIL.md') ? 'PITFAIL.md' : undefined,
  }
}

/** Locate a recipe folder and its contract (optional) inside a Relax checkout. */
export async function resolveRecipe(relaxRoot: string, id: string): Promise<RecipeTarget> {
  assertRecipeId(id)
  const root = path.resolve(relaxRoot)
  const dir = recipeDir(root, id)
  const entries = await fsp.readdir(dir).catch((error: any) => {
    throw new GymError(`recipe folder ${dir} not found (${error?.code ?? error?.message})`, {
      code: 'E_RECIPE_NOT_FOUND',
      exit: ExitCode.usage,
      hint: `Create it with \`gymrecipe new ${id}\`, or pass --relax-root pointing at the Relax checkout that holds it.`,
    })
  })
  const contract = entries.includes('recipe.yaml') ? await loadContractFile(path.join(dir, 'recipe.yaml')) : null
  if (contract && contract.id !== id) {
    throw new GymError(`${dir}/recipe.yaml records id "${contract.id}" but the folder is "${id}"`, {
      code: 'E_CONTRACT_INVALID',
      exit: ExitCode.usage,
      hint: 'Rename the folder or fix the id in recipe.yaml.',
      location: {file: path.join(dir, 'recipe.yaml'), pointer: '/id'},
    })
  }
  const files = contract ? recipeFileNames(contract) : discoverFiles(entries)
  return {id, relaxRoot: root, dir, contract, files}
}
