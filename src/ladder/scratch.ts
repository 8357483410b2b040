/**
 * Values computed once per ladder run and shared by every check and rung of that run, kept in
 * the run's scratch map. The promise itself is stored, so concurrent callers share one computation.
 */
import {existsSync} from 'node:fs'
import path from 'node:path'

import {recipeEnvironment} from '../runtime/recipe-env.js'
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

const SOURCED_ENV = new ScratchKey<Promise<Record<string, string>>>('recipe.sourced-env')
const RECIPE_ENV = new ScratchKey<Promise<Record<string, string>>>('recipe.env')

/** env.sh sourced by bash over the caller's environment; rejects (E_ENV_SH) when it cannot be sourced. */
export function sourcedEnv(ctx: CheckContext): Promise<Record<string, string>> {
  return once(ctx, SOURCED_ENV, () => recipeEnvironment(ctx.target.dir, ctx.options.env))
}

/** Like sourcedEnv, but a recipe without env.sh (Relax gitignores it) sees the caller's environment, as its scripts do. */
export function recipeEnv(ctx: CheckContext): Promise<Record<string, string>> {
  return once(ctx, RECIPE_ENV, async () => {
    if (existsSync(path.join(ctx.target.dir, ctx.target.files.env ?? 'env.sh'))) return sourcedEnv(ctx)
    return Object.fromEntries(Object.entries(ctx.options.env).filter((e): e is [string, string] => e[1] !== undefined))
  })
}
