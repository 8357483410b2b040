/**
 * JSONL files for the task and rollout commands: streamed line by line under the input policy,
 * every problem reported with its file and line, and outputs written atomically (a failed or
 * interrupted run leaves the previous file, never half a new one).
 */
import {once} from 'node:events'
import {promises as fsp} from 'node:fs'
import {finished} from 'node:stream/promises'

import {ExitCode, GymError} from '../errors.js'
import {openAtomicTarget} from '../runtime/fs.js'
import {mayHoldNonFinite, nestsDeeperThan, POLICY_MESSAGES} from './input-policy.js'
import {type ScannedBytes, scanObjectBytes} from './byte-scan.js'
import {inputError} from './errors.js'
import {JsonPolicyViolation, JsonSyntaxError, type ScannedObject, scanObjectMembers} from './text-scan.js'
import {findNonFinite, isJsonObject, type JsonObject, type JsonValue, parseJson} from './values.js'
import {JsonlPolicyError, LineReader} from './jsonl-reader.js'

// JSONL reading.

export interface JsonlLine {
  /** 1-based line number in the file; blank lines are counted but not yielded. */
  line: number
  text: string
  /**
   * The line's UTF-8 bytes (readJsonlBatches with `bytes`), a view into the reader's buffer:
   * valid until the next batch is asked for, so copy what must outlive the batch.
   */
  bytes?: Buffer
}

/** Fail early (exit 2) unless path is an existing regular file; returns its size in bytes. */
export async function assertJsonlFile(file: string, flag: string): Promise<number> {
  const stat = await fsp.stat(file).catch(() => undefined)
  if (stat?.isFile()) return stat.size
  const what = stat === undefined ? undefined : stat.isDirectory() ? 'a directory' : stat.isFIFO() ? 'a pipe' : stat.isCharacterDevice() ? 'a character device' : 'not a regular file'
  throw new GymError(what === undefined ? `JSONL file does not exist: ${file}` : `${file} is ${what}, not a JSONL file`, {
    code: what === undefined ? 'E_JSONL_MISSING' : 'E_JSONL_NOT_FILE',
    exit: ExitCode.usage,
    hint: what === undefined ? `Check the path given to ${flag}.` : `Pass a regular file to ${flag} (inputs are read more than once; save a stream to a file first).`,
    location: {field: flag},
  })
}

const BLANK = /^\s*$/

/** How far a read has come; told once per chunk (about every 256 KiB). */
export interface ReadProgress {
  file: string
  bytes: number
  totalBytes: number
  /** Lines before the chunk now being read. */
  lines: number
}

/**
 * Stream the non-blank lines of a JSONL file (a trailing CR dropped) through the one line reader,
 * so the input policy's byte-level rules hold: memory holds one chunk plus the current line.
 */
export async function* readJsonlLines(file: string, flag: string, onProgress?: (progress: ReadProgress) => void): AsyncGenerator<JsonlLine> {
  for await (const batch of readJsonlBatches(file, flag, onProgress)) yield* batch
}

/**
 * readJsonlLines a chunk (about 256 KiB) at a time: one await per chunk instead of one per line.
 * With `bytes`, each line also carries its bytes (see JsonlLine.bytes); `text: false` skips
 * decoding as well, and yields a ByteBatch per chunk, whose lines' text is decoded only if read.
 */
export function readJsonlBatches(file: string, flag: string, onProgress?: (progress: ReadProgress) => void, options?: {bytes?: boolean; text?: true}): AsyncGenerator<JsonlLine[]>
export function readJsonlBatches(file: string, flag: string, onProgress: ((progress: ReadProgress) => void) | undefined, options: {bytes: true; text: false}): AsyncGenerator<ByteBatch>
export async function* readJsonlBatches(file: string, flag: string, onProgress?: (progress: ReadProgress) => void, options: {bytes?: boolean; text?: boolean} = {}): AsyncGenerator<JsonlLine[] | ByteBatch> {
  const totalBytes = await assertJsonlFile(file, flag)
  const reader = await LineReader.open(file)
  const progress = () => onProgress?.({file, bytes: reader.bytesRead, totalBytes, lines: reader.firstLine - 1})
  try {
    if (options.text === false) {
      const batch = new ByteBatch(reader, file)
      while (await policyChecked(reader.nextByteBlock(), file)) {
        progress()
        yield batch
      }
      return
    }
    for (let texts = await policyChecked(reader.nextTexts(), file); texts; texts = await policyChecked(reader.nextTexts(), file)) {
      const first = reader.firstLine
      progress()
      const batch: JsonlLine[] = []
      const all = options.bytes ? reader.lastBytes : undefined
      let start = 0
      for (let n = 0; n < texts.length; n++) {
        const cr = texts[n].endsWith('\r')
        const text = cr ? texts[n].slice(0, -1) : texts[n]
        let bytes: Buffer | undefined
        if (all) {
          const newline = all.indexOf(10, start)
          const end = newline === -1 ? all.length : newline
          bytes = all.subarray(start, cr ? end - 1 : end)
          start = end + 1
        }
        if (!BLANK.test(text)) batch.push(bytes ? {line: first + n, text, bytes} : {line: first + n, text})
      }
      if (batch.length > 0) yield batch
    }
  } finally {
    await reader.close()
  }
}

/** A line read as bytes (readJsonlBatches with `text: false`); its text is decoded when first read. */
export class ByteLine implements JsonlLine {
  private decoded?: string

  constructor(
    readonly line: number,
    readonly bytes: Buffer,
  ) {}

  get text(): string {
    this.decoded ??= this.bytes.toString('utf8')
    return this.decoded
  }
}

/**
 * One chunk's lines read as bytes, handed out one at a time by next(), blank lines skipped and a
 * trailing CR dropped. Nothing is held per line, so a line dies young unless its caller keeps it.
 * A line's bytes are valid until the next batch is asked for; so is the batch.
 */
export class ByteBatch {
  constructor(
    private readonly reader: LineReader,
    private readonly file: string,
  ) {}

  /** The next non-blank line, or undefined once the chunk is used up; throws E_JSONL_INVALID for a line the input policy refuses. */
  next(): ByteLine | undefined {
    for (;;) {
      let bytes: Buffer | undefined
      try {
        bytes = this.reader.nextByteLine()
      } catch (error) {
        throw policyError(error, this.file)
      }
      if (bytes === undefined) return undefined
      if (bytes[bytes.length - 1] === 0x0d) bytes = bytes.subarray(0, -1)
      const line = new ByteLine(this.reader.lineNumber, bytes)
      if (!isBlank(line)) return line
    }
  }
}

/** BLANK on a line's bytes: only a line of spaces and non-ASCII bytes needs decoding to tell. */
function isBlank(line: ByteLine): boolean {
  const {bytes} = line
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]
    if (byte === 0x20 || (byte >= 0x09 && byte <= 0x0d)) continue
    return byte < 0x80 ? false : BLANK.test(line.text)
  }
  return true
}

/** A line's bytes without the JSON whitespace around them (a valid JSON line has no other). */
export function trimJsonBytes(bytes: Buffer): Buffer {
  let start = 0
  let end = bytes.length
  while (start < end && isJsonSpace(bytes[start])) start++
  while (end > start && isJsonSpace(bytes[end - 1])) end--
  return start === 0 && end === bytes.length ? bytes : bytes.subarray(start, end)
}

function isJsonSpace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09
}

/** A read's result, its input-policy errors worded as E_JSONL_INVALID for the file. */
async function policyChecked<T>(read: Promise<T>, file: string): Promise<T> {
  try {
    return await read
  } catch (error) {
    throw policyError(error, file)
  }
}

function policyError(error: unknown, file: string): unknown {
  return error instanceof JsonlPolicyError ? inputError('E_JSONL_INVALID', error.message, {file, line: error.line}, error.hint) : error
}

/**
 * scanObjectLine for a line read as bytes: the same verdict, the members decoded only when read.
 * A line the byte scanner refuses is scanned as text, which throws the worded error.
 */
export function scanObjectByteLine(line: ByteLine, file: string): ScannedBytes {
  const scanned = scanObjectBytes(line.bytes)
  if (scanned) return scanned
  scanObjectLine(line, file)
  throw new Error(`${file}:${line.line}: the byte scanner refused a line the text scanner accepts`)
}

/** Validate a line as a JSON object and split it into raw members (see scanObjectMembers, also for `nested`). */
export function scanObjectLine({line, text}: JsonlLine, file: string, nested?: string): ScannedObject {
  let scanned: ScannedObject | undefined
  try {
    scanned = scanObjectMembers(text, nested)
  } catch (error) {
    if (!(error instanceof JsonSyntaxError)) throw error
    throw inputError('E_JSONL_INVALID', error instanceof JsonPolicyViolation ? error.message : `invalid JSON: ${error.message}`, {file, line})
  }
  if (!scanned) throw inputError('E_JSONL_INVALID', 'line must contain a JSON object', {file, line})
  return scanned
}

/** Parse a line losslessly as a JSON object. */
export function parseLosslessObjectLine({line, text}: JsonlLine, file: string): JsonObject {
  if (nestsDeeperThan(text)) throw inputError('E_JSONL_INVALID', POLICY_MESSAGES.nesting, {file, line})
  let value: JsonValue
  try {
    value = parseJson(text)
  } catch (error) {
    throw inputError('E_JSONL_INVALID', `invalid JSON: ${(error as Error).message}`, {file, line})
  }
  if (!isJsonObject(value)) throw inputError('E_JSONL_INVALID', 'line must contain a JSON object', {file, line})
  if (mayHoldNonFinite(text)) {
    const field = findNonFinite(value, '')
    if (field !== undefined) throw inputError('E_JSONL_INVALID', POLICY_MESSAGES.nonFinite, {file, line, field})
  }
  return value
}

// ---------------------------------------------------------------------------
// JSONL writing.

export interface JsonlOutput {
  /** Queue one line (without the newline); resolves when buffered data has been flushed. */
  write(line: string): Promise<void>
  /** write() for each line, with one promise for them all. */
  writeLines(lines: readonly string[]): Promise<void>
  /**
   * Append the lines a LineBuilder holds (what is copied from the input needs no decoding and
   * encoding again); the builder hands over its buffer and goes on in another.
   */
  writeBuilt(built: LineBuilder): Promise<void>
  /** Number of lines written so far. */
  readonly lines: number
  /** Flush, fsync and rename the temporary file over the target. */
  commit(): Promise<void>
  /** Drop everything written so far; the target is left untouched. */
  abort(): Promise<void>
}

/** Buffers a LineBuilder keeps for reuse: enough for those the output stream is still writing. */
const SPARE_BUFFERS = 4
/** Copies shorter than this are done byte by byte: TypedArray.set costs more than them. */
const SHORT_COPY = 48

/**
 * Copy source[start, end) to target at `at` (which has the room); the index after the copy.
 * Quicker than Buffer#copy, which checks its arguments and makes a view for every call.
 */
export function copyBytes(target: Uint8Array, at: number, source: Uint8Array, start = 0, end = source.length): number {
  if (end - start < SHORT_COPY) {
    for (let i = start; i < end; i++) target[at++] = source[i]
    return at
  }
  target.set(source.subarray(start, end), at)
  return at + end - start
}

/**
 * JSONL output lines assembled as bytes, for the commands that copy most of each line from their
 * input's bytes: one growing buffer, handed whole to JsonlOutput.writeBuilt, with no piece
 * objects or strings per line.
 */
export class LineBuilder {
  private buffer: Buffer
  /** Written buffers, ready to be used again (a few: the stream may hold more than one). */
  private readonly spares: Buffer[] = []
  private used = 0
  private lines = 0

  constructor(private readonly size = 1 << 20) {
    this.buffer = Buffer.allocUnsafe(size)
  }

  /** Append source[start, end). */
  bytes(source: Uint8Array, start = 0, end = source.length): void {
    if (this.used + end - start > this.buffer.length) this.grow(end - start)
    this.used = copyBytes(this.buffer, this.used, source, start, end)
  }

  /** Append text as UTF-8. */
  text(text: string): void {
    // a UTF-16 unit takes at most 3 bytes
    if (this.used + text.length * 3 > this.buffer.length) this.grow(text.length * 3)
    this.used += this.buffer.write(text, this.used)
  }

  /** End the current line (appends the newline). */
  endLine(): void {
    if (this.used === this.buffer.length) this.grow(1)
    this.buffer[this.used++] = 0x0a
    this.lines++
  }

  /**
   * The lines built so far, as bytes, and their count; the builder starts over in another buffer.
   * Call release() once the bytes are written: their buffer is then used again, so its pages
   * stay mapped (a fresh buffer per batch spent more time in page faults than in copying).
   */
  take(): {bytes: Buffer; lines: number; release: () => void} {
    const taken = this.buffer
    const release = () => {
      if (this.spares.length < SPARE_BUFFERS) this.spares.push(taken)
    }
    const result = {bytes: taken.subarray(0, this.used), lines: this.lines, release}
    this.buffer = this.spares.pop() ?? Buffer.allocUnsafe(this.size)
    this.used = 0
    this.lines = 0
    return result
  }

  private grow(needed: number): void {
    const next = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.used + needed))
    this.buffer.copy(next, 0, 0, this.used)
    this.buffer = next
  }
}

/** Lines are handed to the stream in pieces of this size (short-lived, like the reader's chunks). */
const CHUNK = 1 << 18
const NEWLINE = Buffer.from('\n')
/** Up to this much may wait in the stream, so writing overlaps with producing the next lines. */
const QUEUED = 1 << 20

/**
 * A JSONL output that becomes visible only on commit(): lines are streamed to
 * a temporary sibling (fsynced on close) and renamed at the end. A dry run
 * counts lines and writes nothing.
 */
export async function openJsonlOutput(target: string, dryRun: boolean): Promise<JsonlOutput> {
  if (dryRun) {
    let lines = 0
    return {
      get lines() {
        return lines
      },
      async write() {
        lines++
      },
      async writeLines(batch) {
        lines += batch.length
      },
      async writeBuilt(built) {
        const taken = built.take()
        taken.release()
        lines += taken.lines
      },
      async commit() {},
      async abort() {},
    }
  }
  const atomic = await openAtomicTarget(target)
  const stream = atomic.createStream({flush: !atomic.direct, highWaterMark: QUEUED})
  let failure: Error | undefined
  stream.on('error', (error) => (failure ??= error))
  let lines = 0
  // lines are encoded into this buffer as they come (no long strings that V8 would keep in its
  // old generation); the stream keeps each buffer it is given, so a new one follows
  let bytes = Buffer.allocUnsafe(CHUNK)
  let used = 0
  // written: called once the data has gone to the file (or failed to)
  const send = async (data: string | Buffer, written?: () => void) => {
    if (failure) throw failure
    if (!stream.write(data, written)) await once(stream, 'drain')
  }
  const sendBytes = async () => {
    if (used === 0) return
    const data = bytes.subarray(0, used)
    bytes = Buffer.allocUnsafe(CHUNK)
    used = 0
    await send(data)
  }
  // the most bytes a piece can take (a UTF-16 unit takes at most 3)
  const bound = (piece: string | Uint8Array) => (typeof piece === 'string' ? piece.length * 3 : piece.length)
  const append = (piece: string | Uint8Array) => {
    if (typeof piece === 'string') {
      used += bytes.write(piece, used)
    } else {
      bytes.set(piece, used)
      used += piece.length
    }
  }
  // a piece the buffer has no room for: what is buffered goes first, then the piece itself when
  // it is larger than a whole buffer (a copy of bytes: the caller's may be reused)
  const spill = async (piece: string | Uint8Array) => {
    await sendBytes()
    if (bound(piece) <= CHUNK) append(piece)
    else await send(typeof piece === 'string' ? piece : Buffer.from(piece))
  }
  const writeLines = async (batch: readonly string[]) => {
    // most lines fit: no promise for them
    for (let n = 0; n < batch.length; n++) {
      const line = batch[n]
      if (bound(line) <= CHUNK - used) append(line)
      else await spill(line)
      if (used < CHUNK) bytes[used++] = 0x0a
      else await spill(NEWLINE)
    }
    lines += batch.length
  }
  return {
    get lines() {
      return lines
    },
    write: (line: string) => writeLines([line]),
    writeLines,
    async writeBuilt(built: LineBuilder) {
      const taken = built.take()
      await sendBytes()
      await send(taken.bytes, taken.release)
      lines += taken.lines
    },
    async commit() {
      stream.end(bytes.subarray(0, used))
      await finished(stream)
      await atomic.commit()
    },
    async abort() {
      stream.destroy()
      await finished(stream).catch(() => undefined)
      await atomic.abort()
    },
  }
}

/** Run fill() against an output, committing on success and removing the temporary file on failure. */
export async function withJsonlOutput<T>(target: string, dryRun: boolean, fill: (output: JsonlOutput) => Promise<T>): Promise<T> {
  const output = await openJsonlOutput(target, dryRun)
  try {
    const result = await fill(output)
    await output.commit()
    return result
  } catch (error) {
    await output.abort()
    throw error
  }
}
