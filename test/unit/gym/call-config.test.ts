import {mkdtemp, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {describe, expect, it} from 'vitest'

import {isGymError} from '../../../src/errors.js'
import {CALL_DEFAULTS, loadCallConfig, parseCallConfig, readBearerTokens} from '../../../src/gym/call/config.js'

const minimal = `name: execution
endpoint: http://127.0.0.1:8000/
route: /execute
request_columns:
  sql: candidate.sql
`

function problem(text: string, kind: 'resource' | 'harness' = 'resource') {
  try {
    parseCallConfig(text, kind, 'execution.yaml')
  } catch (error) {
    if (isGymError(error)) return error
    throw error
  }
  throw new Error('config was accepted')
}

describe('call config', () => {
  it('applies the documented defaults', () => {
    const config = parseCallConfig(minimal, 'resource', 'execution.yaml')
    expect(config).toMatchObject({
      kind: 'resource',
      name: 'execution',
      endpoint: 'http://127.0.0.1:8000',
      route: '/execute',
      max_parallel_requests: CALL_DEFAULTS.maxParallelRequests,
      timeout: CALL_DEFAULTS.timeoutSeconds,
      request_values: {},
      provenance_columns: [],
    })
    expect(config.queue_timeout).toBeUndefined()
    expect(config.row_id_column).toBeUndefined()
    const harness = parseCallConfig('name: answer\nevidence_column: harness_evidence\nendpoint: http://127.0.0.1:1\nrequest_columns: {input: question}\n', 'harness')
    expect(harness.route).toBe('/v1/responses')
  })

  it('names file, JSON pointer, line, expectation and hint for schema errors', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'gr-call-cfg-'))
    const file = path.join(dir, 'execution.yaml')
    await writeFile(file, `${minimal}timeout: -3\nsession:\n  initialize:\n    - route: seed\n`)
    const error = await loadCallConfig(file, 'resource').catch((e) => e)
    expect(isGymError(error)).toBe(true)
    expect(error.exit).toBe(2)
    expect(error.code).toBe('E_CALL_CONFIG_INVALID')
    expect(error.located).toContain(`${file}:6: invalid call resource config`)
    expect(error.message).toContain('/timeout (line 6): must be a number of seconds greater than 0')
    expect(error.message).toContain('/session/initialize/0/route (line 9): must be an HTTP path starting with "/"')
    expect(error.location).toMatchObject({file, line: 6, pointer: '/timeout'})
    expect(error.hint).toContain('seconds')
  })

  it('rejects unknown fields and fields of the other command', () => {
    expect(problem(`${minimal}evidence_column: ev\n`).message).toContain('/evidence_column (line 6): is not a known field here')
    expect(problem(`${minimal}evidence_column: ev\n`).hint).toContain('call harness')
    const harness = problem('name: a\nevidence_column: b\nendpoint: http://127.0.0.1:1\nrequest_columns: {input: q}\nresponse_protocol: gym-episode\n', 'harness')
    expect(harness.message).toContain('/response_protocol')
    expect(harness.hint).toContain('call resource')
    expect(problem('name: a\nendpoint: http://127.0.0.1:1\nrequest_columns: {input: q}\n', 'harness').message).toContain('/evidence_column')
  })

  it('checks dot paths, URLs and env names', () => {
    expect(problem(minimal.replace('candidate.sql', 'candidate..sql')).message).toContain('/request_columns/sql (line 5): must be a dot path')
    expect(problem(minimal.replace('http://127.0.0.1:8000/', 'ftp://x')).message).toContain('/endpoint (line 2): must be an http:// or https:// URL')
    expect(problem(minimal.replace('http://127.0.0.1:8000/', 'http://user:pw@127.0.0.1/')).message).toContain('/endpoint')
    expect(problem(`${minimal}bearer_token_env: "sk-live-123 token"\n`).message).toContain('must be an environment variable name')
  })

  it('requires cleanup for a stateful initialize', () => {
    const error = problem(`${minimal}session:\n  initialize: [{route: /seed_session}]\n`)
    expect(error.message).toContain('/session/cleanup')
    expect(error.message).toContain('stateful initialization requires cleanup')
  })

  it('keeps request_column and request_columns apart and forbids a field in both columns and values', () => {
    expect(problem(`${minimal}request_column: task\n`).message).toContain('cannot be combined with request_column')
    expect(problem(`${minimal}request_values: {sql: "select 1"}\n`).message).toContain('request fields cannot have both a column and a value: sql')
    expect(problem('name: a\nendpoint: http://127.0.0.1:1\nroute: /x\n').message).toContain('one of request_columns, request_column or request_values is required')
  })

  it('refuses session headers that would carry credentials or cookies', () => {
    const error = problem(`${minimal}session:\n  initialize: [{route: /seed, response_headers: {Cookie: token}}]\n  cleanup: [{route: /cleanup}]\n`)
    expect(error.message).toContain('/session/initialize/0/response_headers/Cookie')
  })

  it('keeps big integers in request_values lossless', () => {
    const config = parseCallConfig(`${minimal}request_values: {seed: 12345678901234567890}\n`, 'resource')
    expect(String(config.request_values.seed)).toBe('12345678901234567890')
  })

  it('reports invalid YAML with its line', () => {
    const error = problem('name: a\nname: b\n')
    expect(error.message).toContain('not valid YAML')
    expect(error.location?.line).toBe(2)
  })

  it('reads bearer tokens at start-up and binds each to its own endpoint', () => {
    const config = parseCallConfig(
      `${minimal}bearer_token_env: RES_TOKEN\nsession:\n  initialize: [{endpoint: "http://127.0.0.1:9000", route: /seed, bearer_token_env: AGENT_TOKEN}, {route: /seed2}]\n  cleanup: [{route: /cleanup}]\n`,
      'resource',
    )
    const tokens = readBearerTokens(config, {RES_TOKEN: 'res-secret', AGENT_TOKEN: 'agent-secret'})
    expect([...tokens]).toEqual([
      ['http://127.0.0.1:8000', 'res-secret'],
      ['http://127.0.0.1:9000', 'agent-secret'],
    ])
    const missing = (() => {
      try {
        readBearerTokens(config, {RES_TOKEN: 'res-secret'})
      } catch (error) {
        return error as any
      }
    })()
    expect(missing.code).toBe('E_CALL_TOKEN_MISSING')
    expect(missing.exit).toBe(2)
    expect(missing.message).toContain('AGENT_TOKEN')
    expect(missing.message).not.toContain('res-secret')
  })
})
