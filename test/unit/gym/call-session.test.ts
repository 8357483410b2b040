import {describe, expect, it} from 'vitest'

import {RowSession} from '../../../src/gym/call/session.js'
import type {RowHttpClient} from '../../../src/runtime/call-transport.js'

const client: RowHttpClient = {
  request: async () => ({status: 200, headers: {}, body: '{}'}),
  close() {},
}

const session = (secrets: string[] = []) => new RowSession(client, new Map(), secrets)
const evidence = (s: RowSession, headers: Record<string, string | string[] | undefined>) => JSON.parse(s.redactedHeadersJson(headers))

describe('response headers as the evidence keeps them', () => {
  it('writes each response its own values, whatever earlier rows received', () => {
    const a = evidence(session(), {'content-length': '52', date: 'Fri, 04 Dec 2026 23:19:41 GMT', connection: 'keep-alive'})
    const b = evidence(session(), {'content-length': '53', date: 'Fri, 04 Dec 2026 23:19:42 GMT', connection: 'keep-alive'})
    const c = evidence(session(), {'content-length': '52', connection: 'close'})
    expect(a).toEqual({'content-length': '52', date: 'Fri, 04 Dec 2026 23:19:41 GMT', connection: 'keep-alive'})
    expect(b).toEqual({'content-length': '53', date: 'Fri, 04 Dec 2026 23:19:42 GMT', connection: 'keep-alive'})
    expect(c).toEqual({'content-length': '52', connection: 'close'})
  })

  it('redacts a session header name only in the row that holds that session, in any case', () => {
    const before = session()
    expect(evidence(before, {'x-session-token': 'visible-1'})).toEqual({'x-session-token': 'visible-1'})
    const holder = session()
    holder.setSessionHeader('X-Session-Token', 'tok-123456')
    expect(evidence(holder, {'x-session-token': 'visible-1', 'X-Session-Token': 'other'})).toEqual({'x-session-token': '[redacted]', 'X-Session-Token': '[redacted]'})
    expect(evidence(session(), {'x-session-token': 'visible-1'})).toEqual({'x-session-token': 'visible-1'})
  })

  it('always redacts credentials and cookies, whatever their case', () => {
    const headers = {Authorization: 'Bearer abc', 'set-cookie': ['sid=1', 'x=2'], Cookie: 'sid=1', 'Proxy-Authorization': 'Basic x', server: 'uvicorn'}
    for (let i = 0; i < 2; i++) {
      expect(evidence(session(), headers)).toEqual({Authorization: '[redacted]', 'set-cookie': '[redacted]', Cookie: '[redacted]', 'Proxy-Authorization': '[redacted]', server: 'uvicorn'})
    }
  })

  it('scrubs a secret from a value that an earlier row without secrets wrote unchanged', () => {
    const value = 'trace=secret-token-42; region=eu'
    expect(evidence(session(), {'x-trace': value})).toEqual({'x-trace': value})
    expect(evidence(session(['secret-token-42']), {'x-trace': value})).toEqual({'x-trace': 'trace=[redacted]; region=eu'})
    expect(evidence(session(), {'x-trace': value})).toEqual({'x-trace': value})
  })

  it('gives the same headers as redactHeaders for long values, lists, characters to escape and many names', () => {
    const headers: Record<string, string | string[] | undefined> = {
      long: 'v'.repeat(5000),
      list: ['a', 'b "quoted"'],
      escaped: 'tab\there \\ "q" \u2028',
      skipped: undefined,
    }
    for (let i = 0; i < 600; i++) headers[`x-name-${i}`] = String(i)
    for (const s of [session(), session(['b "quoted"'])]) {
      expect(evidence(s, headers)).toEqual(s.redactHeaders(headers))
      expect(evidence(s, {...headers, 'x-name-599': 'changed'})['x-name-599']).toBe('changed')
    }
  })
})
