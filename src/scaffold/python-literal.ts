/**
 * A JSON-able value written as a Python literal a person would type: dicts and lists laid out
 * with four-space indents (short ones on one line), True/False/None, strings in double quotes
 * (JSON's escapes are Python's).
 */
const INLINE_WIDTH = 72

export function pythonLiteral(value: unknown, indent = 0): string {
  if (value === null || value === undefined) return 'None'
  if (value === true) return 'True'
  if (value === false) return 'False'
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : Number.isNaN(value) ? 'float("nan")' : `float("${value > 0 ? 'inf' : '-inf'}")`
  if (typeof value === 'bigint') return value.toString()
  if (typeof value === 'string') return JSON.stringify(value)
  const entries: Array<[string | undefined, unknown]> = Array.isArray(value) ? value.map((item) => [undefined, item]) : Object.entries(value as Record<string, unknown>)
  const [open, close] = Array.isArray(value) ? ['[', ']'] : ['{', '}']
  if (entries.length === 0) return `${open}${close}`
  const item = (key: string | undefined, inner: string) => (key === undefined ? inner : `${JSON.stringify(key)}: ${inner}`)
  const inline = `${open}${entries.map(([key, inner]) => item(key, pythonLiteral(inner))).join(', ')}${close}`
  if (!inline.includes('\n') && indent + inline.length <= INLINE_WIDTH) return inline
  const pad = ' '.repeat(indent + 4)
  const lines = entries.map(([key, inner]) => `${pad}${item(key, pythonLiteral(inner, indent + 4))},`)
  return `${open}\n${lines.join('\n')}\n${' '.repeat(indent)}${close}`
}
