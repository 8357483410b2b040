import {createHash, type Hash} from 'node:crypto'
import {promises as fsp} from 'node:fs'

import {ExitCode, GymError} from '../../errors.js'
import {isPlainObject, parseLossless} from './json.js'
import type {CallConfig} from './types.js'

/** One line of a file, without its newline. */
export interface RawLine {
  /** 1-based line number. */
  line: number
  text: string
  /** Byte offset of the line's first byte. */
  offset: number
  /** Length of the line in bytes, newline excluded. */
  bytes: number
}

const CHUNK_BYTES = 1 << 20

/**
 * Reads a file chunk by chunk and hands back its lines a chunk at a time, so
 * memory holds one chunk, the lines decoded from it and a partial last line,
 * however long the file is. Optionally hashes every byte read (sha256).
 */
export class LineReader {
  private readonly buffer = Buffer.allocUnsafe(CHUNK_BYTES)
  private carry: Buffer | undefined
  private carryOffset = 0
  private position = 0
  private lineNo = 0
  private done = false
  private lastByte = -1
  private readonly hash?: Hash

  private constructor(
    private readonly handle: fsp.FileHandle,
    withHash: boolean,
  ) {
    if (withHash) this.hash = createHash('sha256')
  }

  static async open(file: string, options: {hash?: boolean} = {}): Promise<LineReader> {
    return new LineReader(await fsp.open(file, 'r'), Boolean(options.hash))
  }

  /** Bytes read so far. */
  get bytesRead(): number {
    return this.position
  }

  /** The next chunk's lines (possibly none), or undefined at the end of the file. */
  async next(): Promise<RawLine[] | undefined> {
    if (this.done) return undefined
    const {bytesRead} = await this.handle.read(this.buffer, 0, CHUNK_BYTES, this.position)
    const lines: RawLine[] = []
    if (bytesRead === 0) {
      this.done = true
      if (this.carry && this.carry.length > 0) {
        lines.push({line: ++this.lineNo, text: this.carry.toString('utf8'), offset: this.carryOffset, bytes: this.carry.length})
        this.carry = undefined
      }
      return lines.length > 0 ? lines : undefined
    }
    const chunk = this.buffer.subarray(0, bytesRead)
    this.hash?.update(chunk)
    this.lastByte = chunk[bytesRead - 1]
    const chunkOffset = this.position
    this.position += bytesRead
    let start = 0
    for (let newline = chunk.indexOf(10); newline !== -1; newline = chunk.indexOf(10, start)) {
      if (this.carry) {
        const bytes = Buffer.concat([this.carry, chunk.subarray(start, newline)])
        lines.push({line: ++this.lineNo, text: bytes.toString('utf8'), offset: this.carryOffset, bytes: bytes.length})
        this.carry = undefined
      } else {
        lines.push({line: ++this.lineNo, text: chunk.toString('utf8', start, newline), offset: chunkOffset + start, bytes: newline - start})
      }
      start = newline + 1
    }
    if (start < bytesRead) {
      // the buffer is reused: keep a copy of the unfinished line
      const rest = Buffer.from(chunk.subarray(start))
      if (this.carry) {
        this.carry = Buffer.concat([this.carry, rest])
      } else {
        this.carry = rest
        this.carryOffset = chunkOffset + start
      }
    }
    return lines
  }

  /** Whether the bytes read so far end with a newline (true for an empty file). */
  get endsWithNewline(): boolean {
    return this.lastByte === -1 || this.lastByte === 10
  }

  /**
   * The next chunk's lines as text only (no offsets), decoded in one go; the
   * first of them has line number `firstLine`. Undefined at the end of the file.
   */
  async nextTexts(): Promise<string[] | undefined> {
    if (this.done) return undefined
    const {bytesRead} = await this.handle.read(this.buffer, 0, CHUNK_BYTES, this.position)
    this.firstLine = this.lineNo + 1
    if (bytesRead === 0) {
      this.done = true
      if (this.carry && this.carry.length > 0) {
        const text = this.carry.toString('utf8')
        this.carry = undefined
        this.lineNo++
        return [text]
      }
      return undefined
    }
    const chunk = this.buffer.subarray(0, bytesRead)
    this.hash?.update(chunk)
    this.lastByte = chunk[bytesRead - 1]
    this.position += bytesRead
    const last = chunk.lastIndexOf(10)
    if (last === -1) {
      this.carry = this.carry ? Buffer.concat([this.carry, chunk]) : Buffer.from(chunk)
      return []
    }
    const text = this.carry ? Buffer.concat([this.carry, chunk.subarray(0, last)]).toString('utf8') : chunk.toString('utf8', 0, last)
    this.carry = last + 1 < bytesRead ? Buffer.from(chunk.subarray(last + 1)) : undefined
    const lines = text.split('\n')
    this.lineNo += lines.length
    return lines
  }

  /** Line number of the first line nextTexts() returned last. */
  firstLine = 1

  /** sha256 (hex) of every byte read; complete once next() returned undefined. */
  digest(): string {
    if (!this.hash) throw new Error('LineReader opened without hash')
    return this.hash.digest('hex')
  }

  async close(): Promise<void> {
    await this.handle.close().catch(() => undefined)
  }
}

/** An input row's text is an empty object when nothing but whitespace sits between its braces. */
const EMPTY_OBJECT = /^\{\s*\}$/u

export function isEmptyObjectText(text: string): boolean {
  return text.length < 64 && EMPTY_OBJECT.test(text)
}

export function inputUnreadable(file: string, error: any): GymError {
  return new GymError(`cannot read rows file ${file} (${error?.code ?? error?.message})`, {
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
  let row: unknown
  try {
    row = JSON.parse(text)
  } catch (error: any) {
    let message = error?.message ?? String(error)
    try {
      parseLossless(text)
    } catch (lossless: any) {
      message = lossless?.message ?? message
    }
    throw new GymError(`not valid JSON (${message})`, {
      code: 'E_CALL_INPUT_INVALID',
      exit: ExitCode.usage,
      hint: 'each line of the rows file must be one JSON object',
      location: {file, line},
    })
  }
  if (!isPlainObject(row)) {
    throw new GymError(`a row must be a JSON object`, {
      code: 'E_CALL_INPUT_INVALID',
      exit: ExitCode.usage,
      hint: 'each line of the rows file must be one JSON object',
      location: {file, line},
    })
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
    throw inputUnreadable(file, error)
  } finally {
    await reader.close()
  }
  return {rows, sha256: reader.digest()}
}
