/**
 * Pass 2 of a call run: rows read again in order and called within a bounded window, their
 * output lines written in input order although rows finish out of order.
 */
import {parseFast} from '../../json/index.js'
import type {Writable} from 'node:stream'

import {ExitCode, GymError} from '../../errors.js'
import type {RecordedRows} from './evidence.js'
import {inputUnreadable, isEmptyObjectText} from './input.js'
import {type PreparedRow, prepareRow, type RowCallContext, runPreparedRow, type RowOutcome} from './lifecycle/index.js'
import type {Admission} from './limiter.js'
import {LineReader} from '../../json/jsonl-reader.js'

/** Output line: the input row's own text extended by the output columns. */
export function outputLine(raw: string, columnsText: string): string {
  const inner = columnsText.slice(1, -1)
  return isEmptyObjectText(raw) ? `{${inner}}\n` : `${raw.slice(0, -1)},${inner}}\n`
}

/**
 * Writes output lines in input order although rows finish out of order. A
 * line that finishes before an earlier row waits here; `pending` rows and
 * `pendingBytes` are what the run's ordering window bounds.
 */
export class OrderedOutput {
  private nextIndex = 0
  private readonly waiting = new Map<number, string>()
  private waitingBytes = 0
  private failure?: Error
  private buffered = ''

  constructor(private readonly stream: Writable) {
    stream.on('error', (error) => {
      this.failure ??= error
    })
  }

  /** The first index not written yet. */
  get next(): number {
    return this.nextIndex
  }

  /** Characters of finished lines waiting for an earlier row. */
  get pendingBytes(): number {
    return this.waitingBytes
  }

  put(index: number, line: string): void {
    let chunk: string
    if (index !== this.nextIndex) {
      this.waiting.set(index, line)
      this.waitingBytes += line.length
      return
    }
    chunk = line
    this.nextIndex++
    while (this.waiting.size > 0) {
      const next = this.waiting.get(this.nextIndex)
      if (next === undefined) break
      this.waiting.delete(this.nextIndex)
      this.waitingBytes -= next.length
      chunk += next
      this.nextIndex++
    }
    // written once per turn of the event loop, like the journal: the rows of an attempt batch finish together
    if (this.buffered === '') setImmediate(() => this.flush())
    this.buffered += chunk
  }

  private flush(): void {
    if (this.buffered === '') return
    this.stream.write(this.buffered)
    this.buffered = ''
  }

  get error(): Error | undefined {
    return this.failure
  }

  async close(): Promise<void> {
    this.flush()
    await new Promise<void>((resolve, reject) => {
      this.stream.end((error?: Error | null) => (error ? reject(error) : resolve()))
    })
    if (this.failure) throw this.failure
  }
}

/**
 * What a run holds in memory, whatever the length of the input:
 *   inFlight      rows started and not finished: the max_parallel_requests rows
 *                 holding a slot plus rows waiting for their evidence write
 *                 after cleanup (on a fast service, the rows of a few batches)
 *   evidenceChars characters of attempt artifacts queued or being written,
 *                 which those waiting rows hold (large responses)
 *   rows          rows between the oldest row whose output line is not written
 *                 yet and the newest row read (in flight, finished and waiting
 *                 for an earlier row, or resumed)
 *   chars         characters of finished output lines waiting for an earlier row
 * When a bound is reached, no further row starts until rows finish (for
 * `rows` and `chars`: until the oldest unfinished row finishes, which its
 * timeouts bound).
 */
export interface RunWindow {
  inFlight: number
  evidenceChars: number
  rows: number
  chars: number
}

export function runWindow(maxParallel: number): RunWindow {
  return {inFlight: Math.max(16 * maxParallel, 2048), evidenceChars: 64 * 1024 * 1024, rows: Math.max(4096, 16 * maxParallel), chars: 64 * 1024 * 1024}
}

/**
 * Pass 2 of a run: rows are read, prepared and admitted in input order, one
 * chunk of the file at a time. max_parallel_requests bounds the remote
 * lifecycles (initialize, execute, cleanup); a row leaves its slot after
 * cleanup and then writes its evidence, so evidence writes overlap the next
 * rows' calls. The run window bounds what waits in memory. Kept apart from
 * runCall so that the per-row loop is a small function of its own.
 */
export class CallPass {
  inFlight = 0
  started = 0
  index = 0
  unexpected: unknown = undefined
  private wake: (() => void) | undefined = undefined

  constructor(
    private readonly ctx: RowCallContext,
    private readonly cancel: AbortController,
    private readonly output: OrderedOutput,
    private readonly previous: RecordedRows,
    private readonly window: RunWindow,
    private readonly handle: (index: number, line: number, raw: string, outcome: RowOutcome) => void,
  ) {}

  /** Resume the loop when it waits (a slot freed, a row finished, the queue deadline, the interruption). */
  readonly wakeUp = (): void => {
    const w = this.wake
    this.wake = undefined
    w?.()
  }

  private nextEvent(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.wake = resolve
    })
  }

  private get stopped(): boolean {
    return this.cancel.signal.aborted || this.unexpected !== undefined
  }

  /** Read and start every row; resolves once no row is in flight. complete: the whole file was read. */
  async run(input: string): Promise<{complete: boolean; sha256?: string}> {
    let reader: LineReader | undefined
    let complete = false
    let sha256: string | undefined
    try {
      reader = await LineReader.open(input, {hash: true}).catch((error) => {
        throw inputUnreadable(input, error)
      })
      for (let lines = await reader.nextTexts(); lines; lines = await reader.nextTexts()) {
        if (!(await this.startLines(lines, reader.firstLine, input))) break
      }
      if (!this.stopped) {
        complete = true
        sha256 = reader.digest()
      }
    } catch (error) {
      this.unexpected ??= error
      this.cancel.abort('fatal')
    } finally {
      this.ctx.evidence.inputDone?.()
      await reader?.close()
      while (this.inFlight > 0) await this.nextEvent()
    }
    return {complete, sha256}
  }

  /** Start the rows of one chunk; false when the run stops. */
  private async startLines(lines: string[], first: number, input: string): Promise<boolean> {
    // Fields are read inside the loop, not once before it: code that runs once per chunk gets no
    // type feedback before V8 optimizes this loop, and V8 would recompile it at the next chunk.
    for (let n = 0; n < lines.length; n++) {
      const raw = lines[n].trim()
      if (raw === '') continue
      while (this.windowFull() && !this.stopped) await this.nextEvent()
      if (this.stopped) return false
      const i = this.index++
      if (this.previous.has(i)) {
        this.output.put(i, outputLine(raw, await this.previous.read(i)))
        continue
      }
      let row: Record<string, unknown>
      try {
        row = parseFast(raw) as Record<string, unknown>
      } catch {
        throw inputChanged(input)
      }
      const prepared = prepareRow(this.ctx, {index: i, line: first + n, row})
      let admission: Admission | undefined
      if (prepared.planned.ok) {
        // admission in input order: the loop itself waits for a free slot, so no row queues a waiter
        admission = this.admission()
        while (admission === undefined) {
          await this.nextEvent()
          admission = this.admission()
        }
        // interrupted while waiting for a slot: this row and the rest are not started
        if (admission === 'cancelled') return false
      }
      this.started++
      this.inFlight++
      void this.runRow(prepared, admission, i, first + n, raw)
    }
    return true
  }

  private windowFull(): boolean {
    const {window, output} = this
    return (
      this.inFlight >= window.inFlight ||
      (this.ctx.evidence.pendingChars ?? 0) >= window.evidenceChars ||
      this.index - output.next >= window.rows ||
      output.pendingBytes >= window.chars
    )
  }

  private admission(): Admission | undefined {
    const {queueDeadline} = this.ctx
    if (queueDeadline !== undefined && Date.now() >= queueDeadline) return 'timeout'
    if (this.cancel.signal.aborted) return 'cancelled'
    if (this.ctx.limiter.tryAcquire()) return 'admitted'
    return undefined
  }

  private async runRow(prepared: PreparedRow, admission: Admission | undefined, i: number, line: number, raw: string): Promise<void> {
    try {
      this.handle(i, line, raw, await runPreparedRow(this.ctx, prepared, admission))
    } catch (error) {
      this.unexpected ??= error
      this.cancel.abort('fatal')
    } finally {
      this.inFlight--
      this.wakeUp()
    }
  }
}

export function inputChanged(file: string): GymError {
  return new GymError(`the rows file ${file} changed while the run was reading it`, {
    code: 'E_CALL_INPUT_CHANGED',
    exit: ExitCode.failure,
    hint: 'finished rows are recorded in the evidence journal; restore the rows file and re-run with --resume, or start afresh',
    location: {file},
  })
}
