/**
 * Text bound for a terminal that may carry bytes from an input (a config key, a service's answer,
 * a file name): control characters are shown as escapes instead of acting on the terminal (a
 * carriage return overwriting a line, an escape sequence moving the cursor, retitling the window
 * or clearing the screen). Line breaks, tabs and colour sequences (SGR, which gymrecipe itself
 * writes) pass through.
 */
// eslint-disable-next-line no-control-regex
const CONTROL = /\x1b\[[0-9;]*m|[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]/g

export function terminalSafe(text: string): string {
  return text.replace(CONTROL, (match) => {
    if (match.length > 1) return match
    const code = match.charCodeAt(0)
    if (match === '\r') return '\\r'
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : match
  })
}
