/**
 * Values computed once per ladder run and shared by every check and rung of that run, kept in
 * the run's scratch map. The promise itself is stored, so concurrent callers share one computation.
 */
import {scriptEnvironment} from '../runtime/recipe-env.js'
import {ScratchKey} from './scratch-store.js'
import type {CheckContext} from './types.js'

export {Scratch, ScratchKey} from './scratch-store.js'

export function once<T>(ctx: CheckContext, key: ScratchKey<Promise<T>>, make: () => Promise<T>): Promise<T> {
  const known = ctx.scratch.get(key)
  if (known) return known
  const made = make()
  ctx.scratch.set(key, made)
  return made
}

const SCRIPT_ENV = new ScratchKey<Promise<Record<string, string>>>('recipe.script-env')

/**
 * What the recipe's scripts see: the caller's environment with env.sh sourced on top by bash
 * (once per run); rejects (E_ENV_SH) when env.sh cannot be sourced. Without env.sh (Relax
 * gitignores it) it is the caller's environment.
 */
export function scriptEnv(ctx: CheckContext): Promise<Record<string, string>> {
  return once(ctx, SCRIPT_ENV, () => scriptEnvironment(ctx.target.dir, ctx.options.env))
}
