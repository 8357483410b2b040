/**
 * `new --update`: a three-way merge of the recipe as you have it, as gymrecipe last generated it
 * (kept in .gymrecipe/last-generated/), and as gymrecipe generates it now. The contract is merged
 * first and the files are rendered from the merged contract, so an edit to recipe.yaml and a
 * changed option both reach the scripts; then each file is merged with your edits to it.
 */
import path from 'node:path'
import {parse as parseYaml, stringify as stringifyYaml} from 'yaml'

import {contractError, contractProblems} from '../contract/load.js'
import type {RecipeContract} from '../contract/types.js'
import {ExitCode, GymError, messageOf} from '../errors.js'
import {MERGE_LABELS, mergeThreeWay} from '../runtime/merge.js'
import {BASE_DIR, CONTRACT_FILE, diffOf, type PlannedFile, readIfExists, type RecipePlan, refuseLinkedFolder, serializeContract, withFileHashes, withoutGenerated} from './plan.js'
import {carryRegions, withoutRegionBodies} from './regions.js'
import {renderRecipe, sha256} from './render.js'
import type {RenderDeployment} from './view.js'

/** The reason of a conflict that has no markers: the file is gone, and there is a change to it. */
export const DELETED_AND_CHANGED = 'you deleted it, and gymrecipe has changed it since; restore it from the diff or leave it deleted'

export interface UpdatePlan {
  plan: RecipePlan
  /** The contract the files were rendered from (yours merged with what changed). */
  contract: RecipeContract
  notes: string[]
}

export interface RecordedContract {
  /** recipe.yaml as it is on disk. */
  text: string
  /** Its value, as far as it parses (an update does not require it to be valid yet). */
  contract: Partial<RecipeContract>
}

/** The recorded contract of a recipe folder, which an update starts from; refused when there is none. */
export async function recordedContract(dir: string): Promise<RecordedContract> {
  const file = path.join(dir, CONTRACT_FILE)
  const text = await readIfExists(file)
  let value: unknown
  try {
    value = text === undefined ? undefined : parseYaml(text)
  } catch (error) {
    throw new GymError(`${file} is not valid YAML: ${messageOf(error).split('\n')[0]}`, {
      code: 'E_CONTRACT_INVALID',
      exit: ExitCode.usage,
      hint: 'Resolve any conflict markers (<<<<<<< yours … >>>>>>> generated now) in recipe.yaml, then rerun.',
      location: {file},
    })
  }
  if (text === undefined || !value || typeof value !== 'object' || Array.isArray(value)) {
    throw new GymError(`${dir} has no recipe.yaml to update`, {
      code: 'E_NOTHING_TO_UPDATE',
      exit: ExitCode.usage,
      hint: 'Generate it without --update, or record a hand-written recipe first with `gymrecipe adopt`.',
    })
  }
  return {text, contract: value as Partial<RecipeContract>}
}

const normalized = (contract: unknown) => stringifyYaml(withoutGenerated(contract), {lineWidth: 0})

/** Yours, merged with what changed between the last generation and now. */
async function mergeContracts(dir: string, ours: Partial<RecipeContract>, fresh: RecipeContract, env: NodeJS.ProcessEnv, notes: string[]): Promise<{contract?: RecipeContract; conflictText?: string; yoursEdited: boolean}> {
  const baseText = await readIfExists(path.join(dir, BASE_DIR, CONTRACT_FILE))
  const o = normalized(ours)
  const t = normalized(fresh)
  let merged: string
  let yoursEdited = false
  if (o === t) merged = o
  else if (baseText === undefined) {
    // No base: what is recorded is the contract; nothing can tell a change of yours from ours.
    notes.push(`no base is kept (${BASE_DIR}/${CONTRACT_FILE}): recipe.yaml is kept as it is; what the options would change in it is not applied`)
    merged = o
    yoursEdited = true
  } else {
    const b = normalized(parseYaml(baseText))
    yoursEdited = b !== o
    if (b === o) merged = t
    else if (b === t) merged = o
    else {
      const result = await mergeThreeWay(o, b, t, env)
      if (result.conflicts > 0) return {conflictText: result.text, yoursEdited}
      merged = result.text
    }
  }
  const contract = {...(parseYaml(merged) as RecipeContract), generated: fresh.generated}
  const file = path.join(dir, CONTRACT_FILE)
  const problems = contractProblems(contract, file)
  if (problems.length > 0) throw contractError(file, problems)
  return {contract, yoursEdited}
}

function hasConflictMarkers(text: string): boolean {
  return new RegExp(`^<{7} ${MERGE_LABELS.ours}$`, 'm').test(text) && new RegExp(`^>{7} ${MERGE_LABELS.theirs}$`, 'm').test(text)
}

const sameGenerated = (a: string, b: string) => withoutRegionBodies(a) === withoutRegionBodies(b)

export async function planUpdate(dir: string, recorded: RecordedContract, fresh: RecipeContract, env: NodeJS.ProcessEnv, deployment: RenderDeployment = {}): Promise<UpdatePlan> {
  await refuseLinkedFolder(dir)
  const notes: string[] = []
  const {text: oursText, contract: ours} = recorded
  const {contract, conflictText, yoursEdited} = await mergeContracts(dir, ours, fresh, env, notes)
  if (!contract) {
    // The files cannot be rendered from a contract with conflicts: only recipe.yaml is written.
    const text = serializeContract({...fresh, generated: ours.generated}).split('\n').slice(0, 2).join('\n') + '\n' + conflictText
    const file: PlannedFile = {name: CONTRACT_FILE, action: 'conflict', reason: 'you and gymrecipe changed the same contract lines; the files were not regenerated', content: text, executable: false, diff: diffOf(CONTRACT_FILE, oursText, text), read: oursText}
    return {plan: {dir, files: [file], conflicts: [CONTRACT_FILE], base: [], writeConflicts: true}, contract: fresh, notes}
  }

  const rendered = await renderRecipe(contract, deployment)
  const recordedHashes = ours.generated?.files ?? {}
  const files: PlannedFile[] = []
  const base: RecipePlan['base'] = []
  for (const r of rendered) {
    const onDisk = await readIfExists(path.join(dir, r.name))
    const kept = await readIfExists(path.join(dir, BASE_DIR, r.name))
    // A base that is not what recipe.yaml says was generated cannot tell your edits apart.
    const lastGenerated = kept !== undefined && recordedHashes[r.name] === sha256(withoutRegionBodies(kept)) ? kept : undefined
    if (kept !== undefined && lastGenerated === undefined) notes.push(`${BASE_DIR}/${r.name} does not match the hash recorded in recipe.yaml; ${r.name} is merged as if no base were kept`)
    const theirs = onDisk === undefined ? r.content : carryRegions(onDisk, r.content)
    base.push({name: r.name, content: theirs})
    const entry = {name: r.name, executable: r.executable, read: onDisk ?? null}
    if (onDisk === undefined) {
      if (lastGenerated === undefined) files.push({...entry, action: 'create', reason: 'new file', content: theirs, diff: ''})
      else if (sameGenerated(lastGenerated, theirs)) files.push({...entry, action: 'deleted', reason: 'you deleted it; it stays deleted', content: '', diff: ''})
      else files.push({...entry, action: 'conflict', reason: DELETED_AND_CHANGED, content: '', diff: diffOf(r.name, lastGenerated, theirs)})
      continue
    }
    if (hasConflictMarkers(onDisk)) {
      // Merging again would bury them: they are resolved first.
      files.push({...entry, action: 'conflict', reason: 'conflict markers from an earlier update are still in it; resolve them first', content: onDisk, diff: ''})
      continue
    }
    if (onDisk === theirs) files.push({...entry, action: 'unchanged', reason: 'already up to date', content: theirs, diff: ''})
    else if (lastGenerated !== undefined && sameGenerated(onDisk, lastGenerated)) files.push({...entry, action: 'update', reason: 'regenerated; not edited since the last generation', content: theirs, diff: diffOf(r.name, onDisk, theirs)})
    else if (lastGenerated !== undefined && sameGenerated(lastGenerated, theirs)) files.push({...entry, action: 'unchanged', reason: 'your edits kept; gymrecipe generates nothing new for it', content: onDisk, diff: ''})
    else {
      const merged = await mergeThreeWay(onDisk, lastGenerated ?? '', theirs, env)
      const why = lastGenerated === undefined ? ' (no base kept: every difference is a conflict)' : ''
      files.push(
        merged.conflicts === 0
          ? {...entry, action: 'merge', reason: 'your edits and the regenerated changes, merged', content: merged.text, diff: diffOf(r.name, onDisk, merged.text)}
          : {...entry, action: 'conflict', reason: `${merged.conflicts} conflicting change(s) marked <<<<<<< yours … >>>>>>> generated now${why}`, content: merged.text, diff: diffOf(r.name, onDisk, merged.text)},
      )
    }
  }
  for (const name of Object.keys(recordedHashes)) {
    if (!rendered.some((r) => r.name === name)) notes.push(`${name} is no longer generated (a file name changed); it was left in place`)
  }

  const contractText = serializeContract(withFileHashes(contract, rendered))
  const contractEdited = yoursEdited
  files.push({
    name: CONTRACT_FILE,
    executable: false,
    read: oursText,
    content: contractText,
    action: oursText === contractText ? 'unchanged' : contractEdited ? 'merge' : 'update',
    reason: oursText === contractText ? 'already up to date' : contractEdited ? 'your contract edits kept, with what changed since the last generation' : 'contract and file hashes refreshed',
    diff: oursText === contractText ? '' : diffOf(CONTRACT_FILE, oursText, contractText),
  })
  base.push({name: CONTRACT_FILE, content: serializeContract(withFileHashes(fresh, rendered))})
  return {plan: {dir, files, conflicts: files.filter((f) => f.action === 'conflict').map((f) => f.name), base, writeConflicts: true}, contract, notes}
}
