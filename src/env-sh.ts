/**
 * What `env.sh` may hold: deployment values only, as lines that cannot run anything when bash
 * sources them. Used by the static rung (which judges the file) and by every reader of env.sh
 * (which refuses to source one that could run a command).
 */
import {logicalLines} from './shell-lines.js'

/**
 * Anything that can run a command when bash reads the line, or when a script later uses the value:
 * command and process substitution and backticks (also inside single quotes: a value such as
 * `A[$(...)]` runs its command where a script uses it as a number, since bash evaluates array
 * subscripts in arithmetic), and arithmetic expansion.
 */
const RUNS_CODE: Array<{pattern: RegExp; what: string}> = [
  {pattern: /\$\(/, what: 'command substitution $(...)'},
  {pattern: /`/, what: 'a backtick command substitution'},
  {pattern: /[<>]\(/, what: 'process substitution <(...) or >(...)'},
  {pattern: /\$\[/, what: 'arithmetic expansion $[...]'},
]

/**
 * A plain assignment: `[export|readonly] NAME=value`, the value a double- or single-quoted string
 * or a bare word, with `${NAME}`, `${NAME:-default}`, `${NAME-default}` and `$NAME` as its only
 * expansions; or `export NAME ...`.
 */
const ASSIGNMENT = /^(?:(?:export|readonly)\s+)?[A-Za-z_][A-Za-z0-9_]*=(?:"[^"]*"|'[^']*'|[^\s;&|"'<>()]*)$|^export\s+[A-Za-z_][A-Za-z0-9_]*(?:\s+[A-Za-z_][A-Za-z0-9_]*)*$/

/** Expansions allowed in a value: a name, or a name with a `-`/`:-`/`=`/`:=` default of plain text. */
const EXPANSION = /\$\{([^}]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g
const SAFE_EXPANSION = /^[A-Za-z_][A-Za-z0-9_]*(?::?[-=][^$`{}]*)?$/

/** Why a line of env.sh is not a plain deployment value, or undefined when it is one. */
export function envLineProblem(line: string): string | undefined {
  const text = line.trim()
  if (text === '' || text.startsWith('#')) return undefined
  for (const {pattern, what} of RUNS_CODE) {
    // A single-quoted value is literal in env.sh, but scripts use the value: code in it still runs.
    if (pattern.test(text)) return `it holds ${what}`
  }
  if (!ASSIGNMENT.test(text)) return 'it is not a plain NAME=value assignment, so it runs as a command whenever env.sh is sourced'
  if (!/='/.test(text)) {
    for (const m of text.matchAll(EXPANSION)) {
      if (m[1] !== undefined && !SAFE_EXPANSION.test(m[1])) return `its expansion \${${m[1]}} is not a plain \${NAME} or \${NAME:-default}`
    }
  }
  return undefined
}

/** What env.sh may hold, as a hint. */
export const ENV_SH_RULE = 'Keep env.sh to NAME=value / export NAME=value lines, with ${NAME} or ${NAME:-value} as the only expansions and no $(...), backticks or arithmetic even inside quotes; move logic into the scripts or your shell.'

export interface EnvShProblem {
  line: number
  text: string
  problem: string
}

/** Every logical line of an env.sh text that is not a plain deployment value (comments dropped). */
export function envShProblems(text: string): EnvShProblem[] {
  return logicalLines(text).flatMap((l) => {
    const problem = envLineProblem(l.text)
    return problem ? [{line: l.line, text: l.text, problem}] : []
  })
}
