/**
 * What the ladder last proved about a recipe, rung by rung, and against which inputs, kept outside
 * the Relax checkout under ${XDG_STATE_HOME:-$HOME/.local/state}/gymrecipe/ladder/. A verdict is
 * only worth what its inputs are: readers compare them with the inputs of now (see ladder/state.ts).
 */
import path from 'node:path'

import {writeFileAtomic} from './fs.js'
import {readRecipeState, recipeStatePath} from './state-paths.js'

/** The inputs a rung's verdict depended on; a key is present only for rungs that read it. */
export interface RungInputs {
  /** Digest of the recipe's scripts, verifier and recipe.yaml (documentation excluded). */
  files?: string
  /** The data file as it was: absolute path, size, modification time. */
  data?: {path: string; size: number; mtimeMs: number} | null
  /** The image the service container ran. */
  imageId?: string | null
  /** The Gateway process the service rung talked to (/readyz service_epoch). */
  serviceEpoch?: string | null
  /** The Ray submission the training rung judged. */
  submissionId?: string | null
}

export interface RungRecord {
  status: 'pass' | 'fail' | 'incomplete'
  at: string
  inputs: RungInputs
}

/** The last check that failed, for drafting a PITFAIL entry. */
export interface FailureRecord {
  rung: string
  id: string
  title: string
  message: string
  hint?: string
  file?: string
  line?: number
  at: string
}

export interface LadderState {
  recipeDir: string
  rungs: Record<string, RungRecord>
  lastFailure?: FailureRecord
}

function statePath(recipeDir: string, env: NodeJS.ProcessEnv): string {
  return recipeStatePath('ladder', recipeDir, env)
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return Boolean(value) && typeof value === 'object' && !Array.isArray(value)
}

function isRungRecord(value: unknown): value is RungRecord {
  return isRecord(value) && ['pass', 'fail', 'incomplete'].includes(String(value.status)) && typeof value.at === 'string' && isRecord(value.inputs)
}

/** The recorded state of this recipe folder; empty when none, unreadable, or another folder's. */
export async function readLadderState(recipeDir: string, env: NodeJS.ProcessEnv = process.env): Promise<LadderState> {
  const empty: LadderState = {recipeDir: path.resolve(recipeDir), rungs: {}}
  const parsed = await readRecipeState('ladder', recipeDir, env)
  if (!isRecord(parsed) || parsed.recipeDir !== empty.recipeDir || !isRecord(parsed.rungs)) return empty
  const rungs = Object.fromEntries(Object.entries(parsed.rungs).filter(([, r]) => isRungRecord(r))) as Record<string, RungRecord>
  const failure = parsed.lastFailure
  const lastFailure = isRecord(failure) && typeof failure.id === 'string' && typeof failure.message === 'string' ? (failure as unknown as FailureRecord) : undefined
  return {...empty, rungs, ...(lastFailure ? {lastFailure} : {})}
}

/** Record one rung's verdict (and the failure that came with it); other rungs' records are kept. */
export async function recordRungVerdict(
  recipeDir: string,
  rung: string,
  record: RungRecord,
  failure: FailureRecord | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  const state = await readLadderState(recipeDir, env)
  state.rungs[rung] = record
  if (failure) state.lastFailure = failure
  await writeFileAtomic(statePath(recipeDir, env), `${JSON.stringify(state, null, 2)}\n`, 0o600)
}
