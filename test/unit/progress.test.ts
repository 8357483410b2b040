/**
 * Script output collapsed to a progress line: nothing streamed unless verbose, the last lines
 * kept for a failure report (partial lines and CRLF included), and no progress under --json.
 */
import {describe, expect, it} from 'vitest'

import {scriptOutputSink} from '../../src/cli/progress.js'

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
