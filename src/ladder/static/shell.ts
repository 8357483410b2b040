/** Small, conservative readers for bash scripts: enough to check recipe rules, not a shell parser. */

export interface LogicalLine {
  /** 1-based line where the logical line starts. */
  line: number
  /** Text with comments removed and backslash continuations joined. */
  text: string
}

/** Remove a trailing comment, respecting quotes and `$#`/`${#...}`. */
export function stripComment(line: string): string {
  let quote: string | null = null
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]
    if (quote) {
      if (ch === '\\' && quote === '"') i++
      else if (ch === quote) quote = null
      continue
    }
    if (ch === '\\') {
      i++
      continue
    }
    if (ch === "'" || ch === '"') quote = ch
    else if (ch === '#' && (i === 0 || /\s/.test(line[i - 1]))) return line.slice(0, i)
  }
  return line
}

/** Logical lines of a script, skipping heredoc bodies (their content is not shell). */
export function logicalLines(script: string): LogicalLine[] {
  const raw = script.split('\n')
  const out: LogicalLine[] = []
  let current: LogicalLine | null = null
  let heredocEnd: string | null = null
  for (let i = 0; i < raw.length; i++) {
    const physical = raw[i]
    if (heredocEnd !== null) {
      if (physical.trim() === heredocEnd) heredocEnd = null
      continue
    }
    const text = stripComment(physical)
    const heredoc = text.match(/<<-?\s*['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?/)
    if (heredoc && !text.includes('<<<')) heredocEnd = heredoc[1]
    const continued = /\\\s*$/.test(text)
    const piece = text.replace(/\\\s*$/, ' ')
    if (current) current.text += ' ' + piece.trim()
    else current = {line: i + 1, text: piece}
    if (!continued) {
      if (current.text.trim() !== '') out.push({line: current.line, text: current.text.trim()})
      current = null
    }
  }
  if (current && current.text.trim() !== '') out.push({line: current.line, text: current.text.trim()})
  return out
}

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
