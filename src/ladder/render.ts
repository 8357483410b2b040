/**
 * How a check and a rung read, in words and marks, wherever they are shown: the live ladder on a
 * terminal, the plain lines without one, the summary after a climb and `train`'s training rung.
 */
import type {CheckResult, RungStatus} from './types.js'

export const MARK = {pass: '✔', fail: '✖', skip: '↓'} as const

const NOT_CHECKED = /^not checked: /

/** A skip's reason without the "not checked: " its message may already start with. */
export function skipReason(message: string): string {
  return message.replace(NOT_CHECKED, '')
}

function where(result: CheckResult): string {
  return result.file ? ` (${result.file}${result.line ? `:${result.line}` : ''})` : ''
}

/** `title: message`, a skip as `title: not checked: reason`, with the place when there is one. */
export function checkText(result: CheckResult): string {
  const message = result.status === 'skip' ? `not checked: ${skipReason(result.message)}` : result.message
  return `${result.title}: ${message}${result.status === 'pass' ? '' : where(result)}`
}

/** One line per result, with its mark, and its hint on the next line when it did not pass. */
export function checkLines(result: CheckResult, indent = ''): string[] {
  const lines = [`${indent}${MARK[result.status]} ${checkText(result)}`]
  if (result.status !== 'pass' && result.hint) lines.push(`${indent}    hint: ${result.hint}`)
  return lines
}

/** The mark of a rung: its status, never a tick for a rung that did not pass. */
export function rungMark(status: RungStatus): string {
  return status === 'pass' ? MARK.pass : status === 'fail' ? MARK.fail : MARK.skip
}

export function rungLine(rung: string, status: RungStatus): string {
  return `${rungMark(status)} ${rung} rung: ${status === 'not-run' ? 'not run (a lower rung did not pass)' : status}`
}
