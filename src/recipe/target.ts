import {promises as fsp} from 'node:fs'
import path from 'node:path'

import {loadContractFile} from '../contract/load.js'
import {assertRecipeId} from '../contract/recipe-id.js'
import {recipeFileNames, type RecipeFileNames} from '../contract/types.js'
import {codeOf, fromSystemError, GymError, isSystemError, messageOf, ExitCode} from '../errors.js'
import {recipeDir} from '../contract/checkout.js'
import type {RecipeLayout, RecipeTarget} from './types.js'

const TRAINING = /^run-.+\.sh$/
const LAUNCHER = /^(?:start|submit)_.+\.sh$/
const PREPARE = /^prepare_.+\.sh$/
const VERIFIER = /^verify_.+\.py$/

/** Find the seven files of a hand-written recipe by the names Relax uses. */
function discoverFiles(entries: string[]): Partial<RecipeFileNames> {
  const pick = (...patterns: RegExp[]) => patterns.map((re) => entries.filter((e) => re.test(e)).sort()[0]).find(Boolean)
  return {
    env: entries.includes('env.sh') ? 'env.sh' : undefined,
    prepare: pick(PREPARE),
    // The in-container launcher (start_<recipe>_gym.sh) is the one that starts Gym.
    start: pick(/^start_.+_gym\.sh$/, /^start_.+\.sh$/),
    run: pick(/^run-.+-nemo-gym-.+\.sh$/, TRAINING),
    verify: pick(/^verify_(?!.*_trial\.py$).+\.py$/, VERIFIER),
    readme: entries.includes('README.md') ? 'README.md' : undefined,
    pitfall: entries.includes('PITFAIL.md') ? 'PITFAIL.md' : undefined,
  }
}

/** Every script of the folder by kind; the contract's own names are always among them. */
export function discoverLayout(entries: string[], files: Partial<RecipeFileNames>): RecipeLayout {
  const all = (re: RegExp, own: string | undefined) => [...new Set([...(own ? [own] : []), ...entries.filter((e) => re.test(e)).sort()])]
  return {
    training: all(TRAINING, files.run),
    launchers: all(LAUNCHER, files.start),
    prepare: all(PREPARE, files.prepare),
    verifiers: all(VERIFIER, files.verify),
    shell: [...new Set([...Object.values(files).filter((n): n is string => !!n && n.endsWith('.sh')), ...entries.filter((e) => e.endsWith('.sh')).sort()])],
  }
}

/** A recipe file that is a pipe, a device or a folder would hang or mislead every reader: one line, exit 2. */
async function refuseNonFiles(dir: string, names: string[]): Promise<void> {
  for (const name of names) {
    const stat = await fsp.stat(path.join(dir, name)).catch(() => undefined)
    if (stat && !stat.isFile()) {
      const kind = stat.isFIFO() ? 'a pipe (FIFO)' : stat.isDirectory() ? 'a folder' : stat.isCharacterDevice() || stat.isBlockDevice() ? 'a device' : 'not a regular file'
      throw new GymError(`${name} is ${kind}, not a file`, {
        code: 'E_INPUT_NOT_FILE',
        exit: ExitCode.usage,
        hint: `Replace it with the regular file it should be (\`gymrecipe new ${path.basename(dir)} --update\` regenerates the generated ones).`,
        location: {file: path.join(dir, name)},
      })
    }
  }
}

/**
 * Locate a recipe folder and its contract (optional) inside a Relax checkout. `asHandWritten`
 * ignores recipe.yaml and finds the files by the names Relax uses (for `adopt`).
 */
export async function resolveRecipe(relaxRoot: string, id: string, options: {asHandWritten?: boolean} = {}): Promise<RecipeTarget> {
  assertRecipeId(id)
  const root = path.resolve(relaxRoot)
  const dir = recipeDir(root, id)
  const entries = await fsp.readdir(dir).catch((error: unknown) => {
    // A folder that exists but may not be read is the machine refusing (exit 1), not a wrong name.
    if (isSystemError(error) && codeOf(error) !== 'ENOENT' && codeOf(error) !== 'ENOTDIR') throw fromSystemError(error)
    throw new GymError(`recipe folder ${dir} not found (${codeOf(error) ?? messageOf(error)})`, {
      code: 'E_RECIPE_NOT_FOUND',
      exit: ExitCode.usage,
      hint: `Create it with \`gymrecipe new ${id}\`, or pass --relax-root pointing at the Relax checkout that holds it.`,
    })
  })
  const contract = entries.includes('recipe.yaml') && !options.asHandWritten ? await loadContractFile(path.join(dir, 'recipe.yaml')) : null
  if (contract && contract.id !== id) {
    throw new GymError(`${dir}/recipe.yaml records id "${contract.id}" but the folder is "${id}"`, {
      code: 'E_CONTRACT_INVALID',
      exit: ExitCode.usage,
      hint: 'Rename the folder or fix the id in recipe.yaml.',
      location: {file: path.join(dir, 'recipe.yaml'), pointer: '/id'},
    })
  }
  const files = contract ? recipeFileNames(contract) : discoverFiles(entries)
  await refuseNonFiles(dir, Object.values(files).filter((n): n is string => !!n && entries.includes(n)))
  return {id, relaxRoot: root, dir, contract, files, layout: discoverLayout(entries, files)}
}
