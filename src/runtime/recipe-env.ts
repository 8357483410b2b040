import {promises as fsp} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {ENV_SH_RULE, envShProblems} from '../env-sh.js'
import {ExitCode, GymError} from '../errors.js'
import {run} from './process.js'
import {INPUT_LIMITS, readInputText} from './read-input.js'

/** Set to 1 to source an env.sh that holds more than plain values (its commands then run). */
export const TRUST_ENV_SH = 'GYMRECIPE_TRUST_ENV_SH'

/**
 * The environment the recipe scripts see: the caller's environment with env.sh sourced on top,
 * evaluated by bash itself so `${VAR:-default}` behaves exactly as in the scripts. Sourcing runs
 * what the file holds, so a file with anything the static rung would not clear (a command, a
 * substitution) is refused unless GYMRECIPE_TRUST_ENV_SH=1 says to run it. The text checked is the
 * text sourced: bash reads a private copy, never the file again.
 */
export async function scriptEnvironment(recipeDir: string, base: NodeJS.ProcessEnv): Promise<Record<string, string>> {
  const envFile = path.join(recipeDir, 'env.sh')
  const hint = 'Fix env.sh; it must be valid bash that only exports deployment values.'
  // A missing env.sh (Relax keeps it out of git) leaves the caller's environment as it is.
  const text = await readInputText(envFile, {what: 'env.sh', maxBytes: INPUT_LIMITS.envSh, strictText: true, hint})
  if (text === undefined) return plainEnvironment(base)
  // bash reads the text checked here, from a private copy, never the file again.
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'gymrecipe-env-'))
  try {
    const copy = path.join(dir, 'env.sh')
    await fsp.writeFile(copy, text, {mode: 0o600})
    // A syntax error is the clearer report, and bash -n runs nothing. It must fail here: sourced,
    // a syntax error only stops env.sh, and env -0 would still exit 0.
    const syntax = await run('bash', ['-n', copy], {extendEnv: false, env: {}, timeout: 20_000})
    if (syntax.failed) throw sourcingFailed(envFile, copy, syntax, hint)
    if (base[TRUST_ENV_SH] !== '1') {
      const [first, ...more] = envShProblems(text)
      if (first) {
        throw new GymError(`env.sh is not sourced: ${first.problem}${more.length ? ` (and ${more.length} more line${more.length === 1 ? '' : 's'})` : ''}`, {
          code: 'E_ENV_SH',
          exit: ExitCode.usage,
          hint: `gymrecipe reads env.sh by sourcing it and runs nothing the static rung would not clear. ${ENV_SH_RULE} Or set ${TRUST_ENV_SH}=1 to source it anyway, its commands included.`,
          location: {file: envFile, line: first.line},
          details: {lines: [first, ...more].map((p) => p.line)},
        })
      }
    }
    const result = await run('bash', ['-c', 'set -a; source "$1" >/dev/null; env -0', 'gymrecipe-env', copy], {env: base as Record<string, string>, extendEnv: false, timeout: 20_000, cwd: recipeDir})
    if (result.failed) throw sourcingFailed(envFile, copy, result, hint)
    return parseEnv(result.stdout)
  } finally {
    await fsp.rm(dir, {recursive: true, force: true})
  }
}

function plainEnvironment(base: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(base).filter((e): e is [string, string] => typeof e[1] === 'string'))
}

function parseEnv(stdout: string): Record<string, string> {
  const env: Record<string, string> = {}
  for (const entry of stdout.split('\0')) {
    const eq = entry.indexOf('=')
    if (eq > 0) env[entry.slice(0, eq)] = entry.slice(eq + 1)
  }
  return env
}

function sourcingFailed(envFile: string, copy: string, result: {stderr: string; exitCode: number | undefined}, hint: string): GymError {
  const lines = result.stderr.replaceAll(copy, envFile).trim().split('\n')
  // bash names the cause first ("line 4: syntax error near unexpected token ..."), the echo of the line after.
  const cause = (lines.find((l) => /syntax error|not found|unbound/.test(l)) ?? lines.at(-1) ?? `exit ${result.exitCode}`).replace(`${envFile}: `, '')
  return new GymError(`sourcing ${envFile} failed: ${cause}`, {code: 'E_ENV_SH', exit: ExitCode.usage, hint, location: {file: envFile}})
}
