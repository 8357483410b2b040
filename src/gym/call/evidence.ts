import {constants, promises as fsp} from 'node:fs'
import path from 'node:path'

import {codeOf, GymError, messageOf, ExitCode} from '../../errors.js'
import {type DirLock, lockDirectory} from '../../runtime/dir-lock.js'
import {BackgroundSync, createFolders, writeFileAtomic} from '../../runtime/fs.js'
import {LineReader} from '../../json/jsonl-reader.js'
import type {AttemptWriter} from './lifecycle/index.js'

export const JOURNAL_FILE = 'journal.jsonl'
export const ATTEMPTS_DIR = 'attempts'
export const SUMMARY_FILE = 'summary.json'
export const JOURNAL_SCHEMA = 'gymrecipe.call.journal/1'

export interface JournalHeader {
  journal: typeof JOURNAL_SCHEMA
  command: string
  column: string
  config_sha256: string
  input_sha256: string
  rows: number
  started_at: string
}

/**
 * The rows an earlier run recorded as finished. Only where each row's columns
 * sit in the journal is kept in memory (12 bytes per input row); the columns
 * are read back when the output needs them.
 */
export interface RecordedRows {
  /** How many input rows the journal records as finished. */
  readonly size: number
  has(index: number): boolean
  /** The recorded output columns of a finished row, as compact JSON. */
  read(index: number): Promise<string>
  close(): Promise<void>
}

const NO_ROWS: RecordedRows = {
  size: 0,
  has: () => false,
  read: () => Promise.reject(new Error('no recorded rows')),
  close: async () => undefined,
}

/**
 * The evidence directory of one run:
 *   attempts/<segment>.jsonl  one line per attempt (native request/response, lifecycle); the
 *                             envelope's `artifact` is "attempts/<segment>.jsonl:<line>"
 *   journal.jsonl             header + one line per finished row, appended as rows finish
 *   summary.json              the run summary (no secrets)
 * Each invocation (a run, each --resume) appends to its own segment; segments
 * rotate at 256 MiB. Attempts go to append-only logs rather than one file per
 * attempt because creating tens of thousands of small files costs far more
 * than the calls themselves on many filesystems. The journal is what
 * `--resume` reads; journal and segments are synced as they grow (every 4 MiB), every second
 * and at the end.
 */
export class EvidenceDir implements AttemptWriter {
  private journal?: fsp.FileHandle
  private pending: Promise<void> = Promise.resolve()
  private buffer: string[] = []
  private syncTimer?: NodeJS.Timeout
  private readonly journalSyncs = new BackgroundSync(SYNC_BYTES)
  private failure?: Error
  private recorded: RecordedRows = NO_ROWS
  private readonly attempts: AttemptLog
  private lock?: DirLock

  private constructor(readonly dir: string) {
    this.attempts = new AttemptLog(path.join(dir, ATTEMPTS_DIR))
  }

  /**
   * Prepare the directory. A fresh run refuses a directory that already holds a
   * journal with finished rows; `resume` reads it back after checking that the
   * command, column, config and input are the same.
   */
  static async open(
    dir: string,
    header: JournalHeader,
    resume: boolean,
    onRecorded?: (columns: Record<string, unknown>) => void,
  ): Promise<{evidence: EvidenceDir; previous: RecordedRows; resumedFromJournal: boolean}> {
    await createFolders(dir).catch((error: unknown) => {
      // A file where a folder must go is the path given; the system's own error (read-only file
      // system, no permission, no space) is the machine's, and names the folder.
      const code = codeOf(error)
      if (code !== 'ENOTDIR' && code !== 'EEXIST') throw error
      throw new GymError(`evidence directory ${dir} cannot be created: a file is in the way (${code})`, {
        code: 'E_CALL_EVIDENCE_UNWRITABLE',
        exit: ExitCode.usage,
        hint: 'pass an --evidence-dir whose parents are folders',
        location: {file: dir},
      })
    })
    try {
      await fsp.access(dir, constants.W_OK)
    } catch (error) {
      throw new GymError(`evidence directory ${dir} cannot be written (${codeOf(error) ?? messageOf(error)})`, {
        code: 'E_CALL_EVIDENCE_UNWRITABLE',
        exit: ExitCode.failure,
        hint: 'pass an --evidence-dir on a writable filesystem',
        location: {file: dir},
      })
    }
    // One run per folder: two runs on one journal would call the same rows twice.
    const lock = await lockDirectory(dir, `gymrecipe ${header.command} call`)
    try {
      const opened = await EvidenceDir.openLocked(dir, header, resume, onRecorded)
      opened.evidence.lock = lock
      return opened
    } catch (error) {
      await lock.release()
      throw error
    }
  }

  private static async openLocked(
    dir: string,
    header: JournalHeader,
    resume: boolean,
    onRecorded?: (columns: Record<string, unknown>) => void,
  ): Promise<{evidence: EvidenceDir; previous: RecordedRows; resumedFromJournal: boolean}> {
    const journalPath = path.join(dir, JOURNAL_FILE)
    let size = 0
    try {
      size = (await fsp.stat(journalPath)).size
    } catch (error) {
      if (codeOf(error) !== 'ENOENT') throw journalError(journalPath, error)
    }
    let previous: RecordedRows = NO_ROWS
    let resumedFromJournal = false
    let endsWithNewline = true
    if (size > 0) {
      const scanned = await scanJournal(journalPath, header, resume, onRecorded)
      if (scanned) {
        previous = scanned.recorded
        endsWithNewline = scanned.endsWithNewline
        resumedFromJournal = true
      }
    }
    const evidence = new EvidenceDir(dir)
    evidence.recorded = previous
    try {
      evidence.journal = await fsp.open(journalPath, 'a')
      if (!resumedFromJournal) {
        await evidence.journal.write(`${JSON.stringify(header)}\n`)
        await evidence.journal.sync()
      } else if (!endsWithNewline) {
        // a line cut short by a killed run must not swallow the next record
        await evidence.journal.write('\n')
      }
    } catch (error) {
      await evidence.journal?.close().catch(() => undefined)
      await previous.close()
      throw journalError(journalPath, error)
    }
    evidence.syncTimer = setInterval(() => evidence.sync(), 1000)
    evidence.syncTimer.unref()
    return {evidence, previous, resumedFromJournal}
  }

  writeAttempt(_attemptId: string, text: string): Promise<string> {
    const queued = this.attempts.append(text)
    return queued.written.then(() => queued.ref)
  }

  appendAttempt(text: string): {ref: string; written: Promise<void>} {
    return this.attempts.append(text)
  }

  /** No further row will start: what the last rows append is written at once, not batched. */
  inputDone(): void {
    this.attempts.writeAtOnce()
  }

  /** Characters of attempt lines queued or being written. */
  get pendingChars(): number {
    return this.attempts.pendingChars
  }

  /** Record a finished row; writes are batched and kept in order. */
  recordFinished(index: number, line: number, attemptId: string | undefined, columnsText: string): void {
    this.buffer.push(`{"i":${index},"line":${line},"attempt_id":${JSON.stringify(attemptId ?? null)},"columns":${columnsText}}\n`)
    // Rows finish together, when the attempt batch that carries them is written: one journal
    // write per turn of the event loop is one per batch, and the lines wait no longer than that.
    if (this.buffer.length === 1) setImmediate(() => (this.pending = this.pending.then(() => this.drain())))
  }

  /** The first journal write error, if any (the run stops on it). */
  get error(): Error | undefined {
    return this.failure
  }

  async close(): Promise<void> {
    if (this.syncTimer) clearInterval(this.syncTimer)
    await this.recorded.close()
    // the journal lines still to write are of rows whose attempts are written, so both files finish side by side
    await Promise.all([this.attempts.close(), this.closeJournal()])
    if (this.failure) throw journalError(path.join(this.dir, JOURNAL_FILE), this.failure)
  }

  private async closeJournal(): Promise<void> {
    await this.pending
    if (this.buffer.length > 0) await this.drain()
    if (this.journal) {
      await this.journalSyncs.finish(this.journal).catch(() => undefined)
      await this.journal.close()
      this.journal = undefined
    }
  }

  /** Free the folder for the next run (after the summary: it is part of this run's evidence). */
  async release(): Promise<void> {
    await this.lock?.release()
    this.lock = undefined
  }

  async writeSummary(summary: unknown): Promise<void> {
    await writeFileAtomic(path.join(this.dir, SUMMARY_FILE), `${JSON.stringify(summary, null, 2)}\n`)
  }

  private async drain(): Promise<void> {
    const text = this.buffer.join('')
    this.buffer = []
    if (!this.journal || text === '' || this.failure) return
    try {
      await this.journal.write(text)
      this.journalSyncs.wrote(this.journal, text.length)
    } catch (error) {
      this.failure = error as Error
    }
  }

  private sync(): void {
    this.attempts.sync()
    this.journalSyncs.now(this.journal)
  }
}

/** Unsynced bytes of an evidence file that start a background sync (the call output uses it too). */
export const SYNC_BYTES = 4 * 1024 * 1024

const SEGMENT_BYTES = 256 * 1024 * 1024
/** Appends are collected for this long and written together (each write is a syscall and a thread-pool round trip). */
export const FLUSH_MS = 10

/**
 * Append-only attempt segments. Lines are numbered when queued and written in
 * queue order, batched per turn of the event loop; each append resolves with
 * its "attempts/<segment>.jsonl:<line>" reference once its batch is written.
 * A segment that cannot be opened or written fails the attempts concerned
 * (artifact storage failures), never the run.
 */
class AttemptLog {
  private handle?: fsp.FileHandle
  private segment = ''
  private refPrefix = ''
  private segmentIndex = 0
  private line = 0
  private bytes = 0
  /** Texts waiting for the next write, by segment, with the promise of that write. */
  private queue: {segment: string; text: string; batch: Batch}[] = []
  private writing: Promise<void> = Promise.resolve()
  private readonly syncs = new BackgroundSync(SYNC_BYTES)
  private timer: NodeJS.Timeout | undefined
  /** Once the input is read: batches are written at the next turn of the event loop. */
  private atOnce = false
  /** Characters of lines queued or being written (what rows waiting for their evidence hold). */
  pendingChars = 0
  private readonly stamp = new Date().toISOString().replace(/[-:]/gu, '').replace(/\.\d+Z$/u, 'Z')

  constructor(private readonly dir: string) {}

  /** Queue one attempt line: its reference now, and the promise of the batch write that carries it. */
  append(text: string): {ref: string; written: Promise<void>} {
    if (this.segment === '' || this.bytes > SEGMENT_BYTES) this.rotate()
    this.line++
    this.bytes += text.length + 1
    this.pendingChars += text.length + 1
    let last = this.queue.length > 0 ? this.queue[this.queue.length - 1] : undefined
    if (!last || last.segment !== this.segment) {
      if (this.queue.length === 0) {
        if (this.atOnce) setImmediate(this.startFlush)
        else this.timer = setTimeout(this.startFlush, FLUSH_MS)
      }
      last = {segment: this.segment, text: '', batch: new Batch()}
      this.queue.push(last)
    }
    last.text += `${text}\n`
    return {ref: `${this.refPrefix}${this.line}`, written: last.batch.promise}
  }

  /**
   * The last rows are in flight and nothing waits for the batch to fill: the rows still
   * waiting for it are written now, and each later append at the next turn.
   */
  writeAtOnce(): void {
    this.atOnce = true
    if (this.timer === undefined) return
    clearTimeout(this.timer)
    this.startFlush()
  }

  private readonly startFlush = (): void => {
    this.timer = undefined
    this.writing = this.writing.then(() => this.flush())
  }

  sync(): void {
    this.syncs.now(this.handle)
  }

  async close(): Promise<void> {
    await this.writing
    if (this.queue.length > 0) await this.flush()
    if (this.handle) {
      await this.syncs.finish(this.handle).catch(() => undefined)
      await this.handle.close().catch(() => undefined)
      this.handle = undefined
    }
  }

  private rotate(): void {
    this.segmentIndex++
    this.segment = `${this.stamp}-${process.pid}${this.segmentIndex > 1 ? `-${this.segmentIndex}` : ''}.jsonl`
    this.refPrefix = `${ATTEMPTS_DIR}/${this.segment}:`
    this.line = 0
    this.bytes = 0
  }

  private async flush(): Promise<void> {
    const parts = this.queue
    this.queue = []
    for (const part of parts) {
      try {
        const handle = await this.open(part.segment)
        await handle.write(part.text)
        this.syncs.wrote(handle, part.text.length)
        part.batch.resolve()
      } catch (error) {
        part.batch.reject(error as Error)
      } finally {
        this.pendingChars -= part.text.length
      }
    }
  }

  private openSegment = ''
  private async open(segment: string): Promise<fsp.FileHandle> {
    if (this.handle && this.openSegment === segment) return this.handle
    if (this.handle) {
      const old = this.handle
      this.handle = undefined
      await this.syncs.finish(old).catch(() => undefined)
      await old.close().catch(() => undefined)
    }
    await fsp.mkdir(this.dir, {recursive: true})
    this.handle = await fsp.open(path.join(this.dir, segment), 'a')
    this.openSegment = segment
    return this.handle
  }
}

/** One write shared by the attempts it carries. */
class Batch {
  readonly promise: Promise<void>
  resolve!: () => void
  reject!: (error: Error) => void

  constructor() {
    this.promise = new Promise<void>((resolve, reject) => {
      this.resolve = resolve
      this.reject = reject
    })
    // a failed batch is reported to each of its attempts; never an unhandled rejection
    this.promise.catch(() => undefined)
  }
}

function journalError(file: string, error: unknown): GymError {
  return new GymError(`cannot write the call journal ${file} (${codeOf(error) ?? messageOf(error)})`, {
    code: 'E_CALL_EVIDENCE_UNWRITABLE',
    exit: ExitCode.failure,
    hint: 'check free space and permissions of the evidence directory; finished rows recorded so far are kept for --resume',
    location: {file},
  })
}

/**
 * Read a journal back without holding it: the header is checked against this
 * run, then each complete record's position is noted and its columns handed
 * to onRecorded. A fresh run (no resume) refuses any non-blank journal.
 * Returns undefined for a blank journal.
 */
async function scanJournal(
  file: string,
  expected: JournalHeader,
  resume: boolean,
  onRecorded?: (columns: Record<string, unknown>) => void,
): Promise<{recorded: RecordedRows; endsWithNewline: boolean} | undefined> {
  let reader: LineReader
  try {
    reader = await LineReader.open(file)
  } catch (error) {
    throw journalError(file, error)
  }
  const offsets = new Float64Array(expected.rows).fill(-1)
  const lengths = new Uint32Array(expected.rows)
  let count = 0
  let firstLine: string | undefined
  let nonBlank = false
  try {
    for (let lines = await reader.next(); lines; lines = await reader.next()) {
      for (const {line, text, offset, bytes} of lines) {
        if (line === 1) firstLine = text
        if (text.trim() === '') continue
        if (!nonBlank) {
          nonBlank = true
          // a fresh run refuses any journal; a resume checks that it is this run's
          if (!resume) throw evidenceExists(file)
          checkHeader(file, firstLine ?? '', expected)
        }
        if (line === 1) continue
        // A line cut short by a killed process is ignored: that row runs again.
        const prefix = RECORD_PREFIX.exec(text)
        if (!prefix || !text.endsWith('}')) continue
        const index = Number(prefix[1])
        if (!Number.isSafeInteger(index) || index >= expected.rows || offsets[index] !== -1) continue
        const columnsText = text.slice(prefix[0].length, -1)
        let columns: unknown
        try {
          columns = JSON.parse(columnsText)
        } catch {
          continue
        }
        if (typeof columns !== 'object' || columns === null || Array.isArray(columns)) continue
        const prefixBytes = Buffer.byteLength(prefix[0])
        offsets[index] = offset + prefixBytes
        lengths[index] = bytes - prefixBytes - 1
        count++
        onRecorded?.(columns as Record<string, unknown>)
      }
    }
  } catch (error) {
    if (error instanceof GymError) throw error
    throw journalError(file, error)
  } finally {
    await reader.close()
  }
  if (!nonBlank) return undefined
  return {recorded: await journalRows(file, offsets, lengths, count), endsWithNewline: reader.endsWithNewline}
}

function evidenceExists(file: string): GymError {
  return new GymError(`evidence directory ${path.dirname(file)} already holds a call journal`, {
    code: 'E_CALL_EVIDENCE_EXISTS',
    exit: ExitCode.usage,
    hint: 'add --resume to continue that run (finished rows are not called again), or pass a fresh --evidence-dir',
    location: {file},
  })
}

const RECORD_PREFIX = /^\{"i":(\d+),"line":\d+,"attempt_id":(?:null|"[^"]*"),"columns":/u

function checkHeader(file: string, text: string, expected: JournalHeader): void {
  let header: JournalHeader
  try {
    header = JSON.parse(text)
  } catch {
    throw new GymError(`${file}: the first line is not a journal header`, {code: 'E_CALL_JOURNAL_INVALID', exit: ExitCode.usage, hint: 'pass a fresh --evidence-dir', location: {file, line: 1}})
  }
  const mismatch = (['journal', 'command', 'column', 'config_sha256', 'input_sha256', 'rows'] as const).find((k) => header[k] !== expected[k])
  if (mismatch) {
    const what: Record<string, string> = {
      journal: 'journal format',
      command: 'command (call resource vs call harness)',
      column: 'column name',
      config_sha256: 'config (request, session, response fields)',
      input_sha256: 'input rows file',
      rows: 'number of input rows',
    }
    throw new GymError(`cannot resume: the ${what[mismatch]} differs from the interrupted run recorded in ${file}`, {
      code: 'E_CALL_RESUME_MISMATCH',
      exit: ExitCode.usage,
      hint: 'resume with the same rows file and config (only max_parallel_requests, timeout, queue_timeout and cleanup_timeout may change), or pass a fresh --evidence-dir',
      location: {file, line: 1},
      details: {field: mismatch},
    })
  }
}

const READ_BLOCK = 1 << 20

/** Recorded rows read back through a 1 MiB window (records are mostly in input order, so most reads hit it). */
async function journalRows(file: string, offsets: Float64Array, lengths: Uint32Array, size: number): Promise<RecordedRows> {
  if (size === 0) return NO_ROWS
  const handle = await fsp.open(file, 'r')
  let block = Buffer.alloc(0)
  let blockStart = 0
  return {
    size,
    has: (index) => index < offsets.length && offsets[index] !== -1,
    async read(index) {
      const start = offsets[index]
      const length = lengths[index]
      if (start === -1 || start === undefined) throw new Error(`row ${index} is not recorded`)
      if (start < blockStart || start + length > blockStart + block.length) {
        const want = Math.max(length, READ_BLOCK)
        const buffer = Buffer.allocUnsafe(want)
        const {bytesRead} = await handle.read(buffer, 0, want, start)
        block = buffer.subarray(0, bytesRead)
        blockStart = start
        if (bytesRead < length) throw new Error(`journal ${file} is shorter than recorded`)
      }
      return block.toString('utf8', start - blockStart, start - blockStart + length)
    },
    close: () => handle.close().catch(() => undefined),
  }
}
