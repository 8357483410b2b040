/** Logical lines of a bash script, as the static rung and every reader of env.sh see them. */

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
