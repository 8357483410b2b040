/** Small, conservative readers for bash scripts: enough to check recipe rules, not a shell parser. */

import {type LogicalLine, stripComment} from '../shell-lines.js'

export {type LogicalLine, logicalLines, stripComment} from '../shell-lines.js'

export interface Found {
  line: number
  value: string
}

/** Values given to a long flag as `--flag value` or `--flag=value` (quotes removed). */
export function flagValues(lines: LogicalLine[], flag: string): Found[] {
  const out: Found[] = []
  const re = new RegExp(`(?:^|\\s)${flag.replace(/[-/\\^$*+?.()|[\]{}]/g, '\\$&')}(?:=|\\s+)("[^"]*"|'[^']*'|[^\\s]+)`, 'g')
  for (const l of lines) {
    for (const m of l.text.matchAll(re)) out.push({line: l.line, value: m[1].replace(/^["']|["']$/g, '')})
  }
  return out
}

/** Line of the first logical line matching a pattern, or undefined. */
export function findLine(lines: LogicalLine[], pattern: RegExp): LogicalLine | undefined {
  return lines.find((l) => pattern.test(l.text))
}

/** Physical line number of the first match in the raw text (heredocs included). */
export function rawLineOf(script: string, pattern: RegExp): number | undefined {
  const index = script.split('\n').findIndex((l) => pattern.test(l))
  return index === -1 ? undefined : index + 1
}

/** Variables assigned at top level: NAME=... or export NAME=... */
export function assignments(lines: LogicalLine[]): Array<{name: string; value: string; line: number}> {
  const out: Array<{name: string; value: string; line: number}> = []
  for (const l of lines) {
    const m = l.text.match(/^(?:export\s+|readonly\s+|declare\s+(?:-\w+\s+)?)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$/)
    if (m) out.push({name: m[1], value: m[2], line: l.line})
  }
  return out
}

/** A `KEY=value` word anywhere in a script, e.g. one item of `--agent-env` (first occurrence). */
export function keyValueWord(lines: LogicalLine[], key: string): Found | undefined {
  for (const l of lines) {
    const m = l.text.match(new RegExp(`["']?${key}=([^"'\\s]+)`))
    if (m) return {value: m[1], line: l.line}
  }
  return undefined
}

export interface Word {
  line: number
  /** The word with its quotes removed. */
  value: string
}

/**
 * Words of every `NAME=( ... )` array in a script (physical lines, comments dropped), by name.
 * Enough for argument arrays, which hold one flag or value per word.
 */
export function arrays(script: string): Map<string, Word[]> {
  const out = new Map<string, Word[]>()
  const lines = script.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const open = lines[i].match(/^\s*([A-Za-z_][A-Za-z0-9_]*)=\((.*)$/)
    if (!open) continue
    const words: Word[] = []
    let rest = open[2]
    let at = i
    for (;;) {
      const body = stripComment(rest)
      const closed = /^\s*\)\s*$/.test(body) || /\)\s*$/.test(body.trim()) && !/\$\($/.test(body)
      const text = closed ? body.replace(/\)\s*$/, '') : body
      for (const m of text.matchAll(/"((?:[^"\\]|\\.)*)"|'([^']*)'|([^\s"']+)/g)) words.push({line: at + 1, value: m[1] ?? m[2] ?? m[3]})
      if (closed || at + 1 >= lines.length) break
      rest = lines[++at]
    }
    out.set(open[1], words)
    i = at
  }
  return out
}

export interface Resolved {
  /** The value with defaults substituted, when it can be worked out. */
  value?: string
  /** Variables read from the caller's environment on the way (NAME="${NAME:-default}", or never assigned). */
  fromEnv: Array<{name: string; line?: number}>
}

/**
 * Work out a shell word the way bash would with an empty environment: `${X}`, `$X`, `${X:-d}`,
 * `${X:=d}` and `$((a + b))` are expanded through the script's own top-level assignments.
 * Command substitutions and anything else stay unresolved. Every variable the value would take
 * from the environment is reported, so a hyperparameter that can be overridden is visible.
 */
export function resolveWord(word: string, lines: LogicalLine[], depth = 0): Resolved {
  const fromEnv: Resolved['fromEnv'] = []
  if (depth > 12) return {fromEnv}
  const table = new Map<string, {value: string; line: number}>()
  for (const a of assignments(lines)) if (!table.has(a.name)) table.set(a.name, {value: unquote(a.value), line: a.line})
  let unresolved = false
  const lookup = (name: string, fallback: string | undefined): string | undefined => {
    const assigned = table.get(name)
    const own = assigned?.value.match(new RegExp(`^\\$\\{${name}:?[-=](.*)\\}$`))
    if (!assigned || own) {
      fromEnv.push({name, line: assigned?.line})
      const d = own ? own[1] : fallback
      if (d === undefined) return undefined
      const r = resolveWord(d, lines, depth + 1)
      fromEnv.push(...r.fromEnv)
      return r.value
    }
    const r = resolveWord(assigned.value, lines, depth + 1)
    fromEnv.push(...r.fromEnv)
    return r.value
  }
  const expand = (text: string): string =>
    text.replace(/\$\(\((.*?)\)\)|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?[-=]((?:[^{}]|\{[^{}]*\})*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (m, arith, braced, fallback, bare) => {
      if (arith !== undefined) {
        const expr = expand(arith.replace(/\b([A-Za-z_][A-Za-z0-9_]*)\b/g, (_: string, n: string) => `\${${n}}`))
        if (!/^[\d\s+\-*/()]+$/.test(expr)) {
          unresolved = true
          return m
        }
        return String(arithmetic(expr))
      }
      const v = lookup(braced ?? bare, fallback)
      if (v === undefined) unresolved = true
      return v ?? m
    })
  if (/\$\(|`/.test(word.replace(/\$\(\(/g, ''))) return {fromEnv}
  const value = expand(unquote(word))
  return unresolved ? {fromEnv} : {value, fromEnv}
}

function unquote(value: string): string {
  const v = value.trim()
  if ((v.startsWith('"') && v.endsWith('"')) || (v.startsWith("'") && v.endsWith("'"))) return v.slice(1, -1)
  return v
}

/** Integer arithmetic as in bash $(( )): + - * / and parentheses. */
function arithmetic(expr: string): number {
  const tokens = expr.match(/\d+|[-+*/()]/g) ?? []
  let at = 0
  const primary = (): number => {
    const t = tokens[at++]
    if (t === '(') {
      const v = sum()
      at++
      return v
    }
    if (t === '-') return -primary()
    return Number(t)
  }
  const product = (): number => {
    let v = primary()
    while (tokens[at] === '*' || tokens[at] === '/') v = tokens[at++] === '*' ? v * primary() : Math.trunc(v / primary())
    return v
  }
  const sum = (): number => {
    let v = product()
    while (tokens[at] === '+' || tokens[at] === '-') v = tokens[at++] === '+' ? v + product() : v - product()
    return v
  }
  return sum()
}
