/**
 * `gymrecipe adopt`: record the contract a hand-written recipe actually uses in recipe.yaml, read
 * the way the static rung reads it — the launcher's graph overrides checked against the Gym
 * config, its ports and Gateway spec, the training arrays, the data file and split, the service
 * container. What cannot be read is listed and left for the user to fill (in a draft beside the
 * scripts); it is never guessed. `--fill-from <built-in>` fills it on request, and says so.
 */
import {promises as fsp} from 'node:fs'
import path from 'node:path'

import {loadBuiltin} from '../../contract/builtin.js'
import {assertGymRoot} from '../../contract/gym-config/paths.js'
import {contractProblems} from '../../contract/load.js'
import {ARCHETYPES, recipeFileNames, type RecipeContract, type RecipeFileNames} from '../../contract/types.js'
import {ExitCode, GymError, messageOf} from '../../errors.js'
import {checkContext, recipeFiles, scriptEnv, type CheckContext} from '../../ladder/index.js'
import {launcherRole, type RecipeFiles} from '../../recipe/files.js'
import type {RecipeTarget} from '../../recipe/types.js'
import {assignments, resolveWord} from '../../recipe/shell.js'
import {resolveRecipe} from '../../recipe/target.js'
import {writeFileAtomic} from '../../runtime/fs.js'
import {CONTRACT_FILE, serializeContract} from '../../scaffold/plan.js'

import {DRAFT_FILE, TO_FILL, type AdoptOptions, type AdoptResult} from './types.js'
import {type Tree, Reading, valueAt, leafPointers} from './reading.js'
import {generatedFlags, readTraining} from './training.js'
import {registration, lineOf, readService, readContainer} from './service.js'
import {readData, readVerifier, readDescription} from './data-verifier.js'
import {userFills, draftText, inShapeOrder} from './draft.js'

export * from './types.js'

export async function adoptRecipe(o: AdoptOptions): Promise<AdoptResult> {
  if (o.gymRoot) await assertGymRoot(o.gymRoot)
  if (o.fillFrom) await loadBuiltin(o.fillFrom)
  const target = await resolveRecipe(o.relaxRoot, o.recipe, {asHandWritten: true})
  const contractPath = path.join(target.dir, CONTRACT_FILE)
  const draftPath = path.join(target.dir, DRAFT_FILE)
  if (!o.force && (await fsp.stat(contractPath).catch(() => undefined))) {
    throw new GymError(`${contractPath} already records this recipe's contract`, {code: 'E_ALREADY_RECORDED', exit: ExitCode.precondition, hint: 'Regenerate with `gymrecipe new --update`, or pass --force to read the scripts again and replace recipe.yaml.', location: {file: contractPath}})
  }
  const ctx: CheckContext = checkContext(target, {env: o.env, smoke: false})
  const files = await recipeFiles(ctx)
  const r = new Reading()
  const env = await scriptEnv(ctx).catch((error: unknown) => {
    r.notes.push(`env.sh could not be sourced (${messageOf(error)}); values it would set were read from the caller's environment only`)
    return {...(o.env as Record<string, string>)}
  })
  await readScripts(r, target, ctx, files, env, o.gymRoot)
  const {shape, unfilled} = await fillTheRest(r, draftPath, o.fillFrom)

  const tree = structuredClone(r.tree)
  for (const u of unfilled) {
    const keys = u.pointer.split('/').slice(1)
    let at = tree
    for (const key of keys.slice(0, -1)) at = (at[key] ??= {}) as Tree
    at[keys.at(-1)!] = TO_FILL
  }
  const result: AdoptResult = {recipe: target.id, dir: target.dir, file: draftPath, complete: false, dryRun: o.dryRun, read: r.read, filled: r.filled, unfilled, notes: r.notes, contract: inShapeOrder(tree, shape)}
  if (unfilled.length > 0) {
    if (!o.dryRun) await writeFileAtomic(draftPath, draftText(result.contract, unfilled, target.id))
    return result
  }
  const contract = inShapeOrder(r.tree, shape) as unknown as RecipeContract
  const problems = contractProblems(contract, contractPath)
  if (problems.length > 0) {
    result.unfilled = problems.map((p) => ({pointer: p.pointer ?? '/', why: p.message}))
    if (!o.dryRun) await writeFileAtomic(draftPath, draftText(r.tree, result.unfilled, target.id))
    return result
  }
  result.file = contractPath
  result.complete = true
  if (!o.dryRun) {
    await writeFileAtomic(contractPath, serializeContract(contract))
    await fsp.rm(draftPath, {force: true})
  }
  return result
}

/** Every value the recipe's own files say, each with the line it came from. */
async function readScripts(r: Reading, target: RecipeTarget, ctx: CheckContext, files: RecipeFiles, env: Record<string, string>, gymRoot: string | undefined): Promise<void> {
  const readme = files.byRole.readme?.text ?? ''
  r.set('/schema_version', 1, 'the current recipe.yaml schema')
  r.set('/id', target.id, 'the folder name')
  readDescription(r, readme)
  const run = files.byRole.run
  if (run) readTraining(r, run, await generatedFlags())
  if (files.training.length > 1) r.notes.push(`the contract records one training script, ${run?.name}; ${files.training.filter((t) => t !== run).map((t) => t.name).join(', ')} stays as it is and is still checked by the static rung`)
  readData(r, ctx, files.byRole.prepare, files.byRole.env, run)
  const gymLauncher = files.launchers.find((l) => launcherRole(l).startsGym)
  const hostLauncher = files.launchers.find((l) => launcherRole(l).createsContainer)
  await readService(r, gymLauncher, hostLauncher, files.shell, gymRoot, env)
  readContainer(r, hostLauncher, files.shell, readme)
  await readVerifier(r, ctx, env, files.verifiers)
  for (const [name, pointer] of [['NEMO_GYM_CALLBACK_ALLOWED_NETWORKS', '/service/callback_networks'], ['NEMO_GYM_CALLBACK_ALLOWED_HOSTS', '/service/callback_hosts']] as const) {
    const value = env[name]
    const inScript = files.shell.map((f) => ({f, a: assignments(f.lines).find((a) => a.name === name)})).find((x) => x.a)
    const scriptDefault = inScript && resolveWord(inScript.a!.value, inScript.f.lines).value
    if (value !== undefined) r.set(pointer, value.split(',').map((v) => v.trim()).filter(Boolean), `${name} as env.sh sets it`)
    else if (scriptDefault !== undefined) r.set(pointer, scriptDefault.split(',').map((v) => v.trim()).filter(Boolean), `the ${name} default at ${inScript!.f.name}:${inScript!.a!.line}`)
    else r.missing(pointer, `no script, env.sh or caller's environment sets ${name}`)
  }
  const registered = gymLauncher?.name ?? 'the launcher'
  for (const [key, pointer] of [['lease_s', '/gateway/lease_s'], ['callback_protocol', '/gateway/callback_protocol']] as const) {
    const value = gymLauncher ? registration(gymLauncher.text, key) : undefined
    if (value !== undefined) r.set(pointer, key === 'lease_s' ? Number(value) : value, lineOf(gymLauncher!, new RegExp(`["']${key}["']`)))
    else r.missing(pointer, `the Gateway registration in ${registered} does not state ${key} (the Gateway's default applies)`)
  }
  r.missing('/gateway/readiness', `the Gateway registration in ${registered} lists no readiness URLs gymrecipe can map to agent/resource`)
  r.missing('/gateway/cleanup', `the Gateway registration in ${registered} names no cleanup route`)

  // The file names it has, where they differ from the generated ones.
  const readSoFar = r.tree as Partial<RecipeContract>
  if (readSoFar.training?.model?.slug && readSoFar.training.gpus) {
    const generated = recipeFileNames({id: target.id, training: readSoFar.training as RecipeContract['training']})
    const own: Partial<RecipeFileNames> = {}
    for (const role of Object.keys(generated) as Array<keyof RecipeFileNames>) {
      const actual = target.files[role]
      if (actual && actual !== generated[role]) own[role] = actual
    }
    if (Object.keys(own).length > 0) r.set('/files', own, 'the file names in the folder')
  }
}

/** What the files do not say: yours first (the draft), then --fill-from; what is left is listed. */
async function fillTheRest(r: Reading, draftPath: string, fillFrom: string | undefined): Promise<{shape: unknown; unfilled: Array<{pointer: string; why: string}>}> {
  const shape = await loadBuiltin(fillFrom ?? 'calendar')
  const pointers = leafPointers(shape).filter((p) => p !== '/service/error_probe' && p !== '/verifier/failure_reward')
  const fills = await userFills(draftPath)
  for (const p of pointers) {
    const mine = valueAt(fills, p)
    if (!r.has(p) && mine !== undefined && mine !== TO_FILL) r.fill(p, mine, `you, in ${DRAFT_FILE}`)
  }
  r.missing('/archetype', `gymrecipe's archetypes (${ARCHETYPES.join(', ')}) are a choice, not something the scripts say`)
  if (fillFrom) {
    for (const p of pointers) if (!r.has(p) && valueAt(shape, p) !== undefined) r.fill(p, valueAt(shape, p), `the built-in ${fillFrom} (--fill-from)`)
  }
  for (const p of pointers) if (!r.has(p)) r.missing(p, r.why.get(p) ?? 'not read from the scripts')
  const unfilled = pointers.filter((p) => !r.has(p)).map((p) => ({pointer: p, why: r.why.get(p) ?? 'not read from the scripts'}))
  return {shape, unfilled}
}
