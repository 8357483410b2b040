/**
 * Progress of long work on stderr: on a terminal one line rewritten in place a few times a
 * second, without one a plain line every ten seconds (so CI logs show the run is alive), and
 * nothing under --json. stop() leaves the last figures on a terminal and clears nothing else.
 */
import {Writable} from 'node:stream'

import type {ReadProgress} from '../json/index.js'
import {LineTail} from '../runtime/line-tail.js'

export interface ProgressHost {
  jsonEnabled(): boolean
  warnLine(message: string): void
}

export interface ProgressLine<P> {
  update(progress: P): void
  stop(): void
}

const TTY_EVERY_MS = 250
const PLAIN_EVERY_MS = 10_000

/** A progress line whose text is render(progress), throttled for a terminal or a log. */
export function progressLine<P>(host: ProgressHost, render: (progress: P) => string): ProgressLine<P> {
  if (host.jsonEnabled()) return {update: () => undefined, stop: () => undefined}
  const tty = Boolean(process.stderr.isTTY)
  const every = tty ? TTY_EVERY_MS : PLAIN_EVERY_MS
  let last = performance.now()
  let latest: P | undefined
  let printed = false
  let stopped = false
  return {
    update(progress) {
      latest = progress
      if (stopped) return
      const now = performance.now()
      if (now - last < every) return
      last = now
      printed = true
      if (tty) process.stderr.write(`\r\x1b[2K${render(progress)}`)
      else host.warnLine(render(progress))
    },
    stop() {
      if (stopped) return
      stopped = true
      if (tty && printed && latest !== undefined) process.stderr.write(`\r\x1b[2K${render(latest)}\n`)
    },
  }
}

function megabytes(bytes: number): string {
  return `${(bytes / (1 << 20)).toFixed(1)} MiB`
}

/** `label: 42% of rows.jsonl (120.0 of 285.3 MiB), 150000 lines, 48.2 MiB/s` for a command reading a JSONL file. */
export function readProgress(host: ProgressHost, label: string): ProgressLine<ReadProgress> {
  const started = performance.now()
  return progressLine<ReadProgress>(host, (p) => {
    const seconds = (performance.now() - started) / 1000
    const share = p.totalBytes > 0 ? `${Math.floor((100 * p.bytes) / p.totalBytes)}% of ` : ''
    const rate = seconds > 0 ? `, ${megabytes(p.bytes / seconds)}/s` : ''
    return `${label}: ${share}${p.file} (${megabytes(p.bytes)} of ${megabytes(p.totalBytes)}), ${p.lines} lines${rate}`
  })
}

export interface ScriptOutputSink {
  write(stream: 'stdout' | 'stderr', text: string): void
  /** The last lines written (redaction is the caller's), for a failure report. */
  tail(): string[]
  stop(): void
}

const TAIL_LINES = 15

/**
 * What a script prints (docker build included), collapsed to one progress line — `label: N lines
 * of output, last: …` — with the last lines kept for a failure report; `verbose` streams it all.
 */
export function scriptOutputSink(host: ProgressHost, label: string, verbose: boolean, stream: (which: 'stdout' | 'stderr', text: string) => void): ScriptOutputSink {
  // Both streams in the order they came: what scrolled past a person, not a per-stream record.
  const seen = new LineTail(TAIL_LINES * 4)
  let count = 0
  const progress = progressLine<string>(host, (last) => `${label}: ${count} lines of output, last: ${last.length > 120 ? `${last.slice(0, 119)}…` : last}`)
  return {
    write(which, text) {
      if (verbose) stream(which, text)
      for (const line of seen.write(text)) {
        if (line.trim() === '') continue
        count++
        if (!verbose) progress.update(line.trim())
      }
    },
    tail: () => seen.last(TAIL_LINES, {skipBlank: true}),
    stop: () => progress.stop(),
  }
}

/** A Writable feeding a sink, for steps that take output streams. */
export function sinkStream(sink: ScriptOutputSink, which: 'stdout' | 'stderr'): Writable {
  return new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      sink.write(which, chunk.toString())
      done()
    },
  })
}

export interface StepLine {
  /** Show `text` as the work now under way (replacing the previous one). */
  start(text: string): void
  /** Clear the line, before the step's result is printed. */
  stop(): void
}

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏']
const SPINNER_EVERY_MS = 100

/**
 * A spinner beside the step under way, on a terminal only: without one (CI, `| cat`) the
 * result lines that follow each step are the progress, and under --json nothing is drawn.
 */
export function stepLine(host: ProgressHost): StepLine {
  if (host.jsonEnabled() || !process.stderr.isTTY) return {start: () => undefined, stop: () => undefined}
  let timer: NodeJS.Timeout | undefined
  let frame = 0
  const clear = () => {
    if (timer) clearInterval(timer)
    timer = undefined
    process.stderr.write('\r\x1b[2K')
  }
  return {
    start(text) {
      clear()
      const started = performance.now()
      const draw = () => {
        const seconds = Math.floor((performance.now() - started) / 1000)
        process.stderr.write(`\r\x1b[2K${SPINNER[frame++ % SPINNER.length]} ${text}${seconds > 0 ? ` (${seconds} s)` : ''}`)
      }
      draw()
      timer = setInterval(draw, SPINNER_EVERY_MS)
      timer.unref()
    },
    stop: () => {
      if (timer) clear()
    },
  }
}
