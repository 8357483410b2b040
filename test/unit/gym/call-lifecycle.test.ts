import {describe, expect, it} from 'vitest'

import {parseCallConfig} from '../../../src/gym/call/config.js'
import {parseJson} from '../../../src/json/index.js'
import {callRow, type RowCallContext} from '../../../src/gym/call/lifecycle/index.js'
import {Limiter} from '../../../src/gym/call/limiter.js'
import {type HttpRequest, type HttpResponse, type HttpTransport, TransportError} from '../../../src/runtime/call-transport.js'

/** A transport without a network: answers from a function and records what was sent. */
function fakeTransport(answer: (req: HttpRequest) => HttpResponse | Error): HttpTransport & {sent: HttpRequest[]; clients: number; closed: number} {
  const t = {
    sent: [] as HttpRequest[],
    clients: 0,
    closed: 0,
    openRowClient() {
      t.clients++
      return {
        async request(req: HttpRequest) {
          t.sent.push(req)
          const out = answer(req)
          if (out instanceof Error) throw out
          return out
        },
        close() {
          t.closed++
        },
      }
    },
  }
  return t
}

const yaml = `name: execution
endpoint: http://resource.test
route: /execute
row_id_column: id
request_columns: {sql: sql}
bearer_token_env: RES
session:
  initialize:
    - {endpoint: "http://agent.test", route: /seed, response_headers: {X-Session-Token: token}}
  cleanup:
    - {endpoint: "http://agent.test", route: /cleanup}
`

function context(transport: HttpTransport): RowCallContext {
  return {
    config: parseCallConfig(yaml, 'resource'),
    transport,
    bearerTokens: new Map([['http://resource.test', 'resource-bearer-1']]),
    limiter: new Limiter(1),
    cancel: new AbortController().signal,
    evidence: {writeAttempt: async (id) => `attempts/x.jsonl:${id}`},
  }
}

const json = (body: unknown, headers: Record<string, string | string[]> = {}): HttpResponse => ({status: 200, headers, body: JSON.stringify(body)})

describe('row lifecycle (fake transport)', () => {
  it('carries cookies and the mapped token across services, sends the bearer token only to its endpoint, injects no attempt id', async () => {
    const transport = fakeTransport((req) => {
      if (req.url.endsWith('/seed')) return json({token: 'tok-123456'}, {'set-cookie': ['sid=abc123; Path=/; HttpOnly']})
      if (req.url.endsWith('/execute')) return json({rows: [1]})
      return json({released: true})
    })
    const outcome = await callRow(context(transport), {index: 0, line: 1, row: parseJson('{"id": 1, "sql": "select 1"}') as any})
    expect(outcome.state).toBe('finished')
    expect(transport.sent.map((r) => r.url)).toEqual(['http://agent.test/seed', 'http://resource.test/execute', 'http://agent.test/cleanup'])
    const [seed, execute, cleanup] = transport.sent
    expect(seed.headers.authorization).toBeUndefined()
    expect(execute.headers.authorization).toBe('Bearer resource-bearer-1')
    expect(cleanup.headers.authorization).toBeUndefined()
    for (const r of [execute, cleanup]) {
      expect(r.headers.cookie).toBe('sid=abc123')
      expect(r.headers['X-Session-Token']).toBe('tok-123456')
    }
    expect(execute.body).toBe('{"sql":"select 1"}')
    expect(JSON.stringify(transport.sent)).not.toContain(outcome.attemptId)
    // one client for the whole row, closed at its end
    expect(transport.clients).toBe(1)
    expect(transport.closed).toBe(1)
  })

  it('does not retry a request that failed in transport, and still cleans up', async () => {
    const transport = fakeTransport((req) => {
      if (req.url.endsWith('/seed')) return json({token: 'tok-123456'})
      if (req.url.endsWith('/execute')) return new TransportError('connection reset by the service', 'ECONNRESET')
      return json({})
    })
    const outcome = await callRow(context(transport), {index: 0, line: 1, row: parseJson('{"id": 1, "sql": "select 1"}') as any})
    expect(outcome.failureKind).toBe('transport_failed')
    expect(transport.sent.filter((r) => r.url.endsWith('/execute'))).toHaveLength(1)
    expect(transport.sent.at(-1)!.url).toBe('http://agent.test/cleanup')
  })
})
