/**
 * Script output collapsed to a progress line: nothing streamed unless verbose, the last lines
 * kept for a failure report (partial lines and CRLF included), and no progress under --json.
 */
import {afterEach, describe, expect, it, vi} from 'vitest'

import {scriptOutputSink, stepLine} from '../../src/cli/progress.js'

function host(json = false) {
  const warned: string[] = []
  return {host: {jsonEnabled: () => json, warnLine: (m: string) => warned.push(m)}, warned}
}

describe('script output', () => {
  it('streams nothing by default and keeps the last 15 lines', () => {
    const streamed: string[] = []
    const {host: h, warned} = host()
    const sink = scriptOutputSink(h, 'prepare script', false, (_w, text) => streamed.push(text))
    for (let i = 1; i <= 40; i++) sink.write(i % 2 ? 'stdout' : 'stderr', `Step ${i}/40 : RUN something\r\n`)
    sink.write('stdout', 'half a line')
    sink.stop()
    expect(streamed).toEqual([])
    expect(warned).toEqual([]) // no terminal, and well under ten seconds: no progress line
    expect(sink.tail()).toEqual([...Array.from({length: 14}, (_, k) => `Step ${k + 27}/40 : RUN something`), 'half a line'])
  })

  it('streams everything, unchanged, when verbose', () => {
    const streamed: Array<[string, string]> = []
    const sink = scriptOutputSink(host().host, 'start script', true, (w, text) => streamed.push([w, text]))
    sink.write('stdout', 'a\nb')
    sink.write('stderr', '\nc\n')
    expect(streamed).toEqual([
      ['stdout', 'a\nb'],
      ['stderr', '\nc\n'],
    ])
    expect(sink.tail()).toEqual(['a', 'b', 'c'])
  })
})

describe('the step under way', () => {
  const isTTY = process.stderr.isTTY
  afterEach(() => {
    process.stderr.isTTY = isTTY
    vi.restoreAllMocks()
    vi.useRealTimers()
  })

  function captureStderr(tty: boolean): string[] {
    process.stderr.isTTY = tty
    const written: string[] = []
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk))
      return true
    })
    return written
  }

  /** Start a step line, let a second and a quarter pass, stop it. */
  function spin(line: ReturnType<typeof stepLine>, text: string): void {
    line.start(text)
    vi.advanceTimersByTime(1250)
    line.stop()
  }

  it('spins beside what is being done on a terminal, with the seconds so far, and clears the line when it ends', () => {
    vi.useFakeTimers()
    const written = captureStderr(true)
    const line = stepLine(host().host)
    spin(line, 'climbing the static and data rungs')
    line.stop()
    const frames = written.slice(0, -1)
    expect(frames.length).toBeGreaterThanOrEqual(12)
    expect(new Set(frames.map((f) => f.slice(5, 6))).size).toBeGreaterThan(5) // the spinner turns
    expect(frames.at(-1)?.startsWith('\r\x1b[2K')).toBe(true)
    expect(frames.at(-1)?.slice(6)).toBe(' climbing the static and data rungs (1 s)')
    expect(written.at(-1)).toBe('\r\x1b[2K')
    vi.advanceTimersByTime(1000)
    expect(written.at(-1)).toBe('\r\x1b[2K')
  })

  it('draws nothing without a terminal or under --json', () => {
    vi.useFakeTimers()
    const written = captureStderr(false)
    spin(stepLine(host().host), 'asking the Ray dashboard')
    process.stderr.isTTY = true
    spin(stepLine(host(true).host), 'asking the Ray dashboard')
    expect(written).toEqual([])
  })
})
