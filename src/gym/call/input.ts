import {codeOf, GymError, messageOf, ExitCode} from '../../errors.js'
import {mayHoldNonFinite, nestsDeeperThan, POLICY_MESSAGES} from '../../json/input-policy.js'
import {nonFiniteField} from '../../json/index.js'
import {JsonlPolicyError, LineReader} from '../../json/jsonl-reader.js'
import {isJsonObject, parseJson} from '../../json/index.js'
import type {CallConfig} from './types.js'

/** An input row's text is an empty object when nothing but whitespace sits between its braces. */
const EMPTY_OBJECT = /^\{\s*\}$/u

export function isEmptyObjectText(text: string): boolean {
  return text.length < 64 && EMPTY_OBJECT.test(text)
}

export function inputUnreadable(file: string, error: unknown): GymError {
  return new GymError(`cannot read rows file ${file} (${codeOf(error) ?? messageOf(error)})`, {
    code: 'E_CALL_INPUT_UNREADABLE',
    exit: ExitCode.usage,
    hint: 'pass the path of a JSONL file with one JSON object per line',
    location: {file},
  })
}

/**
 * Check one input line (already trimmed, not blank): a JSON object without a
 * field named like an output column. Throws the located usage error.
 * JSON.parse accepts exactly the lossless parser's grammar (both keep the
 * last value of a repeated key), so the check runs natively; the lossless
 * parser only runs again to word an error.
 */
export function checkRowText(text: string, line: number, file: string, outputColumns: readonly string[]): void {
  if (nestsDeeperThan(text)) throw rowInvalid(POLICY_MESSAGES.nesting, file, line)
  let row: unknown
  try {
    row = JSON.parse(text)
  } catch (error) {
    let message = messageOf(error)
    try {
      parseJson(text)
    } catch (lossless) {
      message = messageOf(lossless) ?? message
    }
    throw new GymError(`not valid JSON (${message})`, {
      code: 'E_CALL_INPUT_INVALID',
      exit: ExitCode.usage,
      hint: 'each line of the rows file must be one JSON object',
      location: {file, line},
    })
  }
  if (!isJsonObject(row)) {
    throw new GymError(`a row must be a JSON object`, {
      code: 'E_CALL_INPUT_INVALID',
      exit: ExitCode.usage,
      hint: 'each line of the rows file must be one JSON object',
      location: {file, line},
    })
  }
  if (mayHoldNonFinite(text)) {
    const field = nonFiniteField(text, '')
    if (field !== undefined) throw rowInvalid(`${field || 'a number'} ${POLICY_MESSAGES.nonFinite}`, file, line, field || undefined)
  }
  for (const column of outputColumns) {
    if (Object.prototype.hasOwnProperty.call(row, column)) {
      throw new GymError(`the row already has a field named ${column}, the output column of this config`, {
        code: 'E_CALL_INPUT_INVALID',
        exit: ExitCode.usage,
        hint: 'choose another `name`/`evidence_column` in the config so no existing data is overwritten',
        location: {file, line, field: column},
      })
    }
  }
}

function rowInvalid(message: string, file: string, line: number, field?: string, hint = 'each line of the rows file must be one JSON object'): GymError {
  return new GymError(message, {code: 'E_CALL_INPUT_INVALID', exit: ExitCode.usage, hint, location: {file, line, ...(field === undefined ? {} : {field})}})
}

export function outputColumnsOf(config: CallConfig): string[] {
  return [config.name, ...(config.evidence_column ? [config.evidence_column] : [])]
}

/**
 * Validate a whole rows file without keeping it: every non-blank line must
 * be a JSON object that has none of the output columns. Returns the number
 * of rows and the sha256 of the file's bytes (the resume fingerprint).
 */
export async function scanRows(file: string, config: CallConfig): Promise<{rows: number; sha256: string}> {
  let reader: LineReader
  try {
    reader = await LineReader.open(file, {hash: true})
  } catch (error) {
    throw inputUnreadable(file, error)
  }
  const columns = outputColumnsOf(config)
  let rows = 0
  try {
    for (let lines = await reader.nextTexts(); lines; lines = await reader.nextTexts()) {
      const first = reader.firstLine
      for (let n = 0; n < lines.length; n++) {
        const trimmed = lines[n].trim()
        if (trimmed === '') continue
        checkRowText(trimmed, first + n, file, columns)
        rows++
      }
    }
  } catch (error) {
    if (error instanceof GymError) throw error
    if (error instanceof JsonlPolicyError) throw rowInvalid(error.message, file, error.line, undefined, error.hint)
    throw inputUnreadable(file, error)
  } finally {
    await reader.close()
  }
  return {rows, sha256: reader.digest()}
}
