import path from 'node:path'

import {ExitCode, GymError} from '../errors.js'
import {run} from './process.js'

/**
 * The environment the recipe scripts see: the caller's environment with env.sh sourced on top,
 * evaluated by bash itself so `${VAR:-default}` and any logic in env.sh behave exactly as in the scripts.
 */
export async function scriptEnvironment(recipeDir: string, base: NodeJS.ProcessEnv): Promise<Record<string, string>> {
  const envFile = path.join(recipeDir, 'env.sh')
  // A syntax error must fail here: sourced, it only stops env.sh, and env -0 would still exit 0.
  // A missing env.sh (Relax keeps it out of git) leaves the caller's environment as it is.
  const result = await run('bash', ['-c', 'if [ -e "$1" ]; then bash -n "$1" || exit 2; set -a; source "$1" >/dev/null; fi; env -0', 'gymrecipe-env', envFile], {
    env: base as Record<string, string>,
    extendEnv: false,
    timeout: 20_000,
    cwd: recipeDir,
  })
  if (result.failed) {
    const lines = result.stderr.trim().split('\n')
    // bash names the cause first ("line 4: syntax error near unexpected token ..."), the echo of the line after.
    const cause = (lines.find((l) => /syntax error|not found|unbound/.test(l)) ?? lines.at(-1) ?? `exit ${result.exitCode}`).replace(`${envFile}: `, '')
    throw new GymError(`sourcing ${envFile} failed: ${cause}`, {
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
