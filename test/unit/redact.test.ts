import {describe, expect, it} from 'vitest'

import {Redactor} from '../../src/redact.js'

describe('Redactor', () => {
  const env = {
    HF_TOKEN: 'hf_abcdefghijklmnop',
    RAY_JOB_HEADERS: JSON.stringify({'x-ray-authorization': 'Bearer ray-token-0123456789', cookie: 'sid=cookie-value-xyz\r\nEvil: 1'}),
    OPENAI_API_KEY: 'sk-test-1234567890',
    PATH: '/usr/bin:/bin',
    SHORT_TOKEN: 'abc',
    AUTH_MODE: 'default',
  }
  const r = new Redactor(env)

  it('replaces secret-bearing environment values, header values and their line-broken parts', () => {
    expect(r.text('token hf_abcdefghijklmnop used')).toBe('token <redacted> used')
    expect(r.text('Authorization: Bearer ray-token-0123456789')).toBe('Authorization: <redacted>')
    expect(r.text('the token ray-token-0123456789 alone')).toBe('the token <redacted> alone')
    expect(r.text('bad header value "sid=cookie-value-xyz"')).toBe('bad header value "<redacted>"')
    expect(r.text('key=sk-test-1234567890.')).toBe('key=<redacted>.')
    // Not secrets: ordinary variables, and values too short to tell from words.
    expect(r.text('/usr/bin:/bin abc')).toBe('/usr/bin:/bin abc')
    expect(r.text('the default port')).toBe('the default port')
  })

  it('replaces the user:password part of any URL', () => {
    expect(r.text('dashboard http://ops:pw@10.0.0.1:8265 refused')).toBe('dashboard http://<redacted>@10.0.0.1:8265 refused')
    expect(r.text('see https://example.org/a@b')).toBe('see https://example.org/a@b')
  })

  it('redacts every string of a JSON document, keys included, and keeps other values', () => {
    const doc = {error: {message: 'header hf_abcdefghijklmnop', details: {url: 'http://u:p@h:1', status: 401, ok: false}}, ['sk-test-1234567890']: [1, 'x']}
    expect(r.value(doc)).toEqual({error: {message: 'header <redacted>', details: {url: 'http://<redacted>@h:1', status: 401, ok: false}}, '<redacted>': [1, 'x']})
  })

  it('finds a secret JSON-escaped inside a serialized document', () => {
    const withQuote = new Redactor({API_TOKEN: 'quote"inside-secret'})
    expect(withQuote.text(JSON.stringify({v: 'quote"inside-secret'}))).toBe('{"v":"<redacted>"}')
  })
})
