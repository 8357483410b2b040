import {isUtf8} from 'node:buffer'
import {createHash, type Hash} from 'node:crypto'
import {promises as fsp} from 'node:fs'

import {maxLineBytes, POLICY_MESSAGES} from './input-policy.js'

/** A line the input policy refuses (./input-policy.ts); callers word it with their own error code. */
export class JsonlPolicyError extends Error {
  constructor(
    readonly line: number,
    message: string,
    readonly hint?: string,
  ) {
    super(message)
    this.name = 'JsonlPolicyError'
  }
}

export interface LineReaderOptions {
  /** sha256 every byte read (digest()). */
  hash?: boolean
  /** Refuse longer lines before holding them (default: maxLineBytes()). */
  maxLineBytes?: number
}

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

// 256 KiB: big enough that reads are few, small enough that a chunk's text and lines die young
// (1 MiB chunks survived the young generation and left the heap a third larger).
const CHUNK_BYTES = 1 << 18

/**
 * The unfinished last line, kept as the pieces it arrived in and joined once when its newline
 * comes: joining at every chunk would copy a long line over and over (quadratic in its length).
 */
class Carry {
  private pieces: Buffer[] = []
  length = 0

  /** Keep `piece` (the caller hands over a buffer that is not reused). */
  append(piece: Buffer): void {
    this.pieces.push(piece)
    this.length += piece.length
  }

  /** The whole line so far, followed by `rest`; the carry is empty afterwards. */
  take(rest?: Buffer): Buffer {
    if (rest !== undefined) this.pieces.push(rest)
    const whole = this.pieces.length === 1 ? this.pieces[0] : Buffer.concat(this.pieces, this.length + (rest?.length ?? 0))
    this.pieces = []
    this.length = 0
    return whole
  }
}

/**
 * Text longer than this is decoded in pieces that end at a newline: V8 puts a string over about
 * 128 KiB (64 Ki UTF-16 units) straight into its old generation, where it outlives the chunk
 * until a full collection, so whole-chunk strings made the heap grow with the input.
 */
const DECODE_BYTES = 1 << 15

/** The newline-separated lines of valid UTF-8 bytes, decoded a few KiB at a time. */
function splitDecoded(bytes: Buffer): string[] {
  if (bytes.length <= DECODE_BYTES) return bytes.toString('utf8').split('\n')
  const lines: string[] = []
  for (let start = 0; ; ) {
    const newline = start + DECODE_BYTES >= bytes.length ? -1 : bytes.indexOf(10, start + DECODE_BYTES)
    const end = newline === -1 ? bytes.length : newline
    const piece = bytes.toString('utf8', start, end).split('\n')
    for (let n = 0; n < piece.length; n++) lines.push(piece[n])
    if (newline === -1) return lines
    start = newline + 1
  }
}

/**
 * The one JSONL line reader. Reads a file chunk by chunk and hands back its lines a chunk at a
 * time, so memory holds one chunk, the lines decoded from it and a partial last line (at most
 * maxLineBytes), however long the file is. It applies the byte-level part of the input policy:
 * invalid UTF-8, a byte order mark and over-long lines throw JsonlPolicyError with the line.
 * Optionally hashes every byte read (sha256).
 */
export class LineReader {
  private readonly buffer = Buffer.allocUnsafe(CHUNK_BYTES)
  private readonly carry = new Carry()
  private carryOffset = 0
  private position = 0
  private lineNo = 0
  private done = false
  private lastByte = -1
  private readonly hash?: Hash
  private readonly maxLineBytes: number

  private constructor(
    private readonly handle: fsp.FileHandle,
    options: LineReaderOptions,
  ) {
    if (options.hash) this.hash = createHash('sha256')
    this.maxLineBytes = options.maxLineBytes ?? maxLineBytes()
  }

  static async open(file: string, options: LineReaderOptions = {}): Promise<LineReader> {
    return new LineReader(await fsp.open(file, 'r'), options)
  }

  /** The chunk just read: refuse a byte order mark at the start of the file. */
  private checkStart(chunk: Buffer): void {
    if (this.position === 0 && chunk.length >= 3 && chunk[0] === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf) {
      throw new JsonlPolicyError(1, POLICY_MESSAGES.bom, POLICY_MESSAGES.bomHint)
    }
  }

  /** The unfinished line has grown to bytes: refuse it once it passes the limit, before holding more. */
  private checkLength(bytes: number, line: number): void {
    if (bytes > this.maxLineBytes) throw new JsonlPolicyError(line, POLICY_MESSAGES.lineTooLong(this.maxLineBytes), POLICY_MESSAGES.lineTooLongHint)
  }

  private decode(bytes: Buffer, line: number): string {
    if (!isUtf8(bytes)) throw new JsonlPolicyError(line, POLICY_MESSAGES.utf8)
    return bytes.toString('utf8')
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
      if (this.carry.length > 0) {
        const line = ++this.lineNo
        const bytes = this.carry.take()
        lines.push({line, text: this.decode(bytes, line), offset: this.carryOffset, bytes: bytes.length})
      }
      return lines.length > 0 ? lines : undefined
    }
    const chunk = this.buffer.subarray(0, bytesRead)
    this.checkStart(chunk)
    this.hash?.update(chunk)
    this.lastByte = chunk[bytesRead - 1]
    const chunkOffset = this.position
    this.position += bytesRead
    let start = 0
    for (let newline = chunk.indexOf(10); newline !== -1; newline = chunk.indexOf(10, start)) {
      const line = ++this.lineNo
      if (this.carry.length > 0) {
        this.checkLength(this.carry.length + newline - start, line)
        const bytes = this.carry.take(chunk.subarray(start, newline))
        lines.push({line, text: this.decode(bytes, line), offset: this.carryOffset, bytes: bytes.length})
      } else {
        this.checkLength(newline - start, line)
        lines.push({line, text: this.decode(chunk.subarray(start, newline), line), offset: chunkOffset + start, bytes: newline - start})
      }
      start = newline + 1
    }
    if (start < bytesRead) {
      // the buffer is reused: keep a copy of the unfinished line
      const rest = Buffer.from(chunk.subarray(start))
      this.checkLength(this.carry.length + rest.length, this.lineNo + 1)
      if (this.carry.length === 0) this.carryOffset = chunkOffset + start
      this.carry.append(rest)
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
    const bytes = await this.nextBlock()
    if (bytes === undefined) return undefined
    if (bytes === null) return []
    if (this.done) {
      this.lineNo++
      return [bytes.toString('utf8')]
    }
    const lines = splitDecoded(bytes)
    this.checkLengths(lines)
    this.finishBlock(lines.length)
    return lines
  }

  /**
   * Start the next chunk's lines without decoding them; nextByteLine() then hands them out one
   * at a time. False at the end of the file.
   */
  async nextByteBlock(): Promise<boolean> {
    const bytes = await this.nextBlock(false)
    if (bytes === undefined) return false
    this.block = bytes === null || (this.carriedLine !== undefined && this.carriedLineOnly) ? undefined : bytes
    this.blockAt = 0
    // the final unfinished line, and a chunk that completes no line, leave no carry to check
    this.finishPending = bytes !== null && !this.done
    return true
  }

  /**
   * The current block's next line, as a view of the reader's buffers (valid until the next
   * nextByteBlock()), already checked to be valid UTF-8 and within the length limit; undefined
   * once the block is used up. Lines are split as they are asked for, so no object is held per
   * line: a chunk's worth of line views outlived young collections, and the survivors made V8
   * grow its young generation to the maximum on long inputs. lineNumber is the line's number.
   */
  nextByteLine(): Buffer | undefined {
    const head = this.carriedLine
    if (head !== undefined) {
      this.carriedLine = undefined
      this.checkLength(head.length, this.lineNo + 1)
      this.lineNo++
      return head
    }
    const block = this.block
    if (block === undefined) {
      if (this.finishPending) {
        this.finishPending = false
        this.finishBlock(0)
      }
      return undefined
    }
    const start = this.blockAt
    const newline = block.indexOf(10, start)
    const end = newline === -1 ? block.length : newline
    this.checkLength(end - start, this.lineNo + 1)
    this.lineNo++
    if (newline === -1) this.block = undefined
    else this.blockAt = newline + 1
    return block.subarray(start, end)
  }

  /** Number of the line nextByteLine() returned last. */
  get lineNumber(): number {
    return this.lineNo
  }

  private block: Buffer | undefined
  private blockAt = 0
  private finishPending = false

  /**
   * Read the next chunk: the bytes of its complete lines (newline-separated, valid UTF-8, in
   * lastBytes too), null when it completes none, undefined at the end of the file. At the end
   * the unfinished last line is returned as a block of its own, with done set.
   */
  private async nextBlock(joinCarried = true): Promise<Buffer | null | undefined> {
    if (this.done) return undefined
    const ahead = this.ahead
    this.ahead = undefined
    const {buffer, bytesRead} = await (ahead ?? this.readChunk())
    this.firstLine = this.lineNo + 1
    this.lastBytes = undefined
    this.carriedLine = undefined
    if (bytesRead === 0) {
      this.done = true
      if (this.carry.length === 0) return undefined
      const bytes = this.carry.take()
      if (!isUtf8(bytes)) throw new JsonlPolicyError(this.lineNo + 1, POLICY_MESSAGES.utf8)
      this.lastBytes = bytes
      return bytes
    }
    const chunk = buffer.subarray(0, bytesRead)
    this.checkStart(chunk)
    this.hash?.update(chunk)
    this.lastByte = chunk[bytesRead - 1]
    this.position += bytesRead
    const last = chunk.lastIndexOf(10)
    if (last === -1) {
      this.checkLength(this.carry.length + chunk.length, this.lineNo + 1)
      this.carry.append(Buffer.from(chunk))
      this.readAhead()
      return null
    }
    let bytes: Buffer
    if (this.carry.length === 0) {
      bytes = chunk.subarray(0, last)
    } else if (joinCarried) {
      bytes = this.carry.take(chunk.subarray(0, last))
    } else {
      // only the carried line is joined: joining it to the whole block would copy the chunk again
      const first = chunk.indexOf(10)
      this.carriedLine = this.carry.take(chunk.subarray(0, first))
      if (!isUtf8(this.carriedLine)) throw new JsonlPolicyError(this.lineNo + 1, POLICY_MESSAGES.utf8)
      this.carriedLineOnly = first === last
      bytes = chunk.subarray(first + 1, last)
    }
    if (!isUtf8(bytes)) this.throwFirstBadLine(bytes, this.carriedLine === undefined ? 0 : 1)
    this.lastBytes = this.carriedLine === undefined ? bytes : undefined
    if (last + 1 < bytesRead) this.carry.append(Buffer.from(chunk.subarray(last + 1)))
    // the next chunk is read into the other buffer while the caller works on these lines
    this.readAhead()
    return bytes
  }

  /** A block's `lines` lines are counted; refuse the unfinished line left over if it is too long already. */
  private finishBlock(lines: number): void {
    if (this.carry.length > 0) this.checkLength(this.carry.length, this.lineNo + lines + 1)
    this.lineNo += lines
  }

  /** Refuse any decoded line over the limit (a UTF-16 unit is 1 to 3 UTF-8 bytes, so most need no count). */
  private checkLengths(lines: string[]): void {
    for (let n = 0; n < lines.length; n++) {
      const units = lines[n].length
      if (units * 3 > this.maxLineBytes) this.checkLength(units > this.maxLineBytes ? units : Buffer.byteLength(lines[n]), this.lineNo + 1 + n)
    }
  }

  /** The first line of `bytes` that is not UTF-8, numbered after `before` lines of the block. */
  private throwFirstBadLine(bytes: Buffer, before = 0): never {
    let start = 0
    for (let n = 1 + before; ; n++) {
      const newline = bytes.indexOf(10, start)
      const end = newline === -1 ? bytes.length : newline
      if (!isUtf8(bytes.subarray(start, end)) || newline === -1) throw new JsonlPolicyError(this.lineNo + n, POLICY_MESSAGES.utf8)
      start = newline + 1
    }
  }

  /** Line number of the first line nextTexts() returned last. */
  firstLine = 1

  /** sha256 (hex) of every byte read; complete once next() returned undefined. */
  digest(): string {
    if (!this.hash) throw new Error('LineReader opened without hash')
    return this.hash.digest('hex')
  }

  /**
   * The bytes the lines nextTexts() returned last were decoded from (newline-separated, without
   * the unfinished last line). Valid until the next call: the reader reuses its buffers.
   */
  lastBytes: Buffer | undefined

  /**
   * nextByteBlock(): the line carried over from the previous chunk and completed by this one,
   * held on its own rather than joined to the block (nextByteLine() hands it out first, then
   * clears it); carriedLineOnly when it is the block's only line.
   */
  private carriedLine: Buffer | undefined
  private carriedLineOnly = false

  /** The read of the next chunk, started before the caller asked for it (nextTexts only). */
  private ahead: Promise<{buffer: Buffer; bytesRead: number}> | undefined
  /** nextTexts() reads into these in turn, so that lastBytes stays intact during a read ahead. */
  private readonly buffers = [this.buffer, Buffer.allocUnsafe(CHUNK_BYTES)]
  private turn = 0

  private async readChunk(): Promise<{buffer: Buffer; bytesRead: number}> {
    const buffer = this.buffers[this.turn]
    this.turn ^= 1
    const {bytesRead} = await this.handle.read(buffer, 0, CHUNK_BYTES, this.position)
    return {buffer, bytesRead}
  }

  private readAhead(): void {
    const read = this.readChunk()
    // a failed read ahead is reported by the nextTexts() that takes it, or dropped by close()
    read.catch(() => undefined)
    this.ahead = read
  }

  async close(): Promise<void> {
    await this.ahead?.catch(() => undefined)
    this.ahead = undefined
    await this.handle.close().catch(() => undefined)
  }
}

