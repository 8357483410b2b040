import path from 'node:path'

import {ExitCode, GymError} from '../errors.js'
import {run} from './process.js'

/**
 * The environment the recipe scripts see: the caller's environment with env.sh sourced on top,
 * evaluated by bash itself so `${VAR:-default}` and any logic in env.sh behave exactly as in the scripts.
 */
export async function recipeEnvironment(recipeDir: string, base: NodeJS.ProcessEnv): Promise<Record<string, string>> {
  const envFile = path.join(recipeDir, 'env.sh')
  const result = await run('bash', ['-c', 'set -a; source "$1" >/dev/null; env -0', 'gymrecipe-env', envFile], {
    env: base as Record<string, string>,
    extendEnv: false,
    timeout: 20_000,
    cwd: recipeDir,
  })
  if (result.failed) {
    throw new GymError(`sourcing ${envFile} failed: ${result.stderr.trim().split('\n').at(-1) ?? `exit ${result.exitCode}`}`, {
      code: 'E_ENV_SH',
      exit: ExitCode.usage,
      hint: 'Fix env.sh; it must be valid bash that only exports deployment values.',
      location: {file: envFile},
    })
  }
  const env: Record<string, string> = {}
  for (const entry of result.stdout.split('\0')) {
    const eq = entry.indexOf('=')
    if (eq > 0) env[entry.slice(0, eq)] = entry.slice(eq + 1)
  }
  return env
}
